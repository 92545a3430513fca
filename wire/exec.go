package wire

import (
	"encoding/json"
	"fmt"
	"time"
)

// ExecRequest is the body of POST /v1/sandboxes/{id}/exec.
type ExecRequest struct {
	// Argv is the command and its arguments (required); argv[0] is looked
	// up in PATH.
	Argv []string `json:"argv"`
	// Env ("K=V") is added to the sandbox's base environment.
	Env []string `json:"env,omitempty"`
	// Cwd is the working directory; "": /workspace in a task's sandbox, else the template's (an image's WorkingDir), else /workspace.
	Cwd string `json:"cwd,omitempty"`
	// TimeoutMS kills the command after this long; 0: none.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Stdin is the command's standard input, base64.
	Stdin string `json:"stdin,omitempty"`
	// OutputLimit caps each of stdout and stderr as stored and streamed;
	// 0: the daemon's default (16 MiB).
	OutputLimit int64 `json:"output_limit,omitempty"`
	// ApprovalWaitSeconds is how long a command the policy holds waits for
	// a human (absent: the daemon's default; 0: answer approval_pending at
	// once, with the approval's id).
	ApprovalWaitSeconds *int64 `json:"approval_wait_seconds,omitempty"`
	// Background answers 202 ExecStarted as soon as the command started,
	// instead of streaming it.
	Background bool `json:"background,omitempty"`
	// StdinOpen keeps stdin open for .../input and .../close-stdin.
	StdinOpen bool `json:"stdin_open,omitempty"`
	// TTY runs the command on a terminal of the sandbox; all its output
	// comes as stdout events.
	TTY bool `json:"tty,omitempty"`
	// Rows is the terminal's height; 0: 24.
	Rows uint16 `json:"rows,omitempty"`
	// Cols is the terminal's width; 0: 80.
	Cols uint16 `json:"cols,omitempty"`
}

// ExecStarted is the answer (202) of a background exec.
type ExecStarted struct {
	// ExecID names the exec record.
	ExecID string `json:"exec_id"`
	// PID is the command's pid inside the sandbox.
	PID int `json:"pid"`
}

// Exec stream event types (Event.Type).
const (
	EventStart  = "start"
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventExit   = "exit"
	EventError  = "error"
)

// Event is one line of an exec stream (NDJSON). The last one is "exit" or
// "error".
type Event struct {
	// Type is "start", "stdout", "stderr", "exit" or "error".
	Type string `json:"type"`
	// ExecID names the exec record (start).
	ExecID string `json:"exec_id,omitempty"`
	// PID is the command's pid inside the sandbox (start).
	PID int `json:"pid,omitempty"`
	// Data is a chunk of output, base64 (stdout, stderr).
	Data []byte `json:"data,omitempty"`
	// Status is how the command ended (exit).
	Status *ExitStatus `json:"status,omitempty"`
	// Passed says whether a task's tests passed (exit of a task's test).
	Passed *bool `json:"passed,omitempty"`
	// Code is the error's code (error).
	Code string `json:"code,omitempty"`
	// Message is the error's message (error).
	Message string `json:"message,omitempty"`
}

// The limits a command can hit (ExitStatus.Limit).
const (
	LimitTimeout = "timeout"
	LimitMemory  = "memory"
	LimitPids    = "pids"
	LimitDisk    = "disk"
)

// ExitStatus is how a command ended.
type ExitStatus struct {
	// Code is the exit code: 128+N when killed by signal N, 124 when its
	// timeout expired.
	Code int `json:"code"`
	// Signal names the signal that killed it, if one did.
	Signal string `json:"signal,omitempty"`
	// Limit names the limit hit during the command ("timeout", "memory",
	// "pids", "disk"), if any.
	Limit string `json:"limit,omitempty"`
	// StdoutBytes is how much it wrote to stdout.
	StdoutBytes int64 `json:"stdout_bytes"`
	// StderrBytes is how much it wrote to stderr.
	StderrBytes int64 `json:"stderr_bytes"`
	// StdoutTruncated: stdout was over the output limit.
	StdoutTruncated bool `json:"stdout_truncated,omitempty"`
	// StderrTruncated: stderr was over the output limit.
	StderrTruncated bool `json:"stderr_truncated,omitempty"`
	// Duration is its wall-clock time.
	Duration time.Duration `json:"duration"`
	// UserTime is its CPU time in user mode.
	UserTime time.Duration `json:"user_time"`
	// SystemTime is its CPU time in the kernel.
	SystemTime time.Duration `json:"system_time"`
	// MaxRSSBytes is its peak resident memory.
	MaxRSSBytes int64 `json:"max_rss_bytes"`
	// Files is what it did to the files under /workspace and home; absent
	// when the backend does not track it.
	Files *FileActivity `json:"files,omitempty"`

	// ExecID is not part of the JSON: a client fills it in from the
	// stream's start event (in an Exec record, use Exec.ID).
	ExecID string `json:"-"`
}

// FileActivity is what a command did to the files under /workspace and
// the home directory, as far as the backend can see it.
type FileActivity struct {
	// Written are the files created or modified (absolute paths, sorted).
	Written []string `json:"written,omitempty"`
	// Deleted are the files removed.
	Deleted []string `json:"deleted,omitempty"`
	// Chmod are the files whose mode, owner or extended attributes changed.
	Chmod []string `json:"chmod,omitempty"`
	// Read are the files opened and closed without writing.
	Read []string `json:"read,omitempty"`
	// Incomplete: a list was capped, or not every directory was watched.
	Incomplete bool `json:"incomplete,omitempty"`
	// Shared: other commands ran at the same time; some of this may be
	// theirs.
	Shared bool `json:"shared,omitempty"`
}

// Exec is the daemon's record of one command run in a sandbox, redacted.
type Exec struct {
	// ID names the record.
	ID string `json:"id"`
	// SandboxID is the sandbox it ran in.
	SandboxID string `json:"sandbox_id"`
	// Argv is the command.
	Argv []string `json:"argv"`
	// Cwd is its working directory.
	Cwd string `json:"cwd"`
	// EnvNames are the names of the variables the request set (never
	// their values).
	EnvNames []string `json:"env_names,omitempty"`
	// Started is when it started.
	Started time.Time `json:"started"`
	// Ended is when it ended; absent while it runs.
	Ended time.Time `json:"ended,omitzero"`
	// Status is how it ended; absent while it runs or when it never
	// started.
	Status *ExitStatus `json:"status,omitempty"`
	// Error says why it failed to start or run ("code: message").
	Error string `json:"error,omitempty"`
	// Policy is the policy's decision on it.
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

// ExecPolicy is the policy's decision on one exec, in short.
type ExecPolicy struct {
	// Action is "allow", "ask" or "deny".
	Action string `json:"action"`
	// Classes are the command's classes.
	Classes []string `json:"classes"`
	// Rules are the ids of the deciding rules.
	Rules []string `json:"rules,omitempty"`
	// Reason is one line, safe to show.
	Reason string `json:"reason"`
	// Grant names the approvals that let it through.
	Grant []string `json:"grant,omitempty"`
	// BreakGlass names the operator override that let it through.
	BreakGlass string `json:"break_glass,omitempty"`
	// Version is the policy's version.
	Version string `json:"policy"`
}

// ExecList is the answer of GET /v1/sandboxes/{id}/execs.
type ExecList struct {
	// Execs, oldest first.
	Execs []Exec `json:"execs"`
}

// SignalRequest is the body of POST .../execs/{exec}/signal.
type SignalRequest struct {
	// Signal is a number (15) or a name ("TERM", "SIGTERM").
	Signal json.RawMessage `json:"signal"`
}

// InputRequest is the body of POST .../execs/{exec}/input.
type InputRequest struct {
	// Data is typed into the command's stdin, base64.
	Data []byte `json:"data"`
}

// ResizeRequest is the body of POST .../execs/{exec}/resize.
type ResizeRequest struct {
	// Rows is the terminal's new height.
	Rows uint16 `json:"rows"`
	// Cols is its new width.
	Cols uint16 `json:"cols"`
}
