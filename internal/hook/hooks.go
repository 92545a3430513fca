package hook

import (
	"context"

	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// Module is a feature attached to the sandbox core through
// Config.Modules. New attaches the modules in their order, before it
// returns; each ability a module has (CreateHook, ExecHook, AfterExecHook,
// StopHook, found by type assertion) is then called in that same order.
// A module reaches the core only through the Core it is given.
type Module interface {
	// Name names the module in errors and in the audit record (a
	// refusal says which module refused).
	Name() string
	// Attach gives the module its handle on the core, once. An error
	// fails New.
	Attach(c Core) error
}

// CreateHook is a module that takes part in every Create.
type CreateHook interface {
	// OnCreate runs after the sandbox started, was recorded and had its
	// egress applied, before Create returns. An error undoes the create:
	// the sandbox is stopped ("failed", on the record), the hooks after
	// it are not called, and Create returns the error.
	OnCreate(ctx context.Context, sb SandboxRef) error
}

// ExecHook is a module that takes part in every Exec (see execPipeline:
// after the policy allowed it, before secrets and the run).
type ExecHook interface {
	// BeforeExec may refuse the command (an error: it does not run, and
	// the refusal is on the exec and audit record as exec.refused, naming
	// the module) or change x.Env, which the next hook sees. Argv and Cwd
	// are copies: the policy decided on them, they are not rewritten.
	BeforeExec(ctx context.Context, x *ExecCall) error
}

// AfterExecHook is a module told of every command that ran.
type AfterExecHook interface {
	// AfterExec runs once the command ended and its output is stored,
	// before its end is recorded; it cannot change the outcome.
	AfterExec(ctx context.Context, x ExecDone)
}

// StopHook is a module told of every sandbox that stops.
type StopHook interface {
	// OnStop runs when a live sandbox stops, before the backend destroys
	// it: ev.Sandbox still has its files (nil when a reset was under
	// way). What it returns joins the sandbox.stop event's payload.
	OnStop(ctx context.Context, ev StopEvent) map[string]any
}

// TemplateSource is a module that provides templates beyond the built-in
// ones (snapshots). Create asks the sources in module order for a name
// the built-ins do not have.
type TemplateSource interface {
	// Template returns the base of the template name, or an error (one
	// wrapping ErrNotFound when it has none of that name).
	// The caller of ctx starts from it: a source answers a template it
	// may not see (another project's) as one it does not have.
	Template(ctx context.Context, name string) (*sandbox.Base, error)
	// Templates lists its templates, for Manager.Templates.
	Templates(ctx context.Context) ([]*sandbox.TemplateInfo, error)
}

// SandboxRef names a live sandbox to a hook.
type SandboxRef struct {
	ID     string
	TaskID string // "": not a task's
}

// ExecCall is a command on its way to a sandbox, as ExecHooks see it.
type ExecCall struct {
	SandboxID, TaskID string
	Argv              []string
	Cwd               string
	Env               []string // the caller's K=V; hooks may add or change
	// Analysis is what the policy read of the command line (read only;
	// nil when it read nothing).
	Analysis *policy.Analysis
	// DaemonEnv is K=V the daemon sets for its own reasons (a module's
	// setting, not the caller's): it follows the caller's env and the
	// secrets', and is not named on the exec's record (env_names names
	// what the caller sent). Hooks may add.
	DaemonEnv []string
	// Keep is this hook's state for the same exec: nil before each hook;
	// what it leaves here the core holds while the command runs and gives
	// back to the same module's AfterExec (ExecDone.Keep). A command that
	// does not start drops it. A kept EgressNoter hears of the command's
	// connections.
	Keep any
}

// ExecDone is a command that ran, as AfterExecHooks see it.
type ExecDone struct {
	SandboxID, TaskID, ExecID string
	Argv                      []string // as recorded (redacted)
	Status                    *runtime.ExitStatus
	Err                       error
	Keep                      any // what this module's ExecHook kept (ExecCall.Keep)
}

// StopEvent is a sandbox stopping, as StopHooks see it.
type StopEvent struct {
	SandboxID, TaskID string
	Reason            string        // StopDestroyed, StopExpired, ...
	Prev              sandbox.State // its state before it stopped
	Sandbox           runtime.Sandbox
}

// LiveInfo is a live sandbox as a module sees it.
type LiveInfo struct {
	State  sandbox.State
	TaskID string           // "": not a task's
	Base   sandbox.Base     // what it started from (template root, binds, seed)
	View   *sandbox.Sandbox // as the API shows it (no egress usage)
	// Policy is its effective policy, as made at create (not changed
	// while it lives; not to be modified).
	Policy *policy.Policy
	// NetworkLayer is the egress layer it was created with over Policy
	// (sandbox.CreateRequest.NetworkLayer; nil: none; not to be
	// modified).
	NetworkLayer *netpolicy.Policy
	// User is its command user's name and home (resolved: never zero
	// for a sandbox the manager made).
	User runtime.User
}
