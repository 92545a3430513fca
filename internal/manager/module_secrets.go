package manager

import (
	"context"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/egress"
)

// The surface a secrets module (internal/secrets) attaches through: the
// exec pipeline's "secrets" stage, the policy's granted variables, the
// egress broker's values, and the end of a task. Each is an optional
// ability found by type assertion, called in module order like the hooks
// of module.go.

// SecretSource is a module that gives a sandbox's commands secrets.
type SecretSource interface {
	// SecretEnv is what a command of sb gets besides the caller's env
	// (execPipeline's "secrets" stage): K=V entries, whose values the
	// source has already taught the redactor (nothing learns them here),
	// and one record per secret given, for exec.start's "secrets"
	// payload. The names are not on the exec's env_names. An error ends
	// the exec before it is recorded.
	SecretEnv(ctx context.Context, sb SandboxRef) (env []string, uses []map[string]any, err error)
	// GrantedVars names the variables SecretEnv gives sb's commands now:
	// the policy does not count reading them as secret access.
	GrantedVars(ctx context.Context, sandboxID string) []string
}

// BrokerSource is a module whose secrets the egress proxy puts into
// requests (the sandbox holds only placeholders).
type BrokerSource interface {
	// BrokeredSecrets are a live sandbox's brokered secrets, values
	// included, for the policy the core gives the egress service. An
	// error: that policy is not applied.
	BrokeredSecrets(ctx context.Context, sandboxID string) ([]egress.Secret, error)
}

// TaskEndHook is a module told when a task ends.
type TaskEndHook interface {
	// OnTaskEnd runs while a task is finished, after its results are
	// written and before it is recorded finished (its sandbox may be
	// kept). An error leaves the task open, to be finished again: the
	// hook must be safe to run twice.
	OnTaskEnd(ctx context.Context, sb SandboxRef) error
}

// Now is the core's clock (Config.Now), in UTC.
func (c *Core) Now() time.Time { return c.m.now() }

// Actor is who makes the requests of ctx (WithActor), "unknown" if unnamed.
func (c *Core) Actor(ctx context.Context) string { return sandbox.ActorOf(ctx) }

// HasEgress says whether the daemon runs the egress service (without it
// sandboxes have no network, and nothing can broker a secret).
func (c *Core) HasEgress() bool { return c.m.egressSvc != nil }

// ApplyEgress gives the egress service a sandbox's policy as it is now
// (BrokerSources asked again); a sandbox that is not live is removed
// from it. nil without the egress service.
func (c *Core) ApplyEgress(ctx context.Context, id string) error { return c.m.applyEgress(ctx, id) }

// ReapplyEgress is ApplyEgress of one sandbox, or of every live one
// (""), with errors logged, not returned.
func (c *Core) ReapplyEgress(ctx context.Context, id string) { c.m.reapplyEgress(ctx, id) }

func (m *Manager) reapplyEgress(ctx context.Context, id string) {
	if m.egressSvc == nil {
		return
	}
	ids := []string{id}
	if id == "" {
		m.mu.Lock()
		ids = ids[:0]
		for sid := range m.live {
			ids = append(ids, sid)
		}
		m.mu.Unlock()
	}
	for _, sid := range ids {
		if err := m.applyEgress(ctx, sid); err != nil {
			m.cfg.Logf("egress policy of %s: %v", sid, err)
		}
	}
}

// TaskEnded runs the TaskEndHooks, in module order, for sb's task; the
// first error stops it and is returned (the task stays open).
func (c *Core) TaskEnded(ctx context.Context, sb SandboxRef) error { return c.m.taskEnded(ctx, sb) }

func (m *Manager) taskEnded(ctx context.Context, sb SandboxRef) error {
	for _, h := range m.taskEndHooks {
		if err := h.hook.OnTaskEnd(ctx, sb); err != nil {
			return err
		}
	}
	return nil
}

// secretEnv is what the SecretSources give a command of sb.
func (m *Manager) secretEnv(ctx context.Context, sb SandboxRef) ([]string, []map[string]any, error) {
	var env []string
	var uses []map[string]any
	for _, h := range m.secretSources {
		e, u, err := h.hook.SecretEnv(ctx, sb)
		if err != nil {
			return nil, nil, err
		}
		env, uses = append(env, e...), append(uses, u...)
	}
	return env, uses, nil
}

// grantedVars are the variables the SecretSources put into sandboxID's
// commands.
func (m *Manager) grantedVars(ctx context.Context, sandboxID string) []string {
	var vars []string
	for _, h := range m.secretSources {
		for _, v := range h.hook.GrantedVars(ctx, sandboxID) {
			vars = appendUniq(vars, v)
		}
	}
	return vars
}

// brokeredSecrets adds the BrokerSources' secrets of sandboxID to p.
func (m *Manager) brokeredSecrets(ctx context.Context, sandboxID string, p egress.Policy) (egress.Policy, error) {
	for _, h := range m.brokerSources {
		l, err := h.hook.BrokeredSecrets(ctx, sandboxID)
		if err != nil {
			return p, err
		}
		if len(l) > 0 {
			// A copy: p.Secrets may be the sandbox policy's own slice.
			p.Secrets = append(slices.Clone(p.Secrets), l...)
		}
	}
	return p, nil
}
