package hook

import (
	"context"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// The core's side of the sandbox network (the module is
// internal/sandboxnet). A sandbox's network namespace has only loopback;
// with a network module that runs an egress service, the backend hands
// every connection and DNS query of the sandbox to it. The core calls
// the module at four points: before the backend creates a sandbox (its
// network and proxy env), once the sandbox is live (its policy applied,
// before the CreateHooks), as soon as it leaves the live set (before its
// task diff and StopHooks: nothing goes out of a stopping sandbox), and at
// Shutdown; and it asks it for a sandbox's usage (Manager.Get) and presets.

// NetworkModule is a module that may give sandboxes their network. At
// most one module's Network may be non-nil (attach refuses a second).
type NetworkModule interface {
	// Network is its egress service as the core calls it; nil when it
	// runs none: sandboxes then have no network at all and brokered
	// secrets are refused.
	Network() Network
}

// Network is a network module's egress service, as the core calls it.
// Every method may be called concurrently.
type Network interface {
	// SandboxNetwork is the network of the sandbox id, before the
	// backend creates it: what the backend hands connections to, the env
	// that points its programs at the proxy (before the caller's), and
	// its cap on open proxy connections (0: the runtime's default).
	SandboxNetwork(id string) (SandboxNetwork, error)
	// Apply gives the egress service the current policy of sandbox id
	// (its policy's egress, its runtime layer, its network layer, its
	// brokered secrets); a
	// sandbox that is not live is removed. An error at create stops the
	// sandbox as failed.
	Apply(ctx context.Context, id string) error
	// RemoveSandbox forgets a sandbox that left the live set: its
	// connections are closed and its last counts recorded.
	RemoveSandbox(id string)
	// Usage is what a live sandbox's egress put in the audit record
	// against its budget; nil for one it does not know.
	Usage(id string) *egress.Usage
	// FlushRefusals records the refusal counts of a window still open.
	FlushRefusals(ctx context.Context, id string)
	// Presets are the registry hosts the machine is configured with.
	Presets() egress.Presets
	// Close records what is still open, at Shutdown.
	Close(ctx context.Context)
}

// SandboxNetwork is what a new sandbox's spec gets of its network.
type SandboxNetwork struct {
	Network       runtime.Network
	Env           []string
	Binds         []runtime.Bind // read-only, after the template's
	MaxProxyConns int
}
