package wire

// Pool is one warm pool, as GET /v1/pools lists them: its shape, its
// configuration and its counts since the daemon started.
type Pool struct {
	// Template is the template of the pool's sandboxes (see docs/api.md
	// for the creates that claim from it).
	Template string `json:"template"`
	// Backend is their backend ("native", "gvisor").
	Backend string `json:"backend"`
	// Min is how many it keeps ready.
	Min int `json:"min"`
	// Max is how many it may keep ready once creates found it empty.
	Max int `json:"max"`
	// Target is how many it keeps ready now (Min, raised by misses).
	Target int `json:"target"`
	// Ready are the sandboxes waiting to be claimed.
	Ready int `json:"ready"`
	// Filling is 1 while one is being made.
	Filling int `json:"filling"`
	// Created is how many it made.
	Created int64 `json:"created"`
	// Claimed is how many creates took one.
	Claimed int64 `json:"claimed"`
	// Misses is how many creates of its shape found none ready.
	Misses int64 `json:"misses"`
	// Failed is how many fills failed (a cap reached, a backend error).
	Failed int64 `json:"failed"`
	// Discarded is how many ready ones were destroyed unclaimed: stopped
	// on their own, beyond a lowered target, or at shutdown.
	Discarded int64 `json:"discarded"`
	// LastError is why the last fill failed ("": the last one worked).
	LastError string `json:"last_error,omitempty"`
}

// PoolList is the answer of GET /v1/pools.
type PoolList struct {
	// Pools are the daemon's warm pools, by template then backend.
	Pools []Pool `json:"pools"`
}
