package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

type execIn struct {
	SandboxID           string  `json:"sandbox_id"`
	Command             string  `json:"command"`
	Cwd                 string  `json:"cwd,omitempty" jsonschema:"default /workspace"`
	TimeoutSeconds      float64 `json:"timeout_seconds,omitempty" jsonschema:"default 600"`
	WaitSeconds         float64 `json:"wait_seconds,omitempty" jsonschema:"then answer with exec_id (default 45)"`
	ApprovalWaitSeconds float64 `json:"approval_wait_seconds,omitempty" jsonschema:"wait for a human (default 0)"`
	Background          bool    `json:"background,omitempty" jsonschema:"answer at once with exec_id"`
	StdinOpen           bool    `json:"stdin_open,omitempty" jsonschema:"with background: stdin for exec_input"`
}

// execOut is an exec's structured result. The output itself is in the
// text content only: a result carries it once.
type execOut struct {
	ExecID        string `json:"exec_id,omitempty"`
	Running       bool   `json:"running,omitempty"`
	ExitCode      *int   `json:"exit_code,omitempty"`
	Limit         string `json:"limit,omitempty"`
	StdoutBytes   int64  `json:"stdout_bytes,omitempty"`
	StderrBytes   int64  `json:"stderr_bytes,omitempty"`
	OmittedBytes  int64  `json:"omitted_bytes,omitempty"`
	ApprovalID    string `json:"approval_id,omitempty"`
	ApprovalState string `json:"approval_state,omitempty"`
	Reason        string `json:"reason,omitempty"`
	Code          string `json:"code,omitempty"`
}

// seconds checks a duration argument: 0 to 86400 seconds.
func seconds(name string, v float64) (time.Duration, error) {
	if v < 0 || v > 86400 {
		return 0, fmt.Errorf("%s must be 0 to 86400 seconds", name)
	}
	return time.Duration(v * float64(time.Second)), nil
}

func need(name, v string) error {
	if v == "" {
		return fmt.Errorf("argument %q must not be empty", name)
	}
	return nil
}

// heldKey names a command that was held for a human in this session.
func heldKey(sandbox, cwd string, argv []string) string {
	return sandbox + "\x00" + cwd + "\x00" + strings.Join(argv, "\x00")
}

// held remembers, per session, the approval each held command made, so
// that an identical retry joins it rather than asking the human again.
type held struct {
	mu sync.Mutex
	m  map[string]string
}

func (h *held) get(k string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[k]
}

func (h *held) set(k, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= 4096 { // forgetting only costs a second request to the human
		h.m = map[string]string{}
	}
	if id == "" {
		delete(h.m, k)
		return
	}
	h.m[k] = id
}

func (s *Server) exec(ctx context.Context, req *mcpsdk.CallToolRequest, in execIn) (*mcpsdk.CallToolResult, execOut, error) {
	if err := errors.Join(need("sandbox_id", in.SandboxID), need("command", in.Command)); err != nil {
		return nil, execOut{}, err
	}
	timeout, err := seconds("timeout_seconds", in.TimeoutSeconds)
	if err != nil {
		return nil, execOut{}, err
	}
	if timeout == 0 {
		timeout = s.execTimeout()
	}
	wait, err := seconds("wait_seconds", in.WaitSeconds)
	if err != nil {
		return nil, execOut{}, err
	}
	if wait == 0 {
		wait = defaultWait
	}
	apWait, err := seconds("approval_wait_seconds", in.ApprovalWaitSeconds)
	if err != nil {
		return nil, execOut{}, err
	}
	if in.StdinOpen && !in.Background {
		return nil, execOut{}, errors.New("stdin_open needs background: true")
	}
	argv := []string{"/bin/sh", "-c", in.Command}
	ereq := sdk.ExecRequest{Argv: argv, Cwd: in.Cwd, Timeout: timeout, NoApprovalWait: true}
	key := heldKey(in.SandboxID, in.Cwd, argv)
	prog := newProgress(req)
	// An identical retry of a held command joins its approval: the human
	// is asked once, and a denial answers every retry with its reason.
	if id := s.held.get(key); id != "" {
		a, err := s.awaitApproval(ctx, id, apWait, prog)
		if err != nil {
			return nil, execOut{}, err
		}
		if a.State != "approved" {
			if a.State == "expired" {
				s.held.set(key, "") // a new request may ask again
			}
			return approvalResult(a, true), approvalOut(a), nil
		}
		s.held.set(key, "") // approved: its grant lets the command run
	}
	for attempt := 0; ; attempt++ {
		res, out, err := s.runExec(ctx, req, in, ereq, wait, prog)
		var e *sdk.Error
		if err == nil || !errors.As(err, &e) || !sdk.IsApprovalPending(err) || attempt > 0 {
			if err != nil && ctx.Err() == nil {
				return s.execErr(err)
			}
			return res, out, err
		}
		s.held.set(key, e.ApprovalID)
		a, aerr := s.awaitApproval(ctx, e.ApprovalID, apWait, prog)
		if aerr != nil {
			return nil, execOut{}, aerr
		}
		if a.State != "approved" {
			return approvalResult(a, false), approvalOut(a), nil
		}
		s.held.set(key, "")
	}
}

// awaitApproval returns the approval once decided, or as it is after
// wait (0: at once), reporting progress while it waits.
func (s *Server) awaitApproval(ctx context.Context, id string, wait time.Duration, prog *progress) (*sdk.Approval, error) {
	deadline := time.Now().Add(wait)
	for {
		a, err := s.Client.GetApproval(ctx, id)
		if err != nil || a.State != "pending" || !time.Now().Before(deadline) {
			return a, err
		}
		prog.Send(ctx, "waiting for a human to decide approval "+id)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(pollEvery, time.Until(deadline))):
		}
	}
}

func approvalOut(a *sdk.Approval) execOut {
	return execOut{ApprovalID: a.ID, ApprovalState: a.State, Reason: a.Reason, Code: "approval_" + a.State}
}

func approvalResult(a *sdk.Approval, joined bool) *mcpsdk.CallToolResult {
	var msg string
	switch a.State {
	case "pending":
		msg = "pending approval " + a.ID
		if joined {
			msg += " (this command's earlier request; not asked again)"
		}
		why := ""
		if a.Prompt != nil {
			why = a.Prompt.Reason
		}
		msg += ": " + why + ". A human decides (airlock approve/deny). Call exec again with the same command " +
			"(approval_wait_seconds to wait) or get_approval to learn the decision."
	case "denied":
		msg = "denied by " + a.DecidedBy + " (approval " + a.ID + ")"
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
		msg += ". Do not retry this command."
	default:
		msg = "approval " + a.ID + " " + a.State + " undecided; calling exec again asks again"
	}
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: msg}}, IsError: true}
}

// runExec runs one command. In the background it answers at once with
// the exec id; otherwise it waits up to wait, reporting progress (the
// last output line) each second, and then answers with the exec id while
// the command runs on. Cancelling ctx (notifications/cancelled, or the
// client going away) before that kills the command.
func (s *Server) runExec(ctx context.Context, req *mcpsdk.CallToolRequest, in execIn, ereq sdk.ExecRequest, wait time.Duration, prog *progress) (*mcpsdk.CallToolResult, execOut, error) {
	if in.Background {
		st, err := s.Client.ExecBackground(ctx, in.SandboxID, ereq, in.StdinOpen)
		if err != nil {
			return nil, execOut{}, err
		}
		return textResult(fmt.Sprintf("started exec %s (pid %d); read its output with exec_output", st.ExecID, st.PID)), execOut{ExecID: st.ExecID, Running: true}, nil
	}
	var mu sync.Mutex
	stdout, stderr := newHeadTail(headBytes, tailBytes), newHeadTail(headBytes, tailBytes)
	var execID string
	ereq.Started = func(id string) {
		mu.Lock()
		execID = id
		mu.Unlock()
		s.live.Store(id, &liveExec{&mu, stdout, stderr})
	}
	// The command's own context: cancelled with the call's until the
	// call hands it off, then left to end on its own (its timeout).
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	type ended struct {
		st  *sdk.ExitStatus
		err error
	}
	done := make(chan ended, 1)
	go func() {
		defer cancel()
		st, err := s.Client.Exec(runCtx, in.SandboxID, ereq, lockedWriter{&mu, stdout}, lockedWriter{&mu, stderr})
		mu.Lock()
		if execID != "" {
			s.live.Delete(execID) // ended: the daemon has all of it now
		}
		mu.Unlock()
		done <- ended{st, err}
	}()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	soft := time.NewTimer(wait)
	defer soft.Stop()
	for {
		select {
		case e := <-done:
			if e.err != nil {
				return nil, execOut{}, e.err
			}
			mu.Lock()
			defer mu.Unlock()
			return execResult(e.st, stdout, stderr)
		case <-ctx.Done():
			cancel()
			<-done
			return nil, execOut{}, ctx.Err()
		case <-tick.C:
			mu.Lock()
			line := stdout.LastLine()
			if l := stderr.LastLine(); line == "" {
				line = l
			}
			mu.Unlock()
			prog.Send(ctx, line)
		case <-soft.C:
			mu.Lock()
			id := execID
			mu.Unlock()
			if id == "" {
				soft.Reset(time.Second) // not started yet: it cannot be named
				continue
			}
			return textResult(fmt.Sprintf("exec %s still running after %s; it runs on (timeout %s). Poll it with exec_output (wait_seconds to wait), stop it with exec_kill.",
				id, wait.Round(time.Second), ereq.Timeout)), execOut{ExecID: id, Running: true}, nil
		}
	}
}

// liveExec is what this server has seen of a command it handed off
// while it runs: the daemon stores a running command's output only up to
// 64 KiB behind its end (redaction needs the lookahead), so a poll is
// answered from here until the command ends.
type liveExec struct {
	mu             *sync.Mutex
	stdout, stderr *headTail
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *headTail
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func execResult(st *sdk.ExitStatus, stdout, stderr *headTail) (*mcpsdk.CallToolResult, execOut, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "exit code %d", st.Code)
	if st.Limit != "" {
		fmt.Fprintf(&b, " (limit hit: %s)", st.Limit)
	}
	out := execOut{ExecID: st.ExecID, ExitCode: &st.Code, Limit: st.Limit, StdoutBytes: st.StdoutBytes, StderrBytes: st.StderrBytes}
	for _, s := range []struct {
		name string
		h    *headTail
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if s.h.total == 0 {
			continue
		}
		c := s.h.Cut()
		out.OmittedBytes += c.OmittedBytes
		fmt.Fprintf(&b, "\n%s:\n%s", s.name, c.Text)
	}
	if st.StdoutTruncated || st.StderrTruncated {
		b.WriteString("\n[the daemon stored only the first part of the output: over its output limit]")
	}
	res := textResult(b.String())
	res.IsError = st.Code != 0
	return res, out, nil
}

// execErr is a command that did not run: a policy denial or a held
// command are results the model should see, with their ids.
func (s *Server) execErr(err error) (*mcpsdk.CallToolResult, execOut, error) {
	var e *sdk.Error
	if !errors.As(err, &e) {
		return nil, execOut{}, err
	}
	out := execOut{Code: e.Code, ApprovalID: e.ApprovalID}
	res := textResult(err.Error())
	res.IsError = true
	return res, out, nil
}

func textResult(s string) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: s}}}
}
