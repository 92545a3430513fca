package sdk

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/airlock-dev/airlock/wire"
)

// The API's bodies are package wire's; the names here are the same types.

// Sandbox states.
const (
	StateRunning = wire.StateRunning
	StatePaused  = wire.StatePaused // frozen until resumed (PauseSandbox)
	StateStopped = wire.StateStopped
)

// Why a sandbox stopped (Sandbox.StopReason).
const (
	StopDestroyed = wire.StopDestroyed
	StopExpired   = wire.StopExpired
	StopLost      = wire.StopLost     // the daemon restarted while it ran
	StopFailed    = wire.StopFailed   // its init died on its own
	StopShutdown  = wire.StopShutdown // the daemon was stopped
)

// The limits a command can hit (ExitStatus.Limit).
const (
	LimitTimeout = wire.LimitTimeout
	LimitMemory  = wire.LimitMemory
	LimitPids    = wire.LimitPids
	LimitDisk    = wire.LimitDisk
)

// Output streams of a stored exec (Client.ExecOutput).
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// MaxStdin is the largest stdin Client.Exec sends.
const MaxStdin = 16 << 20

// Limits are the hard resource limits of a sandbox. In a CreateRequest a
// zero field means the daemon's default; a Sandbox reports the limits
// actually applied.
type Limits = wire.Limits

// Isolation reports what the daemon's backend actually applied.
type Isolation = wire.Isolation

// WriteScope is a write scope enforced inside a sandbox (a task's).
type WriteScope = wire.WriteScope

// Sandbox is one sandbox as the daemon describes it. Records of stopped
// sandboxes stay (State "stopped").
type Sandbox = wire.Sandbox

// EgressUsage counts a sandbox's egress events against its audit budget
// (0: no bound). Cut is set once the budget is used up: the sandbox's
// egress is refused from then on.
type EgressUsage = wire.EgressUsage

// EgressCut says when and why a sandbox's egress was cut.
type EgressCut = wire.EgressCut

// CreateRequest describes a sandbox to create. Every field is optional.
type CreateRequest struct {
	Template string
	// Backend names the isolation boundary: "native" (namespaces +
	// seccomp + Landlock) or "gvisor" (gVisor's user-space kernel); "":
	// the daemon's default. One the daemon does not have is an error.
	Backend string
	Limits  Limits
	// TTL destroys the sandbox after this long (rounded up to whole
	// seconds); 0: the daemon's maximum lifetime (serve --max-lifetime,
	// 24h unless set; none only where that is 0), which a TTL may not
	// exceed. It can be changed later with Client.SetTimeout.
	TTL    time.Duration
	Labels map[string]string
	// Env is the base environment ("K=V") of every command in the sandbox.
	Env []string
	// Policy is the sandbox's own policy layer over the daemon's. Over TCP
	// it may only tighten.
	Policy *PolicyLayer
	// OneShot makes the daemon destroy the sandbox when its first command
	// ends (a status, a refusal, or its client gone), or a minute after
	// the create if no command was asked for by then.
	OneShot bool
}

// MarshalJSON encodes r as the body of POST /v1/sandboxes.
func (r CreateRequest) MarshalJSON() ([]byte, error) {
	if r.TTL < 0 {
		return nil, invalidf("negative TTL %s", r.TTL)
	}
	w := wire.CreateSandboxRequest{Template: r.Template, Backend: r.Backend, TTLSeconds: ceilDiv(r.TTL, time.Second), Labels: r.Labels, Env: r.Env, Policy: r.Policy, OneShot: r.OneShot}
	if r.Limits != (Limits{}) {
		l := r.Limits
		w.Limits = &l
	}
	return json.Marshal(w)
}

// ExecRequest describes one command to run in a sandbox.
type ExecRequest struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH.
	Argv []string
	// Env ("K=V") is added to the sandbox's base environment.
	Env []string
	// Cwd is the working directory inside the sandbox; "": the daemon's
	// default (/workspace).
	Cwd string
	// Timeout kills the command after this long (rounded up to whole
	// milliseconds); 0: none. The status then has Code 124 and Limit
	// LimitTimeout.
	Timeout time.Duration
	// Stdin, when set, is read to its end before the request is sent (at
	// most MaxStdin bytes) and given to the command as its standard input.
	Stdin io.Reader
	// OutputLimit caps each of stdout and stderr as the daemon stores and
	// streams them; 0: the daemon's default (16 MiB).
	OutputLimit int64
	// ApprovalWait is how long a command the policy holds for a human
	// waits for the decision (rounded up to seconds; 0: the daemon's
	// default). With NoApprovalWait it does not wait: the call fails at
	// once with IsApprovalPending and the approval's id, and the command
	// can be sent again once approved.
	ApprovalWait   time.Duration
	NoApprovalWait bool
	// Started, when set, is called by Client.Exec with the exec's id as
	// soon as the daemon has started the command (before its output): a
	// caller can then name the command while it runs.
	Started func(execID string)
}

func (r *ExecRequest) approvalWire() *int64 {
	switch {
	case r.NoApprovalWait:
		n := int64(0)
		return &n
	case r.ApprovalWait > 0:
		n := ceilDiv(r.ApprovalWait, time.Second)
		return &n
	}
	return nil
}

// body is the JSON body of r; stdin is read here (at most MaxStdin bytes).
func (r *ExecRequest) body() (wire.ExecRequest, error) {
	w := wire.ExecRequest{Argv: r.Argv, Env: r.Env, Cwd: r.Cwd, TimeoutMS: ceilDiv(r.Timeout, time.Millisecond), OutputLimit: r.OutputLimit,
		ApprovalWaitSeconds: r.approvalWire()}
	if r.Stdin != nil {
		b, err := io.ReadAll(io.LimitReader(r.Stdin, MaxStdin+1))
		if err != nil {
			return w, fmt.Errorf("reading stdin: %w", err)
		}
		if len(b) > MaxStdin {
			return w, &Error{Code: CodeLimitExceeded, Message: fmt.Sprintf("stdin is larger than %d MiB", MaxStdin>>20)}
		}
		w.Stdin = base64.StdEncoding.EncodeToString(b)
	}
	return w, nil
}

// ExitStatus is how a command ended. Durations are nanoseconds in JSON.
// ExecID is filled in by Client.Exec from the stream's start event.
type ExitStatus = wire.ExitStatus

// FileActivity is what a command did to the files under /workspace and
// home.
type FileActivity = wire.FileActivity

// Exec is the daemon's record of one command run in a sandbox.
type Exec = wire.Exec

// Health is the daemon's answer to GET /v1/health. (Health itself
// returns an *Error when OK is false: the daemon answers 503.)
type Health = wire.Health

// ceilDiv is d in units of unit, rounded up, so that a small positive
// duration never becomes 0 ("none").
func ceilDiv(d, unit time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	n := int64(d / unit)
	if d%unit != 0 {
		n++
	}
	return n
}
