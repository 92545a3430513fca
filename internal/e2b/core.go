package e2b

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// The sandbox core as the E2B door uses it, one small interface per
// concern (the daemon passes its *manager.Manager for all of them): the
// door depends on what it calls, not on the manager. The contracts are
// the manager's: errors carry an errdefs kind, which the door maps to
// E2B's statuses and Connect codes.

// Sandboxes is the sandbox lifecycle the control plane serves.
type Sandboxes interface {
	Create(ctx context.Context, req sandbox.CreateRequest) (*sandbox.Sandbox, error)
	Get(ctx context.Context, id string) (*sandbox.Sandbox, error)
	// List lists the sandboxes in state ("": every state).
	List(ctx context.Context, state string) ([]*sandbox.Sandbox, error)
	Destroy(ctx context.Context, id string) error
	SetTTL(ctx context.Context, id string, ttl time.Duration) (*sandbox.Sandbox, error)
	Pause(ctx context.Context, id string) (*sandbox.Sandbox, error)
	Resume(ctx context.Context, id string) (*sandbox.Sandbox, error)
}

// Execs are the commands envd's process service starts and then drives.
type Execs interface {
	// Exec runs req in sandbox id (policy first): started is called once
	// it runs, stdout and stderr get its output as it comes; it returns
	// the exec's id and its exit status.
	Exec(ctx context.Context, id string, req sandbox.ExecRequest, started func(execID string, pid int), stdout, stderr io.Writer) (string, *runtime.ExitStatus, error)
	// Running is the handle of exec execID of sandbox id, which may
	// still run (each call finds it again: ended, a conflict).
	Running(id, execID string) sandbox.RunningExec
}

// Files reaches a sandbox's files under its policy (the file API module,
// internal/filesapi), which applies the policy, the write scope and the
// audit record to every operation.
type Files interface {
	AgentFiles(ctx context.Context, id string) (runtime.Files, error)
}

// Redactor redacts what the door answers with that a client once sent
// (the process list's commands, arguments, directories, environment):
// the exec records module (internal/records), Config.Redactor.
type Redactor interface {
	// RedactedJSON is v as JSON with every string in it redacted.
	RedactedJSON(v any) (json.RawMessage, error)
}

// Core is everything the door needs of the sandbox core.
type Core interface {
	Sandboxes
	Execs
}
