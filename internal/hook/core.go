package hook

import (
	"context"
	"io"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
)

// Core is a module's handle on the sandbox core (internal/manager gives
// each module one at Attach): what a feature may use, and nothing of the
// core's own API. Every method may be called concurrently.
type Core interface {
	// Store is the daemon's store.
	Store() *store.Store

	// Redactor hides secrets in what is stored and shown.
	Redactor() sandbox.Redactor

	// Logf logs for the daemon's operator.
	Logf(format string, args ...any)

	// Record appends e to the audit record (record-before-act: an error
	// means it is not recorded, and what depends on it must not happen).
	Record(ctx context.Context, e audit.Entry) error

	// State is a sandbox's state; a sandbox that is not live is Stopped (or
	// unknown: ErrNotFound).
	State(ctx context.Context, id string) (sandbox.State, error)

	// Sandbox is a sandbox as the API shows it.
	Sandbox(ctx context.Context, id string) (*sandbox.Sandbox, error)

	// Runtime is the backend's sandbox while it may be used (running, or
	// finishing); else an ErrConflict saying why.
	Runtime(ctx context.Context, id string) (runtime.Sandbox, error)

	// Files is the daemon's own access to a sandbox's files (no policy).
	Files(ctx context.Context, id string) (runtime.Files, error)

	// Live is what the core knows of a live sandbox; false: not live.
	Live(id string) (*LiveInfo, bool)

	// Exec runs a command through the whole exec pipeline, hooks included:
	// a module calling it from its own ExecHook must not recurse forever.
	Exec(ctx context.Context, id string, req sandbox.ExecRequest, stdout, stderr io.Writer) (string, *runtime.ExitStatus, error)

	// CreateForTask is Create for the sandbox of task taskID (not "" ): its
	// policy's source says task, its events and execs name the task, and it
	// may run ExecTaskTest. Only a module reaches it: no request sets it.
	CreateForTask(ctx context.Context, req sandbox.CreateRequest, taskID string) (*sandbox.Sandbox, error)

	// ExecTaskTest runs req as the task's own test command in the task's
	// sandbox id: the policy allows it whatever it decides (recorded as the
	// rule task:test), and it runs while the sandbox is Finishing. The
	// sandbox must be live and taskID's (ErrConflict otherwise). The caller
	// (the tasks module) runs only the test command its task was started
	// with; nothing an agent sends reaches this.
	ExecTaskTest(ctx context.Context, id, taskID string, req sandbox.ExecRequest, started func(string, int), stdout, stderr io.Writer) (string, *runtime.ExitStatus, error)

	// RestrictWrites confines writes in the live sandbox id to scope (path
	// globs, see writescope.Apply) now and again after every Reset, for the
	// rest of its life. A backend that cannot is an error.
	RestrictWrites(ctx context.Context, id string, scope []string) error

	// BeginFinishing moves the live sandbox id to Finishing (nothing but
	// ExecTaskTest runs, nothing writes its files) or says why it may not
	// (an ErrConflict). end moves it back to Running if it is still
	// Finishing; call it once. A sandbox that is not live has nothing to
	// hold: end is then a no-op and the error nil.
	BeginFinishing(id string) (end func(), err error)

	// MaxLifetime bounds every sandbox's life (0: no bound; see
	// Config.MaxLifetime).
	MaxLifetime() time.Duration

	// Destroy stops a live sandbox (StopDestroyed); its record stays.
	Destroy(ctx context.Context, id string) error

	// Execs lists a sandbox's exec records, oldest first, as the API shows
	// them (redacted again: a secret learned since is hidden too).
	Execs(ctx context.Context, id string) ([]*sandbox.Exec, error)

	// ExecRecord is exec execID of sandbox id as the API shows it (not
	// found: unknown, or another sandbox's).
	ExecRecord(ctx context.Context, id, execID string) (*sandbox.Exec, error)

	// AuditHealthy is nil while the audit log records; else why it does not
	// (what needs a gap-free record must wait).
	AuditHealthy() error

	// FetchPolicy is the daemon's fetch policy for clones it makes for a
	// remote client: the policy file's fetch: section (nil: nowhere), and
	// the registry presets the sandboxes' policies get.
	FetchPolicy() (*egress.Policy, egress.Presets)
	// PolicyFile is the daemon's policy file (nil: the built-in
	// defaults), what a project's own layer may not relax.
	PolicyFile() *policy.File

	// RecordRefusal keeps a command that will not run in the exec record,
	// with decision d and the message msg (redacted), and records
	// exec.refused: what the core does with a denial, for a module that
	// refuses one.
	RecordRefusal(ctx context.Context, x ExecCall, d *policy.Decision, msg string)

	// Lift lets the PolicyLift modules relax d for sandbox id, in module
	// order, as the core does at every exec: for a module that decides
	// with the sandbox's policy itself (the file API). An error fails that
	// call closed.
	Lift(ctx context.Context, id string, d *policy.Decision) error

	// IsApprover says whether the caller of ctx may decide approvals
	// (AsApprover); others see held commands redacted.
	IsApprover(ctx context.Context) bool

	// Bundles is the module that writes tasks' review bundles. With no audit
	// log it is nil and the error nil: no bundle is made (a bundle is the
	// record's), so a finish writes none and an export is refused. An
	// ErrUnsupported: the daemon keeps an audit log but no module writes
	// bundles; what needs a bundle must fail, never go without one.
	Bundles() (TaskBundler, error)

	// AuditLog is the daemon's audit log (nil: none is kept), for reading
	// it (events, head) and signing with its key; what a module records goes
	// through Record.
	AuditLog() *audit.Log

	// FlushRefusals records the egress refusal counts of sandbox id's window
	// still open (nothing without the egress service).
	FlushRefusals(ctx context.Context, id string)

	// Now is the core's clock (Config.Now), in UTC.
	Now() time.Time

	// Actor is who makes the requests of ctx (WithActor), "unknown" if unnamed.
	Actor(ctx context.Context) string

	// HasEgress says whether the daemon runs the egress service (without it
	// sandboxes have no network, and nothing can broker a secret).
	HasEgress() bool

	// ApplyEgress gives the egress service a sandbox's policy as it is now
	// (BrokerSources asked again); a sandbox that is not live is removed
	// from it. nil without the egress service.
	ApplyEgress(ctx context.Context, id string) error

	// ReapplyEgress is ApplyEgress of one sandbox, or of every live one
	// (""), with errors logged, not returned.
	ReapplyEgress(ctx context.Context, id string)

	// TaskEnded runs the TaskEndHooks, in module order, for sb's task; the
	// first error stops it and is returned (the task stays open).
	TaskEnded(ctx context.Context, sb SandboxRef) error

	// ExecOf attributes a connection or DNS query of sandbox id from process
	// pid (<= 0: unknown) to its task and, when pid is a running exec's
	// process, that exec. A command's first connection can arrive before
	// Exec has noted the command: while one of the sandbox's execs is
	// starting it waits (at most sourceWait), so the record names its exec.
	ExecOf(id string, pid int) (taskID, execID string)

	// RecordAs appends e as the actor it names (none is taken from ctx),
	// into the audit log's reserve if essential (what must be recorded even
	// on a full disk). Without an audit log it records nothing and returns
	// nil; an error means e is not recorded.
	RecordAs(ctx context.Context, e audit.Entry, essential bool) error

	// RecordAsync appends e without waiting (best effort: a failure is
	// logged), for events that must not hold up their caller.
	RecordAsync(ctx context.Context, e audit.Entry)

	// NoteEgress tells the running exec execID's kept EgressNoters (the
	// review module's package evidence) that it reached host (an allowed
	// connection or request).
	NoteEgress(execID, host string)

	// BrokeredSecrets are the secrets granted to sandbox id in broker mode,
	// with their values, for its egress policy (the proxy puts them in
	// requests to their hosts; the sandbox never sees them). A secret whose
	// record is gone is left out; one that cannot be opened is an error.
	BrokeredSecrets(ctx context.Context, id string) ([]egress.Secret, error)

	// Prewarm makes a ready sandbox of shape s for the warm pool (see
	// WarmPool): started, counted against the daemon's caps (a cap it
	// would pass is an ErrLimitExceeded), neither live nor recorded until a
	// Create claims it. The shape's backend and template must exist.
	Prewarm(ctx context.Context, s WarmShape) (Warm, error)
}
