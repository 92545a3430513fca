package hook

import (
	"context"
	"io"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/store"
)

// The surface the review module (internal/review) attaches through
// besides the exec hooks: it writes the tasks module's bundles (a
// TaskBundler), reads the audit record it signs, and hears of the
// registry hosts a dependency command reached (an EgressNoter it kept).

// TaskBundle is a task as its review bundle needs it, from the tasks
// module; nothing in it is redacted yet (the bundle is, as a whole).
type TaskBundle struct {
	Task *store.Task // its record
	// Manifest has the task's own fields: task, sandbox, repo, ref,
	// commit, prompt, scope, test, created, workspace_gone.
	Manifest   bundle.Manifest
	Patch      string
	Files      []bundle.File // the changed files, paths as the sandbox has them
	OutOfScope []string
	Tests      []bundle.TestRun // the task's test runs (their summary is the bundle's)
	// Dependencies are the changes the project's own lockfiles pin, base
	// commit against workspace (nil: read them from the patch).
	Dependencies *bundle.Dependencies
}

// TaskBundler is a module that writes tasks' signed review bundles; at
// most one (attach refuses a second).
type TaskBundler interface {
	// WriteBundle writes tb's bundle to w: its sandbox's record,
	// commands, outputs, approvals, network requests and the added
	// files (read from the sandbox while it lives) with the audit
	// events, signed, and records task.export.
	WriteBundle(ctx context.Context, tb *TaskBundle, w io.Writer) error
}

// EgressNoter is a value an ExecHook kept for its exec (ExecCall.Keep)
// that is told, while the command runs, of every host its process tree
// reached through the egress proxy (an allowed connection or request).
// It may be called concurrently.
type EgressNoter interface {
	NoteEgress(host string)
}
