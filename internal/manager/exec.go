package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/internal/recorder"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/execout"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// execPipeline is the order every exec goes through, in one place. Each
// stage may end the exec with an error; nothing reaches the sandbox before
// "run", and "run" records the command before it starts it.
var execPipeline = []execStage{
	{"admit", (*Manager).execAdmit},     // the sandbox may run it: live, state, audit log
	{"policy", (*Manager).execPolicy},   // the policy's decision (a held exec waits here)
	{"modules", (*Manager).execModules}, // Config.Modules' ExecHooks, in order (evidence: review)
	{"secrets", (*Manager).execSecrets}, // SecretSource modules' env joins the environment
	{"run", (*Manager).execStart},       // record, start, wait (or not: Background)
}

// execStage is one named step of execPipeline.
type execStage struct {
	name string
	run  func(m *Manager, ctx context.Context, x *execRun) error
}

// execRun is one exec on its way through execPipeline.
type execRun struct {
	id  string
	req sandbox.ExecRequest
	// taskTest: the task's own test command (Core.ExecTaskTest).
	taskTest bool
	cwd      string
	started  func(execID string, pid int)
	stdout   io.Writer
	stderr   io.Writer

	ls        *live
	sb        runtime.Sandbox
	d         *policy.Decision
	env       []string         // added to req.Env (secrets, then daemonEnv)
	daemonEnv []string         // the ExecHooks' ExecCall.DaemonEnv
	uses      []map[string]any // the secrets it was given, for its record
	keep      map[string]any   // the ExecHooks' ExecCall.Keep, by module

	execID string
	status *runtime.ExitStatus
}

// Exec runs a command, streaming its output to stdout and stderr, and
// records it. started is called with the exec id and pid before any
// output is written.
func (m *Manager) Exec(ctx context.Context, id string, req sandbox.ExecRequest, started func(execID string, pid int), stdout, stderr io.Writer) (string, *runtime.ExitStatus, error) {
	return m.exec(ctx, id, req, false, started, stdout, stderr)
}

// exec is Exec, of the task's own test command if taskTest (see
// Core.ExecTaskTest).
func (m *Manager) exec(ctx context.Context, id string, req sandbox.ExecRequest, taskTest bool, started func(execID string, pid int), stdout, stderr io.Writer) (string, *runtime.ExitStatus, error) {
	x := &execRun{id: id, req: req, taskTest: taskTest, started: started, stdout: stdout, stderr: stderr}
	defer m.endOneShot(ctx, x)
	for _, s := range execPipeline {
		if err := s.run(m, ctx, x); err != nil {
			return x.execID, x.status, err
		}
	}
	return x.execID, x.status, nil
}

func (m *Manager) execAdmit(ctx context.Context, x *execRun) error {
	if err := sandbox.CheckExec(x.req); err != nil {
		return err
	}
	if _, err := m.runtimeSandbox(ctx, x.id); err != nil {
		return err
	}
	m.mu.Lock()
	ls := m.live[x.id]
	finishing := ls != nil && ls.state == sandbox.Finishing
	m.mu.Unlock()
	if ls == nil {
		return fmt.Errorf("sandbox %s is stopped: %w", x.id, errdefs.ErrConflict)
	}
	x.cwd = defaultCwd(x.req.Cwd, ls.base.WorkDir, ls.taskID != "")
	if ls.oneShot && x.req.Background {
		// its end would destroy the sandbox under nobody's watch
		return fmt.Errorf("a one-shot sandbox runs its command in the foreground only: %w", errdefs.ErrUnsupported)
	}
	x.ls = ls
	m.mu.Lock()
	ls.execd = true
	m.mu.Unlock()
	if finishing && !x.taskTest {
		return sandbox.FinishingError(ls.taskID)
	}
	if err := m.rec.Healthy(); err != nil {
		return err
	}
	if err := m.hooks.AdmitExec(ctx, ls.rec.Project); err != nil {
		return err // a project's quota (hook.Admitter): not recorded
	}
	return m.learnSecrets(x.req.Env)
}

// defaultCwd is where an exec starts: the cwd it names; else, in a
// task's sandbox, /workspace, where the task's repository is (a task's
// commands act on it, whatever the image's WorkingDir); else its
// template's working directory (an image's WorkingDir, a build's
// WORKDIR); else /workspace. The policy sees the same cwd as the command.
func defaultCwd(cwd, templateDir string, task bool) string {
	switch {
	case cwd != "":
		return cwd
	case templateDir != "" && !task:
		return templateDir
	}
	return "/workspace"
}

// execPolicy: policy first, nothing reaches the sandbox before it is
// allowed.
func (m *Manager) execPolicy(ctx context.Context, x *execRun) error {
	d, err := m.gate(ctx, x.id, x.ls, x.req, x.taskTest, x.cwd)
	if err != nil {
		return err
	}
	x.d = d
	x.sb, err = m.runtimeSandbox(ctx, x.id) // a held exec may outlive its sandbox
	return err
}

func (m *Manager) execModules(ctx context.Context, x *execRun) error {
	if len(m.hooks.Exec) == 0 {
		return nil
	}
	call := &hook.ExecCall{SandboxID: x.id, TaskID: x.ls.taskID, Argv: slices.Clone(x.req.Argv), Cwd: x.cwd, Env: slices.Clone(x.req.Env), Analysis: x.d.Analysis}
	for _, h := range m.hooks.Exec {
		call.Keep = nil
		if err := h.Hook.BeforeExec(ctx, call); err != nil {
			msg := fmt.Sprintf("refused by module %s: %v", h.Name, err)
			m.recordRefusal(ctx, x.id, x.req, x.cwd, x.d, msg)
			return fmt.Errorf("%s: %w", msg, errdefs.ErrDenied)
		}
		if call.Keep != nil {
			if x.keep == nil {
				x.keep = map[string]any{}
			}
			x.keep[h.Name] = call.Keep
		}
	}
	for _, env := range [][]string{call.Env, call.DaemonEnv} {
		if err := reqcheck.Env(env); err != nil {
			return fmt.Errorf("the env the modules made: %w", err)
		}
		if err := m.learnSecrets(env); err != nil { // a hook may have added one
			return err
		}
	}
	x.req.Env, x.daemonEnv = call.Env, call.DaemonEnv
	return nil
}

// execSecrets: secrets granted to the sandbox join the command's
// environment (SecretSource modules: values for env grants, placeholders
// for brokered ones).
func (m *Manager) execSecrets(ctx context.Context, x *execRun) error {
	senv, uses, err := m.hooks.SecretEnv(ctx, hook.SandboxRef{ID: x.id, TaskID: x.ls.taskID})
	if err != nil {
		return err
	}
	x.env, x.uses = append(senv, x.daemonEnv...), uses
	return nil
}

// execStart records the command (fail closed: what is not recorded does
// not run), then starts it and waits for it unless it runs in the
// background.
func (m *Manager) execStart(ctx context.Context, x *execRun) error {
	req, ls := x.req, x.ls
	rec, err := m.recordStart(ctx, x)
	if err != nil {
		return err
	}
	x.execID = rec.ID
	var stdinW *io.PipeWriter
	if req.OpenStdin {
		var pr *io.PipeReader
		pr, stdinW = io.Pipe()
		req.Stdin = pr
	}
	outKeep, errKeep := execout.NewCapped(m.cfg.StoredOutput), execout.NewCapped(m.cfg.StoredOutput)
	gate := execout.NewGate()
	outW := gate.Writer(io.MultiWriter(outKeep, execout.OrDiscard(x.stdout)))
	errW := gate.Writer(io.MultiWriter(errKeep, execout.OrDiscard(x.stderr)))
	m.mu.Lock()
	if ls.state == sandbox.Finishing && !x.taskTest {
		// admitted before its task's finish began: it must not start now
		// (BeginFinishing waits for the starts already past this point)
		m.mu.Unlock()
		gate.Open()
		err := sandbox.FinishingError(ls.taskID)
		m.recordNotStarted(ctx, x, err)
		return err
	}
	ls.starting++
	env := ls.claimEnvOf(x.sb)
	m.mu.Unlock()
	env = append(append(env, req.Env...), x.env...)
	p, err := x.sb.Exec(ctx, runtime.ExecRequest{
		Argv: req.Argv, Env: env, Dir: x.cwd, Timeout: req.Timeout, Stdin: req.Stdin,
		Stdout: outW, Stderr: errW, OutputLimit: req.OutputLimit, TTY: req.TTY, Rows: req.Rows, Cols: req.Cols,
	})
	if err != nil {
		m.mu.Lock()
		ls.starting--
		m.mu.Unlock()
		gate.Open()
		if stdinW != nil {
			stdinW.Close()
		}
		m.recordNotStarted(ctx, x, err)
		return err
	}
	m.mu.Lock()
	m.running[rec.ID] = &runningExec{p: p, sandboxID: x.id, stdin: stdinW, taskID: ls.taskID, keep: x.keep}
	ls.starting--
	m.mu.Unlock()
	if x.started != nil {
		x.started(rec.ID, p.PID())
	}
	gate.Open()
	if req.Background {
		go func() { _, _, _ = m.finishExec(context.Background(), rec, p, outKeep, errKeep) }()
		return nil
	}
	_, x.status, err = m.finishExec(ctx, rec, p, outKeep, errKeep)
	return err
}

// recordStart records an exec before it starts (recordFirst): its
// exec.start event, then its exec record, argv and decision redacted.
func (m *Manager) recordStart(ctx context.Context, x *execRun) (*store.Exec, error) {
	req := x.req
	dj := mustJSON(x.d) // PutExec redacts it (redacted.RawJSON: values, not the field names)
	argv := make([]string, len(req.Argv))
	for i, a := range req.Argv {
		argv[i] = m.cfg.Redactor.String(a)
	}
	rec := &store.Exec{ID: newExecID(), SandboxID: x.id, Argv: argv, Cwd: x.cwd, EnvNames: envNames(req.Env), Started: time.Now().UTC(), Decision: dj}
	if err := recorder.RecordFirst("", m.rec.Record(ctx, audit.Entry{SandboxID: x.id, TaskID: x.ls.taskID, ExecID: rec.ID, Kind: "exec.start", Payload: map[string]any{
		"argv": argv, "cwd": x.cwd, "env_names": rec.EnvNames, "tty": req.TTY, "background": req.Background, "decision": sandbox.DecisionPayload(x.d), "secrets": x.uses}})); err != nil {
		return nil, err
	}
	if err := recorder.RecordFirst("record exec", m.recs.PutExec(ctx, rec)); err != nil {
		return nil, err
	}
	return rec, nil
}

// recordNotStarted ends the record of a command that could not start. It
// still gets the status a shell would give it (127 not found, 126 not
// executable).
func (m *Manager) recordNotStarted(ctx context.Context, x *execRun, err error) {
	var stJSON json.RawMessage
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		stJSON, _ = json.Marshal(runtime.ExitStatus{Code: coded.ExitCode()})
	}
	m.rec.BestEffort("exec "+x.execID+": record its end", m.recs.EndExec(context.Background(), x.execID, time.Now().UTC(), stJSON, err.Error()))
	m.rec.BestEffort("exec "+x.execID+": record exec.end", m.rec.Record(context.WithoutCancel(ctx), audit.Entry{SandboxID: x.id, TaskID: x.ls.taskID, ExecID: x.execID, Kind: "exec.end",
		Payload: map[string]any{"error": err.Error(), "status": json.RawMessage(orNull(stJSON)), "started": false}}))
}

func newExecID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "e-" + hex.EncodeToString(b[:])
}
