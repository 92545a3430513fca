package api

import (
	"context"
	"io"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// The sandbox core as the API uses it, one small interface per concern
// (the daemon passes its *manager.Manager for all of them). The API
// depends on what it calls, not on the manager, so that a handler can be
// served, and tested, over any implementation. The contracts are the
// manager's: errors carry an errdefs kind, which writeError maps to a
// status; ids are checked by validID before any call.

// Sandboxes is the sandbox lifecycle.
type Sandboxes interface {
	// Create starts a sandbox (req already passed parseCreate; Create
	// checks it again).
	Create(ctx context.Context, req sandbox.CreateRequest) (*sandbox.Sandbox, error)
	Get(ctx context.Context, id string) (*sandbox.Sandbox, error)
	// List lists the sandboxes in state ("": every state).
	List(ctx context.Context, state string) ([]*sandbox.Sandbox, error)
	Destroy(ctx context.Context, id string) error
	SetTTL(ctx context.Context, id string, ttl time.Duration) (*sandbox.Sandbox, error)
	Pause(ctx context.Context, id string) (*sandbox.Sandbox, error)
	Resume(ctx context.Context, id string) (*sandbox.Sandbox, error)
	Reset(ctx context.Context, id string) (*sandbox.Sandbox, error)
	// MaxLifetime is the daemon's bound on a sandbox's life (0: none),
	// which requests are checked against before anything is done.
	MaxLifetime() time.Duration
}

// Execs are the commands of a sandbox: run (policy first), and the
// running ones' signals, input and terminal size.
type Execs interface {
	// Exec runs req in sandbox id: started is called once it runs,
	// stdout and stderr (nil with req.Background) get its output as it
	// comes. It returns the exec's id and, unless in the background, its
	// exit status.
	Exec(ctx context.Context, id string, req sandbox.ExecRequest, started func(execID string, pid int), stdout, stderr io.Writer) (string, *runtime.ExitStatus, error)
	// Running is the handle of exec execID of sandbox id, which may
	// still run (each call finds it again: ended, a conflict).
	Running(id, execID string) sandbox.RunningExec
}

// ExecRecords are a sandbox's commands once they ran: their records and
// stored output (the exec records module, internal/records,
// Modules.Records).
type ExecRecords interface {
	// Execs lists a sandbox's exec records, oldest first.
	Execs(ctx context.Context, id string) ([]*sandbox.Exec, error)
	GetExec(ctx context.Context, id, execID string) (*sandbox.Exec, error)
	// Output is the stored output of one stream ("stdout" or "stderr")
	// of an exec.
	Output(ctx context.Context, id, execID, stream string) ([]byte, error)
}

// Files reaches a sandbox's files under its policy (the file API module,
// internal/filesapi, Modules.Files), which applies the policy, the write
// scope and the audit record to every operation.
type Files interface {
	AgentFiles(ctx context.Context, id string) (runtime.Files, error)
}

// Policies answers what a sandbox's policy is and what it would decide of
// a command line, running nothing (the policy explain module,
// internal/explain, Modules.Policies).
type Policies interface {
	Policy(ctx context.Context, id string) (*policy.Policy, error)
	Check(ctx context.Context, id string, argv []string, cwd string) (*policy.Decision, error)
}

// Templates lists the templates a sandbox can start from (the built-in
// ones, then the modules').
type Templates interface {
	Templates(ctx context.Context) ([]*sandbox.TemplateInfo, error)
}

// Records is the core's own side of the audit record: whether it can
// still be written, and one event per changing API call.
type Records interface {
	// Healthy is why the daemon cannot take work (today: an audit log
	// that can no longer be written), or nil.
	Healthy() error
	// RecordAPI records a call that changed something; what it cannot
	// record it drops (the call is already answered).
	RecordAPI(ctx context.Context, method, path string, status int)
}

// Core is everything New needs of the sandbox core.
type Core interface {
	Sandboxes
	Execs
	Templates
	Records
}
