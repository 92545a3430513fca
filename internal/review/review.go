// Package review is the review feature, a module of the sandbox core
// (internal/manager): what a human reviewing an agent's work is shown
// and what is kept as evidence for it.
//
//   - Bundles: as the core's TaskBundler it writes a task's signed review
//     bundle (internal/bundle) for the tasks module: the sandbox's record,
//     commands and outputs, approvals, network requests, dependency
//     changes and added files (scanned for secrets), with the audit
//     events, all redacted, then records task.export.
//   - Package evidence: as an ExecHook it reads the lockfiles a command
//     the policy classes as a dependency change may touch, before it runs
//     (kept for that exec, ExecCall.Keep; the registry hosts it reaches
//     are noted there, an EgressNoter), and as an AfterExecHook records
//     what changed (package.change). It also sets the env that keeps
//     package managers from running install scripts when the sandbox's
//     policy denies them.
//   - Purge: results, stored output and audit blobs older than an age.
//
// The module reaches the core only through its hook.Core.
package review

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
)

// Config configures the review module.
type Config struct {
	// TaskDir holds the tasks' directories (the tasks module's Dir),
	// whose result directories Purge removes; "": none to remove.
	TaskDir string
}

// Review is the review module.
type Review struct {
	cfg Config
	c   hook.Core
}

// New makes the module; attach it through manager.Config.Modules.
func New(cfg Config) *Review { return &Review{cfg: cfg} }

// Name is the module's name.
func (r *Review) Name() string { return "review" }

// Attach takes the core's handle.
func (r *Review) Attach(c hook.Core) error {
	if r.c != nil {
		return fmt.Errorf("review: attached twice: %w", errdefs.ErrInvalid)
	}
	r.c = c
	return nil
}

// BeforeExec sets the no-install-scripts env a sandbox's policy asks
// for, and keeps the lockfiles of a dependency command as they are
// before it runs. It refuses nothing.
func (r *Review) BeforeExec(ctx context.Context, x *hook.ExecCall) error {
	if info, ok := r.c.Live(x.SandboxID); ok {
		x.DaemonEnv = append(x.DaemonEnv, installScriptEnv(info.Policy)...)
	}
	if x.Analysis != nil && slices.Contains(x.Analysis.Classes, policy.Dependency) {
		if snap := r.snapLockfiles(ctx, x.SandboxID, x.Cwd, x.Analysis); snap != nil {
			snap.blocked = slices.Contains(x.DaemonEnv, "npm_config_ignore_scripts=true")
			snap.override = scriptsOverride(x.Argv)
			for _, c := range x.Analysis.Commands {
				snap.override = snap.override || scriptsOverride(c.Argv)
			}
			x.Keep = snap
		}
	}
	return nil
}

// AfterExec records what a dependency command did to its lockfiles.
func (r *Review) AfterExec(ctx context.Context, x hook.ExecDone) {
	if snap, ok := x.Keep.(*lockSnapshot); ok {
		r.packageEvidence(ctx, x.SandboxID, x.TaskID, x.ExecID, x.Argv, snap)
		if x.Status != nil {
			r.flagWrites(ctx, x, flaggedWrites(x.Status.Files))
		}
	}
}

// WriteBundle writes tb's signed review bundle to w (hook.TaskBundler).
func (r *Review) WriteBundle(ctx context.Context, tb *hook.TaskBundle, w io.Writer) error {
	return r.writeBundle(ctx, tb, w)
}

// The module's abilities, checked where the compiler can.
var (
	_ hook.ExecHook      = (*Review)(nil)
	_ hook.AfterExecHook = (*Review)(nil)
	_ hook.TaskBundler   = (*Review)(nil)
	_ hook.EgressNoter   = (*lockSnapshot)(nil)
)

// flagWrites records a dependency command's flagged writes
// (package.writes), for the review.
func (r *Review) flagWrites(ctx context.Context, x hook.ExecDone, writes []string) {
	if len(writes) == 0 {
		return
	}
	red := r.c.Redactor()
	for i := range writes {
		writes[i] = red.String(writes[i])
	}
	if err := r.c.Record(context.WithoutCancel(ctx), audit.Entry{SandboxID: x.SandboxID, TaskID: x.TaskID, ExecID: x.ExecID, Kind: "package.writes",
		Payload: map[string]any{"command": red.String(strings.Join(x.Argv, " ")), "writes": writes,
			"why": "a dependency command wrote into the repository's .git or outside the project and the package managers' caches"}}); err != nil {
		r.c.Logf("exec %s: record its flagged writes: %v", x.ExecID, err)
	}
}
