package manager

import (
	"bytes"
	"context"
	"fmt"
	"syscall"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Signal sends sig to a running command's process group.
func (m *Manager) Signal(ctx context.Context, id, execID string, sig syscall.Signal) error {
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("signal %d: %w", sig, errdefs.ErrInvalid)
	}
	m.mu.Lock()
	r, ok := m.running[execID]
	m.mu.Unlock()
	if !ok || r.sandboxID != id {
		if _, err := m.GetExec(ctx, id, execID); err != nil {
			return err
		}
		return fmt.Errorf("exec %s has ended: %w", execID, errdefs.ErrConflict)
	}
	if err := r.p.Signal(sig); err != nil {
		return err
	}
	return m.record(ctx, audit.Entry{SandboxID: id, TaskID: r.taskID, ExecID: execID, Kind: "exec.signal", Payload: map[string]any{"signal": sig.String()}})
}

func (m *Manager) runningStdin(ctx context.Context, id, execID string) (*runningExec, error) {
	m.mu.Lock()
	r, ok := m.running[execID]
	m.mu.Unlock()
	if !ok || r.sandboxID != id {
		if _, err := m.GetExec(ctx, id, execID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("exec %s has ended: %w", execID, errdefs.ErrConflict)
	}
	if r.stdin == nil {
		return nil, fmt.Errorf("exec %s was not started with an open stdin: %w", execID, errdefs.ErrConflict)
	}
	return r, nil
}

// Input writes data to a running command's open stdin. It blocks while
// the command does not read (as a pipe would), up to ctx.
func (m *Manager) Input(ctx context.Context, id, execID string, data []byte) error {
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
	return m.record(ctx, audit.Entry{SandboxID: id, TaskID: r.taskID, ExecID: execID, Kind: "exec.input", Payload: map[string]any{"data": audit.Blob(data)}})
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

// CloseStdin closes a running command's open stdin (it reads end of file).
func (m *Manager) CloseStdin(ctx context.Context, id, execID string) error {
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

// Resize sets the window of a running command's terminal.
func (m *Manager) Resize(ctx context.Context, id, execID string, rows, cols uint16) error {
	if rows == 0 || cols == 0 {
		return fmt.Errorf("rows and cols must be positive: %w", errdefs.ErrInvalid)
	}
	m.mu.Lock()
	r, ok := m.running[execID]
	m.mu.Unlock()
	if !ok || r.sandboxID != id {
		if _, err := m.GetExec(ctx, id, execID); err != nil {
			return err
		}
		return fmt.Errorf("exec %s has ended: %w", execID, errdefs.ErrConflict)
	}
	rz, ok := r.p.(runtime.Resizer)
	if !ok {
		return fmt.Errorf("exec %s has no terminal: %w", execID, errdefs.ErrConflict)
	}
	return rz.Resize(rows, cols)
}
