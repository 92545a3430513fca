// Package wire holds the JSON bodies of airlock's HTTP API (docs/api.md):
// every request and answer, the exec stream's events, and the error
// envelope with its codes, spelled once for the daemon (internal/api) and
// the Go SDK (sdk), which are both built on it. It imports nothing of
// airlock's, so a client can use it alone.
//
// Times are RFC 3339; a time.Duration field is nanoseconds; counts of
// seconds or milliseconds say so in their names. A few bodies are owned
// by the policy and stay raw JSON here (json.RawMessage): an effective
// policy, a command's analysis, and egress policies (docs/policy.md).
//
// docs/api.md's "Wire types" section is made from this package's types
// and comments (go test ./wire -update writes it; the test fails while
// the doc and the types disagree).
package wire
