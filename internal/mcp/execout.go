package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

// Paging of stored output: what one exec_output call returns at most.
const (
	defaultPage = 16 << 10
	maxPage     = 64 << 10
)

type outputIn struct {
	SandboxID   string  `json:"sandbox_id"`
	ExecID      string  `json:"exec_id"`
	Stream      string  `json:"stream,omitempty" jsonschema:"stdout (default) or stderr"`
	Offset      int64   `json:"offset,omitempty"`
	Limit       int     `json:"limit,omitempty" jsonschema:"default 16384, max 65536"`
	Tail        int     `json:"tail,omitempty" jsonschema:"last N bytes instead"`
	WaitSeconds float64 `json:"wait_seconds,omitempty" jsonschema:"wait for its end"`
}

type outputOut struct {
	Running     bool   `json:"running"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	Limit       string `json:"limit,omitempty"`
	Offset      int64  `json:"offset"`
	NextOffset  int64  `json:"next_offset"`
	TotalBytes  int64  `json:"total_bytes"`
	StoredAll   bool   `json:"stored_all"`
	Description string `json:"error,omitempty"`
}

// execOutput reads a command's stored output by page or tail, and says
// whether it still runs: the poll of an exec that outlived its call.
func (s *Server) execOutput(ctx context.Context, req *mcpsdk.CallToolRequest, in outputIn) (*mcpsdk.CallToolResult, outputOut, error) {
	if err := errors.Join(need("sandbox_id", in.SandboxID), need("exec_id", in.ExecID)); err != nil {
		return nil, outputOut{}, err
	}
	if in.Stream == "" {
		in.Stream = sdk.Stdout
	}
	if in.Stream != sdk.Stdout && in.Stream != sdk.Stderr {
		return nil, outputOut{}, fmt.Errorf("stream %q: want stdout or stderr", in.Stream)
	}
	if in.Offset < 0 || in.Limit < 0 || in.Tail < 0 || in.Limit > maxPage || in.Tail > maxPage {
		return nil, outputOut{}, fmt.Errorf("offset, limit and tail must not be negative; limit and tail at most %d", maxPage)
	}
	wait, err := seconds("wait_seconds", in.WaitSeconds)
	if err != nil {
		return nil, outputOut{}, err
	}
	e, err := s.awaitExec(ctx, in.SandboxID, in.ExecID, wait, newProgress(req))
	if err != nil {
		return nil, outputOut{}, err
	}
	if v, ok := s.live.Load(in.ExecID); ok && e.Ended.IsZero() {
		return liveOutput(in, v.(*liveExec))
	}
	b, err := s.Client.ExecOutput(ctx, in.SandboxID, in.ExecID, in.Stream)
	if err != nil {
		return nil, outputOut{}, err
	}
	out := outputOut{Running: e.Ended.IsZero(), TotalBytes: int64(len(b)), StoredAll: true, Description: e.Error}
	if e.Status != nil {
		out.ExitCode, out.Limit = &e.Status.Code, e.Status.Limit
		out.StoredAll = !(in.Stream == sdk.Stdout && e.Status.StdoutTruncated || in.Stream == sdk.Stderr && e.Status.StderrTruncated)
	}
	var chunk []byte
	var next int
	if in.Tail > 0 {
		// Cut forward to a line's start, unless the tail already begins
		// at one (a whole line is not dropped for being whole).
		start := max(0, len(b)-in.Tail)
		if i := bytes.IndexByte(b[start:], '\n'); start > 0 && b[start-1] != '\n' && i >= 0 && start+i+1 < len(b) {
			start += i + 1
		}
		chunk, next, out.Offset = b[start:], len(b), int64(start)
	} else {
		limit := in.Limit
		if limit == 0 {
			limit = defaultPage
		}
		chunk, next = page(b, int(min(in.Offset, int64(len(b)))), limit)
		out.Offset = min(in.Offset, int64(len(b)))
	}
	out.NextOffset = int64(next)
	state := "running"
	if !out.Running {
		state = "ended"
		if out.ExitCode != nil {
			state = fmt.Sprintf("ended, exit code %d", *out.ExitCode)
		}
	}
	head := fmt.Sprintf("[exec %s %s; %s bytes %d-%d of %d]\n", in.ExecID, state, in.Stream, out.Offset, next, len(b))
	return textResult(head + validText(chunk)), out, nil
}

// awaitExec returns the exec's record once it has ended, or as it is
// after wait.
func (s *Server) awaitExec(ctx context.Context, sandbox, id string, wait time.Duration, prog *progress) (*sdk.Exec, error) {
	deadline := time.Now().Add(wait)
	step := 50 * time.Millisecond
	for {
		e, err := s.Client.GetExec(ctx, sandbox, id)
		if err != nil || !e.Ended.IsZero() || !time.Now().Before(deadline) {
			return e, err
		}
		prog.Send(ctx, "exec "+id+" running")
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(step, time.Until(deadline))):
		}
		step = min(2*step, time.Second)
	}
}

// liveOutput answers for a running command this server handed off: its
// head and tail as seen so far (offsets are read once it has ended).
func liveOutput(in outputIn, l *liveExec) (*mcpsdk.CallToolResult, outputOut, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.stdout
	if in.Stream == sdk.Stderr {
		h = l.stderr
	}
	c := h.Cut()
	out := outputOut{Running: true, TotalBytes: h.total, NextOffset: h.total, StoredAll: true}
	head := fmt.Sprintf("[exec %s running; %s so far: %d bytes, head and tail shown; read by offset once it ends]\n", in.ExecID, in.Stream, h.total)
	return textResult(head + c.Text), out, nil
}
