package sdk

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Sandbox states.
const (
	StateRunning = "running"
	StatePaused  = "paused" // frozen until resumed (PauseSandbox)
	StateStopped = "stopped"
)

// Why a sandbox stopped (Sandbox.StopReason).
const (
	StopDestroyed = "destroyed"
	StopExpired   = "expired"
	StopLost      = "lost"           // the daemon restarted while it ran
	StopFailed    = "failed"         // its init died on its own
	StopShutdown  = "daemon-stopped" // the daemon was stopped
)

// The limits a command can hit (ExitStatus.Limit).
const (
	LimitTimeout = "timeout"
	LimitMemory  = "memory"
	LimitPids    = "pids"
	LimitDisk    = "disk"
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
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	Pids        int64   `json:"pids,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`       // CPU quota; 0: none
	DiskBytes   int64   `json:"disk_bytes,omitempty"` // writable layer, /workspace, home
	TmpBytes    int64   `json:"tmp_bytes,omitempty"`  // /tmp
	Inodes      int64   `json:"inodes,omitempty"`     // files on the writable layer
	NoFile      uint64  `json:"nofile,omitempty"`
	// Lifetime destroys the sandbox after this long (JSON: nanoseconds).
	Lifetime time.Duration `json:"lifetime,omitempty"`
	// Ptys: terminals open at once; 0: the backend's default (16 on
	// native; gvisor takes none).
	Ptys int64 `json:"ptys,omitempty"`
}

// Isolation reports what the daemon's backend actually applied.
type Isolation struct {
	Boundary    string   `json:"boundary"`
	Namespaces  []string `json:"namespaces"`
	UIDBase     int      `json:"uid_base"` // host uid of sandbox uid 0
	Seccomp     string   `json:"seccomp"`
	LandlockABI int      `json:"landlock_abi"` // 0: not applied
	Cgroup      string   `json:"cgroup"`       // "v1" or "v2"
}

// Sandbox is one sandbox as the daemon describes it. Records of stopped
// sandboxes stay (State "stopped").
type Sandbox struct {
	ID              string            `json:"id"`
	State           string            `json:"state"` // StateRunning, StatePaused or StateStopped
	Backend         string            `json:"backend"`
	Template        string            `json:"template"`
	TemplateVersion string            `json:"template_version"`
	Labels          map[string]string `json:"labels,omitempty"`
	Limits          Limits            `json:"limits"`
	Isolation       Isolation         `json:"isolation"`
	Created         time.Time         `json:"created"`
	// Expires is zero when the sandbox has no time to live.
	Expires time.Time `json:"expires,omitzero"`
	// Stopped is zero while the sandbox runs.
	Stopped    time.Time `json:"stopped,omitzero"`
	StopReason string    `json:"stop_reason,omitempty"` // Stop* constants
	// Policy is the version of the sandbox's effective policy;
	// PolicySources the layers that made it (defaults, file, template,
	// task or sandbox).
	Policy        string   `json:"policy,omitempty"`
	PolicySources []string `json:"policy_sources,omitempty"`
	// Egress is what a running sandbox's egress has put in the audit
	// record against its budget (GetSandbox only; nil without a proxy).
	Egress *EgressUsage `json:"egress,omitempty"`
}

// EgressUsage counts a sandbox's egress events against its audit budget
// (0: no bound). Cut is set once the budget is used up: the sandbox's
// egress is refused from then on.
type EgressUsage struct {
	Events       int64 `json:"events"`
	Bytes        int64 `json:"bytes"`
	BudgetEvents int64 `json:"budget_events,omitempty"`
	BudgetBytes  int64 `json:"budget_bytes,omitempty"`
	Cut          *struct {
		At     time.Time `json:"at"`
		Reason string    `json:"reason"`
	} `json:"cut,omitempty"`
}

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
}

type createWire struct {
	Policy     *PolicyLayer      `json:"policy,omitempty"`
	Template   string            `json:"template,omitempty"`
	Backend    string            `json:"backend,omitempty"`
	Limits     *Limits           `json:"limits,omitempty"`
	TTLSeconds int64             `json:"ttl_seconds,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Env        []string          `json:"env,omitempty"`
}

// MarshalJSON encodes r as the body of POST /v1/sandboxes.
func (r CreateRequest) MarshalJSON() ([]byte, error) {
	if r.TTL < 0 {
		return nil, invalidf("negative TTL %s", r.TTL)
	}
	w := createWire{Template: r.Template, Backend: r.Backend, TTLSeconds: ceilDiv(r.TTL, time.Second), Labels: r.Labels, Env: r.Env, Policy: r.Policy}
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

type execWire struct {
	ApprovalWaitSeconds *int64   `json:"approval_wait_seconds,omitempty"`
	Background          bool     `json:"background,omitempty"`
	StdinOpen           bool     `json:"stdin_open,omitempty"`
	Argv                []string `json:"argv"`
	Env                 []string `json:"env,omitempty"`
	Cwd                 string   `json:"cwd,omitempty"`
	TimeoutMS           int64    `json:"timeout_ms,omitempty"`
	Stdin               []byte   `json:"stdin,omitempty"` // base64
	OutputLimit         int64    `json:"output_limit,omitempty"`
}

// ExitStatus is how a command ended. Durations are nanoseconds in JSON.
type ExitStatus struct {
	// Code is the exit code: 128+N when killed by signal N, 124 when its
	// timeout expired.
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
	// Limit names the limit hit during the command (Limit* constants), if
	// any.
	Limit           string        `json:"limit,omitempty"`
	StdoutBytes     int64         `json:"stdout_bytes"`
	StderrBytes     int64         `json:"stderr_bytes"`
	StdoutTruncated bool          `json:"stdout_truncated,omitempty"`
	StderrTruncated bool          `json:"stderr_truncated,omitempty"`
	Duration        time.Duration `json:"duration"`
	UserTime        time.Duration `json:"user_time"`
	SystemTime      time.Duration `json:"system_time"`
	MaxRSSBytes     int64         `json:"max_rss_bytes"`

	// ExecID is the id of the exec record, filled in by Client.Exec from
	// the stream's start event (it is not part of the status JSON; in an
	// Exec record use Exec.ID).
	ExecID string `json:"-"`
}

// Exec is the daemon's record of one command run in a sandbox.
type Exec struct {
	ID        string   `json:"id"`
	SandboxID string   `json:"sandbox_id"`
	Argv      []string `json:"argv"`
	Cwd       string   `json:"cwd,omitempty"`
	// EnvNames are the names of the variables the request set (never
	// their values).
	EnvNames []string  `json:"env_names,omitempty"`
	Started  time.Time `json:"started"`
	// Ended is zero while the command runs.
	Ended time.Time `json:"ended,omitzero"`
	// Status is nil while the command runs or when it never started.
	Status *ExitStatus `json:"status,omitempty"`
	// Error says why the command failed to start or run ("code: message"),
	// if it did.
	Error string `json:"error,omitempty"`
	// Policy is the policy's decision on the command.
	Policy *ExecPolicy `json:"policy,omitempty"`
}

// UnmarshalJSON accepts the record's "error" as either a string or an
// {"code","message"} object.
func (e *Exec) UnmarshalJSON(b []byte) error {
	type plain Exec
	var w struct {
		plain
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Exec(w.plain)
	e.Error = ""
	if len(w.Error) == 0 || string(w.Error) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(w.Error, &s); err == nil {
		e.Error = s
		return nil
	}
	var obj struct{ Code, Message string }
	if err := json.Unmarshal(w.Error, &obj); err != nil {
		return fmt.Errorf("exec record: error is neither a string nor an object: %s", w.Error)
	}
	switch {
	case obj.Code == "":
		e.Error = obj.Message
	case obj.Message == "":
		e.Error = obj.Code
	default:
		e.Error = obj.Code + ": " + obj.Message
	}
	return nil
}

// Health is the daemon's answer to GET /v1/health.
type Health struct {
	OK      bool   `json:"ok"`
	Version string `json:"version"`
	Backend string `json:"backend"`
	Cgroup  string `json:"cgroup"`
	// Problem is set when OK is false. (Health itself then returns an
	// *Error: the daemon answers 503.)
	Problem string `json:"problem,omitempty"`
}

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
