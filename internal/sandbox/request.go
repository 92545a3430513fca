package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/caps"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// CreateRequest asks for a sandbox.
type CreateRequest struct {
	Template string `json:"template,omitempty"`
	// Project owns the sandbox: "" the caller's (the operator's: the
	// default project); a key may name only its own (tenant).
	Project string `json:"project,omitempty"`
	// Backend names the isolation backend ("native", "gvisor"); "": the
	// daemon's default. One that is not available is an error, never a
	// fallback to another boundary.
	Backend    string            `json:"backend,omitempty"`
	Limits     runtime.Limits    `json:"limits"`
	TTLSeconds int64             `json:"ttl_seconds,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Env        []string          `json:"env,omitempty"`
	// OneShot: destroyed when its first command ends (wire's OneShot).
	OneShot bool `json:"one_shot,omitempty"`
	// Policy is the sandbox's own policy layer, over the daemon's.
	Policy *policy.Layer `json:"policy,omitempty"`
	// TightenOnly refuses a Policy that relaxes the daemon's (set for
	// callers that are agents, not operators).
	TightenOnly bool `json:"-"`
	// NetworkLayer is an egress layer over the sandbox's policy that may
	// only narrow it (netpolicy.Policy.NarrowedBy: deny rules and their
	// exceptions, the E2B door's network rules) and that its caller
	// replaces while the sandbox lives (sandboxnet's SetNetworkLayer);
	// nil: none.
	NetworkLayer *netpolicy.Policy `json:"-"`
	// User is what the command user is called (the E2B door's "user",
	// /home/user); zero: runtime.DefaultUser. Its uid is the backend's.
	User runtime.User `json:"-"`
	// PauseOnExpiry: when its time to live ends the sandbox is paused (as
	// Manager.Pause pauses), not destroyed, and stays paused until it is
	// resumed or destroyed; the daemon's maximum lifetime still destroys
	// it (the E2B door's lifecycle onTimeout "pause"). Its backend must
	// pause, or the create is refused.
	PauseOnExpiry bool `json:"-"`
}

// ExecRequest is one command.
type ExecRequest struct {
	// Background returns as soon as the command started; it runs on, its
	// output is kept (capped) and its end recorded.
	Background bool
	// OpenStdin keeps the command's stdin open for Input and CloseStdin
	// (Stdin is then ignored).
	OpenStdin bool
	// TTY runs it on a terminal (Rows x Cols); see Resize.
	TTY         bool
	Rows, Cols  uint16
	Argv        []string
	Env         []string
	Cwd         string
	Timeout     time.Duration
	Stdin       io.Reader
	OutputLimit int64
	// A command the policy holds for approval waits ApprovalWait (0:
	// the approvals module's default), or with NoWait fails at once with
	// an approval_pending error naming the approval (see hook.Holder).
	ApprovalWait time.Duration
	NoWait       bool
}

// Exec is an exec record as the API shows it, redacted but its ids
// (redact:"keep", see Sandbox).
type Exec struct {
	ID        string              `json:"id" redact:"keep"`
	SandboxID string              `json:"sandbox_id" redact:"keep"`
	Argv      []string            `json:"argv"`
	Cwd       string              `json:"cwd"`
	EnvNames  []string            `json:"env_names,omitempty"`
	Started   time.Time           `json:"started"`
	Ended     *time.Time          `json:"ended,omitempty"`
	Status    *runtime.ExitStatus `json:"status,omitempty"`
	Error     string              `json:"error,omitempty"`
	Policy    *ExecPolicy         `json:"policy,omitempty"`
}

// ExecPolicy is the policy's decision on an exec, in short.
type ExecPolicy struct {
	Action     policy.Action  `json:"action" redact:"keep"`
	Classes    []policy.Class `json:"classes" redact:"keep"`
	Rules      []string       `json:"rules,omitempty"`
	Reason     string         `json:"reason"`
	Grant      []string       `json:"grant,omitempty"`
	BreakGlass string         `json:"break_glass,omitempty"`
	Version    string         `json:"policy" redact:"keep"`
}

// ExecPolicyOf is a stored decision (JSON of a policy.Decision) in short;
// nil for none, or one that cannot be read.
func ExecPolicyOf(raw json.RawMessage) *ExecPolicy {
	if raw == nil {
		return nil
	}
	var d policy.Decision
	if json.Unmarshal(raw, &d) != nil || d.Analysis == nil {
		return nil
	}
	ep := &ExecPolicy{Action: d.Action, Classes: d.Analysis.Classes, Reason: d.Reason, Grant: d.Grant, BreakGlass: d.BreakGlass, Version: d.Policy}
	for _, m := range d.Matches {
		if m.Action == d.Action || d.Grant != nil || d.BreakGlass != "" {
			ep.Rules = appendUniq(ep.Rules, m.Rule)
		}
	}
	return ep
}

// MaxApprovalWait bounds how long an exec may ask to wait for a human
// (ExecRequest.ApprovalWait); a request that does not wait stays
// approvable this long (the agent retries the command once approved).
const MaxApprovalWait = time.Hour

// MaxLearned is how many secret-named variables one request may bring,
// and MaxLearnedLen how long a value the redactor learns from one.
const (
	MaxLearned    = 64
	MaxLearnedLen = 16 << 10
)

// CheckCreate validates what a create request carries that needs no
// state (time to live, limits, labels, environment) and returns the
// sandbox's time to live under maxLifetime (see reqcheck.Lifetime). Create calls
// it; every door's decoder is fuzzed through it.
func CheckCreate(req CreateRequest, maxLifetime time.Duration) (time.Duration, error) {
	ttl, err := reqcheck.Lifetime(req.TTLSeconds, maxLifetime)
	if err != nil {
		return 0, err
	}
	if err := caps.CheckLimits(req.Limits, maxLifetime); err != nil {
		return 0, err
	}
	if err := reqcheck.Labels(req.Labels); err != nil {
		return 0, err
	}
	if err := reqcheck.Env(req.Env); err != nil {
		return 0, err
	}
	return ttl, nil
}

// CheckExec validates an exec request before anything is recorded or
// asked of the policy: strings the kernel would cut at a NUL, and
// durations and sizes in range (callers converting a request's counts
// use reqcheck.Seconds and Millis first, so a wrapped value never arrives here).
func CheckExec(req ExecRequest) error {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return fmt.Errorf("argv must name a command: %w", errdefs.ErrInvalid)
	}
	for i, a := range req.Argv {
		if err := reqcheck.NoNUL(fmt.Sprintf("argv[%d]", i), a); err != nil {
			return err
		}
	}
	if err := reqcheck.NoNUL("cwd", req.Cwd); err != nil {
		return err
	}
	if err := reqcheck.Env(req.Env); err != nil {
		return err
	}
	switch {
	case req.Timeout < 0 || req.Timeout > reqcheck.MaxDuration:
		return fmt.Errorf("timeout_ms: want 0 to %d: %w", int64(reqcheck.MaxDuration/time.Millisecond), errdefs.ErrInvalid)
	case req.OutputLimit < 0:
		return fmt.Errorf("output_limit: %d must not be negative: %w", req.OutputLimit, errdefs.ErrInvalid)
	case req.ApprovalWait < 0 || req.ApprovalWait > MaxApprovalWait:
		return fmt.Errorf("approval_wait_seconds: want 0 to %d: %w", int64(MaxApprovalWait/time.Second), errdefs.ErrInvalid)
	}
	return nil
}

func appendUniq(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

// RunningExec is one command of a sandbox that may still be running,
// named by its ids: each call finds it again, so a handle outlives its
// command harmlessly (an exec that has ended is an ErrConflict, one the
// sandbox never ran ErrNotFound). Arguments are checked first (an
// ErrInvalid whatever the exec's state).
type RunningExec interface {
	// Signal sends sig to the command's process group (exec.signal).
	Signal(ctx context.Context, sig syscall.Signal) error
	// Input writes data to the command's open stdin, blocking while the
	// command does not read (as a pipe would), up to ctx; what is typed
	// is recorded a line at a time (exec.input).
	Input(ctx context.Context, data []byte) error
	// CloseStdin closes its open stdin (it reads end of file).
	CloseStdin(ctx context.Context) error
	// Resize sets the window of the command's terminal.
	Resize(ctx context.Context, rows, cols uint16) error
}
