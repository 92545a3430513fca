package wire

// EgressStatus is the answer of GET /v1/egress and POST /v1/egress/cut.
type EgressStatus struct {
	// Enabled: the daemon runs its egress proxy (without it sandboxes have
	// no network at all).
	Enabled bool `json:"enabled"`
	// Cut: the kill switch is on, every sandbox's egress is refused.
	Cut bool `json:"cut"`
}

// EgressCutRequest is the body of POST /v1/egress/cut.
type EgressCutRequest struct {
	// On is required: true cuts every sandbox's egress, false restores it.
	On *bool `json:"on"`
}

// EgressTestRequest is the body of POST /v1/sandboxes/{id}/egress/test.
type EgressTestRequest struct {
	// Destination is a URL (http://, https://) or host:port (a tunnel).
	Destination string `json:"destination"`
}

// EgressTest is the answer of POST /v1/sandboxes/{id}/egress/test: what
// the sandbox's proxy would decide for the destination, found without
// connecting and without a record.
type EgressTest struct {
	// Target is the destination as the proxy reads it, host:port.
	Target string `json:"target"`
	// Mode is how the sandbox would reach it: CONNECT (a tunnel) or HTTP
	// (a plain request).
	Mode string `json:"mode"`
	// Decision is allow or deny.
	Decision string `json:"decision"`
	// Rule is the deciding rule's id, or a built-in one (default-deny,
	// port, resolve, guard-...).
	Rule string `json:"rule"`
	// Reason says why, as the proxy's refusal would.
	Reason string `json:"reason,omitempty"`
	// Addrs are the addresses the proxy would dial, or the one it refused.
	Addrs []string `json:"addrs,omitempty"`
	// Brokered are the ids of the secrets the proxy would broker to the
	// host (never their values).
	Brokered []string `json:"brokered,omitempty"`
}
