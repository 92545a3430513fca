package manager

import (
	"bytes"
	"context"
	"fmt"
	"syscall"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Running is the handle of exec execID of sandbox id (see sandbox.RunningExec).
func (m *Manager) Running(id, execID string) sandbox.RunningExec {
	return runningHandle{m: m, id: id, execID: execID}
}

type runningHandle struct {
	m          *Manager
	id, execID string
}

// runningOf is the running exec execID of sandbox id, or why not.
func (m *Manager) runningOf(ctx context.Context, id, execID string) (*runningExec, error) {
	m.mu.Lock()
	r, ok := m.running[execID]
	m.mu.Unlock()
	if ok && r.sandboxID == id {
		return r, nil
	}
	if _, err := m.recs.GetExec(ctx, id, execID); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("exec %s has ended: %w", execID, errdefs.ErrConflict)
}

func (h runningHandle) Signal(ctx context.Context, sig syscall.Signal) error {
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("signal %d: %w", sig, errdefs.ErrInvalid)
	}
	r, err := h.m.runningOf(ctx, h.id, h.execID)
	if err != nil {
		return err
	}
	if err := r.p.Signal(sig); err != nil {
		return err
	}
	return h.m.rec.Record(ctx, audit.Entry{SandboxID: h.id, TaskID: r.taskID, ExecID: h.execID, Kind: "exec.signal", Payload: map[string]any{"signal": sig.String()}})
}

func (m *Manager) runningStdin(ctx context.Context, id, execID string) (*runningExec, error) {
	r, err := m.runningOf(ctx, id, execID)
	if err != nil {
		return nil, err
	}
	if r.stdin == nil {
		return nil, fmt.Errorf("exec %s was not started with an open stdin: %w", execID, errdefs.ErrConflict)
	}
	return r, nil
}

func (h runningHandle) Input(ctx context.Context, data []byte) error {
	m, id, execID := h.m, h.id, h.execID
	r, err := m.runningStdin(ctx, id, execID)
	if err != nil {
		return err
	}
	r.stdinMu.Lock()
	defer r.stdinMu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := r.stdin.Write(data)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("exec %s: stdin closed: %w", execID, errdefs.ErrConflict)
		}
		// What is typed into a running command is part of the record, a
		// line at a time: redacted chunk by chunk, a secret typed in
		// pieces would be kept in pieces.
		r.inputMu.Lock()
		defer r.inputMu.Unlock()
		r.inputTail = append(r.inputTail, data...)
		if i := bytes.LastIndexAny(r.inputTail, "\r\n"); i >= 0 || len(r.inputTail) >= maxInputTail {
			n := len(r.inputTail)
			if i >= 0 {
				n = i + 1
			}
			line := r.inputTail[:n]
			r.inputTail = append([]byte(nil), r.inputTail[n:]...)
			return m.recordInput(ctx, id, execID, r, line)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxInputTail is how much typed input without a line end is held before
// it is recorded anyway.
const maxInputTail = 4 << 10

func (m *Manager) recordInput(ctx context.Context, id, execID string, r *runningExec, data []byte) error {
	return m.rec.Record(ctx, audit.Entry{SandboxID: id, TaskID: r.taskID, ExecID: execID, Kind: "exec.input", Payload: map[string]any{"data": audit.Blob(data)}})
}

// flushInput records the typed input still held without a line end. It
// takes inputMu only: an Input blocked writing to a stdin nobody reads
// holds stdinMu, and closing stdin is what releases it.
func (m *Manager) flushInput(ctx context.Context, id, execID string, r *runningExec) error {
	r.inputMu.Lock()
	defer r.inputMu.Unlock()
	if len(r.inputTail) == 0 {
		return nil
	}
	tail := r.inputTail
	r.inputTail = nil
	return m.recordInput(ctx, id, execID, r, tail)
}

func (h runningHandle) CloseStdin(ctx context.Context) error {
	m, id, execID := h.m, h.id, h.execID
	r, err := m.runningStdin(ctx, id, execID)
	if err != nil {
		return err
	}
	cerr := r.stdin.Close()
	if err := m.flushInput(ctx, id, execID, r); err != nil {
		return err
	}
	return cerr
}

func (h runningHandle) Resize(ctx context.Context, rows, cols uint16) error {
	if rows == 0 || cols == 0 {
		return fmt.Errorf("rows and cols must be positive: %w", errdefs.ErrInvalid)
	}
	r, err := h.m.runningOf(ctx, h.id, h.execID)
	if err != nil {
		return err
	}
	rz, ok := r.p.(runtime.Resizer)
	if !ok {
		return fmt.Errorf("exec %s has no terminal: %w", h.execID, errdefs.ErrConflict)
	}
	return rz.Resize(rows, cols)
}
