// Package sandbox holds the values the sandbox core (internal/manager),
// its modules and its doors (api, e2b) pass between them: a sandbox and an
// exec as the API shows them, the requests that make them, a sandbox's
// state, the policy's refusals and who is asking (the actor in a
// context). It keeps no state and does no I/O; the core does.
package sandbox

import (
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lost"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Stop reasons recorded for a sandbox.
const (
	StopDestroyed = "destroyed"
	StopExpired   = "expired"
	StopLost      = lost.Reason // the daemon that owned it went away (internal/lost)
	StopFailed    = "failed"    // its init died on its own
	StopShutdown  = "daemon-stopped"
)

// Sandbox is a sandbox as the API shows it. What is shown is redacted
// (internal/redacted) but the fields tagged redact:"keep": the daemon's
// own words, never agent text, that a value any caller teaches the
// redactor must not change in every record.
type Sandbox struct {
	ID              string            `json:"id" redact:"keep"`
	Project         string            `json:"project" redact:"keep"`
	State           string            `json:"state" redact:"keep"`
	Backend         string            `json:"backend" redact:"keep"`
	Template        string            `json:"template"`
	TemplateVersion string            `json:"template_version" redact:"keep"`
	Labels          map[string]string `json:"labels,omitempty"`
	Limits          runtime.Limits    `json:"limits"`
	Isolation       runtime.Isolation `json:"isolation"`
	Created         time.Time         `json:"created"`
	Expires         *time.Time        `json:"expires,omitempty"`
	Stopped         *time.Time        `json:"stopped,omitempty"`
	StopReason      string            `json:"stop_reason,omitempty" redact:"keep"`
	// Policy is the version of the sandbox's effective policy, and the
	// layers that made it.
	Policy        string   `json:"policy,omitempty" redact:"keep"`
	PolicySources []string `json:"policy_sources,omitempty"`
	// Egress is what a running sandbox's egress has recorded against its
	// audit budget, and the cut if it used it up (GET of one sandbox).
	Egress *egress.Usage `json:"egress,omitempty"`
}

// State is where a live sandbox is in its life. The core holds it and
// changes it only through its one transition table.
type State int

// The states of a sandbox. Running, Paused and Stopped are what the store
// records; Resetting and Finishing are the daemon's own and are recorded
// as running.
const (
	Running   State = iota
	Paused          // frozen (Pause); nothing runs until Resume
	Resetting       // being started over from its template (Reset)
	Finishing       // its task is being finished: only the task's tests run
	Stopped         // destroyed, expired, lost or failed; no longer live
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Paused:
		return "paused"
	case Resetting:
		return "resetting"
	case Finishing:
		return "finishing"
	case Stopped:
		return "stopped"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// FinishingError is what a command or a write is told while its
// sandbox's task is being finished (the core's, and the file API's).
func FinishingError(taskID string) error {
	return fmt.Errorf("task %s is being finished: nothing new runs or writes in its sandbox until it is done: %w", taskID, errdefs.ErrConflict)
}

// Base is what a sandbox starts from: a template's root and binds, and a
// seed (a tar restored at "/" through runtime.Files at create and at
// every reset; "": none).
type Base struct {
	Name, Version string
	RootFS        string
	Lowers        []string // more layers below RootFS, top first (an image's)
	Binds         []runtime.Bind
	// Env is what its commands start with, before the caller's (the
	// template's PATH).
	Env []string
	// WorkDir is where its commands start when an exec names no cwd
	// (an image's WorkingDir, a build's WORKDIR); "": /workspace.
	WorkDir string
	Seed    string
	// SeedHome is the command user's home the seed holds files of (the
	// snapshotted sandbox's); a sandbox of another home cannot start
	// from it. "" with a seed: /home/sandbox.
	SeedHome string
	// Lineage names the templates this one was made from, oldest first
	// (a snapshot's base, that base's own base, ...): the policy file's
	// sections for them apply to its sandboxes before its own, so a
	// snapshot never sheds its base's policy.
	Lineage []string
}

// TemplateInfo is a template a sandbox can be created from.
type TemplateInfo struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Kind    string    `json:"kind"` // "builtin", "snapshot", "image", "debian" or "build"
	Base    string    `json:"base,omitempty"`
	Created time.Time `json:"created"`
	// Project owns it ("": a shared template every project may start
	// from; a snapshot is its project's alone).
	Project string `json:"project,omitempty"`
}
