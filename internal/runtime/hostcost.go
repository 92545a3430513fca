package runtime

// HostCost is the most one sandbox may take of the host's global tables,
// which every sandbox and the host itself draw on.
type HostCost struct {
	// Pids: host tasks (processes and threads), against kernel.pid_max.
	Pids int64
	// Ptys: host pseudo-terminals, against kernel.pty.max less
	// kernel.pty.reserve (the pool of every non-initial devpts).
	Ptys int64
}

// HostCoster is a Backend that can say what a sandbox with the limits l
// (zero fields: the backend's defaults) may take of the host's tables at
// most, as the backend enforces it: a daemon reserves that much before
// Create, so that its sandboxes together cannot exhaust a table. Invalid
// limits are the error Create would return.
type HostCoster interface {
	HostCost(l Limits) (HostCost, error)
}
