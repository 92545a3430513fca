package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/execout"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// checkpointEvery is how often a running command's output is stored.
var checkpointEvery = 2 * time.Second

// checkpointOutput stores the output of a running command every
// checkpointEvery (execout.Checkpoints), so that a daemon that dies keeps
// what it had. stop ends it and waits for a store under way: the final
// store comes after.
func (m *Manager) checkpointOutput(execID string, stdout, stderr *execout.Capped) (stop func()) {
	put := func(stream string, b []byte) {
		m.rec.BestEffort("exec "+execID+": checkpoint of its "+stream, m.cfg.Store.PutOutput(context.Background(), execID, stream, b))
	}
	return execout.Checkpoints(checkpointEvery, m.cfg.Redactor, put, execout.Stream{Name: "stdout", Out: stdout}, execout.Stream{Name: "stderr", Out: stderr})
}

// runningExec is a command that has not ended yet.
type runningExec struct {
	p         runtime.Process
	sandboxID string
	taskID    string
	stdin     *io.PipeWriter // nil unless started with OpenStdin
	stdinMu   sync.Mutex
	inputMu   sync.Mutex     // guards inputTail (taken inside stdinMu, never around it)
	inputTail []byte         // typed input not yet recorded (no line end yet)
	keep      map[string]any // the ExecHooks' state (ExecCall.Keep), by module
}

// finishExec waits for a command and records how it ended, in steps:
// wait, store its output, the after-exec steps (typed input, package
// evidence, modules), exec.end, then its exec record.
func (m *Manager) finishExec(ctx context.Context, rec *store.Exec, p runtime.Process, outKeep, errKeep *execout.Capped) (string, *runtime.ExitStatus, error) {
	defer m.dropRunning(rec.ID)
	stopCheckpoints := m.checkpointOutput(rec.ID, outKeep, errKeep)
	st, err := waitExec(ctx, p)
	stopCheckpoints()
	ended := time.Now().UTC()
	stdout := outKeep.Redacted(m.cfg.Redactor)
	stderr := errKeep.Redacted(m.cfg.Redactor)
	for _, o := range [2]struct {
		name string
		b    []byte
	}{{"stdout", stdout}, {"stderr", stderr}} {
		// No output, no write (two of the four store writes of a quiet
		// command): a stream never stored reads as empty (GetOutput), and
		// output only grows, so no checkpoint stored more.
		if len(o.b) > 0 {
			m.rec.BestEffort("exec "+rec.ID+": store its "+o.name, m.cfg.Store.PutOutput(context.Background(), rec.ID, o.name, o.b))
		}
	}
	taskID := m.afterExec(ctx, rec, st, err)
	endPayload := map[string]any{"stdout": audit.Blob(stdout), "stderr": audit.Blob(stderr), "ended": ended}
	if err != nil {
		endPayload["error"] = err.Error()
	} else {
		endPayload["status"] = st
	}
	// The end is recorded off the exec's critical path (its start was
	// recorded before it ran); readers of the log wait for it.
	m.rec.RecordAsync(ctx, audit.Entry{SandboxID: rec.SandboxID, TaskID: taskID, ExecID: rec.ID, Kind: "exec.end", Payload: endPayload})
	if err == nil {
		// The audit log broke while the command ran (its network was cut
		// then): the caller is told, not shown a plain success.
		if herr := m.rec.Healthy(); herr != nil {
			err = fmt.Errorf("the command ended (exit code %d), but its record is incomplete: %w", st.Code, herr)
		}
	}
	if err != nil {
		m.rec.BestEffort("exec "+rec.ID+": record its end", m.recs.EndExec(context.Background(), rec.ID, ended, nil, err.Error()))
		return rec.ID, nil, err
	}
	stJSON, _ := json.Marshal(st)
	// (endExec redacts its file activity: paths may hold a secret.)
	if ferr := m.recs.EndExec(context.Background(), rec.ID, ended, stJSON, ""); ferr != nil {
		return rec.ID, &st, ferr
	}
	return rec.ID, &st, nil
}

// dropRunning forgets an ended command (its open stdin closed).
func (m *Manager) dropRunning(execID string) {
	m.mu.Lock()
	if r := m.running[execID]; r != nil && r.stdin != nil {
		r.stdin.Close()
	}
	delete(m.running, execID)
	m.mu.Unlock()
}

// waitExec waits for a command's end. When the caller goes away first,
// the command must not outlive the request: it is killed, and its end
// waited for (10 s at most).
func waitExec(ctx context.Context, p runtime.Process) (runtime.ExitStatus, error) {
	st, err := p.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		_ = p.Signal(syscall.SIGKILL)
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err = p.Wait(wctx)
		cancel()
	}
	return st, err
}

// afterExec runs what comes after a command's output is stored and
// before its exec.end: its typed input still held is recorded, and the
// modules' AfterExecHooks run, each with what it kept of the exec
// (ExecCall.Keep). It returns the exec's task.
func (m *Manager) afterExec(ctx context.Context, rec *store.Exec, st runtime.ExitStatus, err error) (taskID string) {
	m.mu.Lock()
	var keep map[string]any
	r := m.running[rec.ID]
	if r != nil {
		taskID, keep = r.taskID, r.keep
	}
	m.mu.Unlock()
	if r != nil {
		m.rec.BestEffort("exec "+rec.ID+": record its typed input", m.flushInput(context.WithoutCancel(ctx), rec.SandboxID, rec.ID, r))
	}
	for _, h := range m.hooks.AfterExec {
		done := hook.ExecDone{SandboxID: rec.SandboxID, TaskID: taskID, ExecID: rec.ID, Argv: rec.Argv, Err: err, Keep: keep[h.Name]}
		if err == nil {
			done.Status = &st
		}
		h.Hook.AfterExec(context.WithoutCancel(ctx), done)
	}
	return taskID
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
