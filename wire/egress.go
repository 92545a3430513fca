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
