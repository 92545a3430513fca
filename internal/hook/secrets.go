package hook

import (
	"context"

	"github.com/airlock-dev/airlock/internal/egress"
)

// The surface a secrets module (internal/secrets) attaches through: the
// exec pipeline's "secrets" stage, the policy's granted variables, the
// egress broker's values, and the end of a task. Each is an optional
// ability found by type assertion, called in module order like the hooks
// of hooks.go.

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
