package wire

// Pool is one warm pool, as GET /v1/pools lists them: its shape, its
// configuration and its counts since the daemon started.
type Pool struct {
	// Template and Backend are the pool's shape (see docs/api.md for the
	// creates that claim from it).
	Template string `json:"template"`
	Backend  string `json:"backend"`
	// Min is how many it keeps ready; Max how many it may keep when
	// creates find it empty; Target how many it keeps now.
	Min    int `json:"min"`
	Max    int `json:"max"`
	Target int `json:"target"`
	// Ready are the sandboxes waiting to be claimed; Filling the one being
	// made (0 or 1).
	Ready   int `json:"ready"`
	Filling int `json:"filling"`
	// Created, Claimed, Misses (creates of its shape that found none
	// ready), Failed (fills that failed) and Discarded (ready ones that
	// stopped on their own, beyond a lowered target, or at shutdown).
	Created   int64 `json:"created"`
	Claimed   int64 `json:"claimed"`
	Misses    int64 `json:"misses"`
	Failed    int64 `json:"failed"`
	Discarded int64 `json:"discarded"`
	// LastError is why the last fill failed ("": the last one worked).
	LastError string `json:"last_error,omitempty"`
}

// PoolList is the answer of GET /v1/pools.
type PoolList struct {
	Pools []Pool `json:"pools"`
}
