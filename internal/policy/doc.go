// Package policy decides what an agent's command may do before it reaches a
// sandbox. internal/classify analyses the command line (what each simple
// command in it would do); Policy.Decide turns those classes, the layers'
// rules and the write scope into allow, ask or deny, explaining which
// rules matched and why. A layer's egress section is a netpolicy.Policy
// (the rule model the egress proxy enforces, without the proxy).
//
// The package is pure: no I/O, no clock (callers pass the time in), no
// globals that change. Any package may import it; it imports nothing of
// airlock's but classify, netpolicy and errdefs (internal/archtest checks
// that nothing it reaches does I/O).
package policy
