package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
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
// Shutdown; and it asks it for a sandbox's usage (Get) and presets.

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
	// (its policy's egress, its runtime layer, its brokered secrets); a
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

// applyEgress gives the network module a live sandbox's policy.
func (m *Manager) applyEgress(ctx context.Context, id string) error {
	if m.egressSvc == nil {
		return nil
	}
	return m.egressSvc.Apply(ctx, id)
}

// egressUsage is a running sandbox's egress usage (nil: none known).
func (m *Manager) egressUsage(id string) *egress.Usage {
	if m.egressSvc == nil {
		return nil
	}
	return m.egressSvc.Usage(id)
}

// ExecOf attributes a connection or DNS query of sandbox id from process
// pid (<= 0: unknown) to its task and, when pid is a running exec's
// process, that exec. A command's first connection can arrive before
// Exec has noted the command: while one of the sandbox's execs is
// starting it waits (at most sourceWait), so the record names its exec.
func (c *Core) ExecOf(id string, pid int) (taskID, execID string) {
	m := c.m
	deadline := time.Now().Add(sourceWait)
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		ls := m.live[id]
		if ls != nil {
			taskID = ls.taskID
		}
		if pid <= 0 {
			return taskID, ""
		}
		for execID, r := range m.running {
			if r.sandboxID == id && r.p.PID() == pid {
				return taskID, execID
			}
		}
		if ls == nil || ls.starting == 0 || !time.Now().Before(deadline) {
			return taskID, ""
		}
		m.mu.Unlock()
		time.Sleep(time.Millisecond)
		m.mu.Lock()
	}
}

// sourceWait bounds how long a connection waits for its command's exec
// to be noted (Core.ExecOf).
const sourceWait = 5 * time.Second

// RecordAs appends e as the actor it names (none is taken from ctx),
// into the audit log's reserve if essential (what must be recorded even
// on a full disk). Without an audit log it records nothing and returns
// nil; an error means e is not recorded.
func (c *Core) RecordAs(ctx context.Context, e audit.Entry, essential bool) error {
	if c.m.cfg.Audit == nil {
		return nil
	}
	return c.m.recordAs(ctx, e, essential)
}

// RecordAsync appends e without waiting (best effort: a failure is
// logged), for events that must not hold up their caller.
func (c *Core) RecordAsync(ctx context.Context, e audit.Entry) { c.m.recordAsync(ctx, e) }

// NoteEgress tells the running exec execID's kept EgressNoters (the
// review module's package evidence) that it reached host (an allowed
// connection or request).
func (c *Core) NoteEgress(execID, host string) { c.m.noteEgress(execID, host) }

// BrokeredSecrets are the secrets granted to sandbox id in broker mode,
// with their values, for its egress policy (the proxy puts them in
// requests to their hosts; the sandbox never sees them). A secret whose
// record is gone is left out; one that cannot be opened is an error.
func (c *Core) BrokeredSecrets(ctx context.Context, id string) ([]egress.Secret, error) {
	p, err := c.m.brokeredSecrets(ctx, id, egress.Policy{})
	if err != nil {
		return nil, err
	}
	return p.Secrets, nil
}

// attachNetwork takes mod's egress service if it is a NetworkModule that
// runs one: at most one module may.
func (m *Manager) attachNetwork(name string, mod Module) error {
	nm, ok := mod.(NetworkModule)
	if !ok {
		return nil
	}
	n := nm.Network()
	if n == nil {
		return nil
	}
	if m.egressSvc != nil {
		return fmt.Errorf("module %s: a second network module (sandboxes have one network): %w", name, errdefs.ErrInvalid)
	}
	m.egressSvc = n
	return nil
}
