package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/agent"
	"github.com/airlock-dev/airlock/internal/cgroups"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/tarball"
)

// ErrStopped is returned for operations on a sandbox that has stopped.
var ErrStopped = fmt.Errorf("sandbox stopped: %w", errdefs.ErrNotFound)

type sandbox struct {
	b       *Backend
	id      string
	dir     string
	lim     runtime.Limits
	created time.Time
	baseEnv []string

	madeDir  bool
	lock     *os.File
	slot     int
	slotLock *os.File
	uidBase  int
	cg       *cgroups.Group
	pidsSub  *cgroups.PidsSub // v1: the commands' own pids group
	cmd      *exec.Cmd
	initPID  int
	exited   chan struct{}
	conn     *agent.Conn

	landlockABI int
	seccomp     string
	scopeMu     sync.Mutex
	scope       *runtime.ScopeInfo // nil until RestrictWrites
	lifeMu      sync.Mutex
	lifeTimer   *time.Timer

	nextID  atomic.Uint64
	pmu     sync.Mutex
	pending map[uint64]chan *agent.Message

	doneOnce sync.Once
	done     chan struct{}
	destroy  sync.Once
	destErr  error
}

func (s *sandbox) ID() string             { return s.id }
func (s *sandbox) Done() <-chan struct{}  { return s.done }
func (s *sandbox) markDone()              { s.doneOnce.Do(func() { close(s.done) }) }
func (s *sandbox) Cgroup() *cgroups.Group { return s.cg }
func (s *sandbox) InitPID() int           { return s.initPID }
func (s *sandbox) Limits() runtime.Limits { return s.lim }
func (s *sandbox) stopped() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *sandbox) Info() runtime.Info {
	boundary := "linux namespaces + seccomp"
	if s.landlockABI > 0 {
		boundary += " + landlock"
	}
	return runtime.Info{
		ID: s.id, Backend: "native", Created: s.created, Limits: s.lim,
		Isolation: runtime.Isolation{
			Boundary:    boundary,
			Namespaces:  []string{"user", "mount", "pid", "net", "ipc", "uts", "cgroup"},
			UIDBase:     s.uidBase,
			Seccomp:     s.seccomp,
			LandlockABI: s.landlockABI,
			Cgroup:      s.b.CgroupMode(),
			WriteScope:  s.writeScope(),
		},
	}
}

// readLoop dispatches agent messages to the waiting requests.
func (s *sandbox) readLoop() {
	for {
		m, files, err := s.conn.Recv()
		if err != nil {
			break
		}
		// Only a started message may carry a descriptor (a terminal).
		if m.Op == agent.OpStarted && len(files) == 1 {
			m.Passed = files
		} else {
			for _, f := range files {
				f.Close()
			}
		}
		s.pmu.Lock()
		ch := s.pending[m.ID]
		s.pmu.Unlock()
		if ch == nil {
			closePassed(m)
			continue
		}
		// Never block on a waiter: the agent is inside the boundary, and a
		// flood of answers to one id must not wedge this loop. Acks (done)
		// beyond the buffer are dropped; the end of a command is not.
		select {
		case ch <- m:
		default:
			closePassed(m)
			if m.Op == agent.OpExited || m.Op == agent.OpError {
				go func(m *agent.Message) {
					select {
					case ch <- m:
					case <-time.After(time.Minute):
					}
				}(m)
			}
		}
	}
	s.markDone()
	s.pmu.Lock()
	for id, ch := range s.pending {
		close(ch)
		delete(s.pending, id)
	}
	s.pmu.Unlock()
}

func closePassed(m *agent.Message) {
	for _, f := range m.Passed {
		f.Close()
	}
	m.Passed = nil
}

func (s *sandbox) register() (uint64, chan *agent.Message) {
	id := s.nextID.Add(1)
	ch := make(chan *agent.Message, 4)
	s.pmu.Lock()
	s.pending[id] = ch
	s.pmu.Unlock()
	return id, ch
}

func (s *sandbox) unregister(id uint64) {
	s.pmu.Lock()
	delete(s.pending, id)
	s.pmu.Unlock()
}

// call sends one request and waits for its single answer.
func (s *sandbox) call(ctx context.Context, m *agent.Message, files ...*os.File) (*agent.Message, error) {
	if s.stopped() {
		return nil, ErrStopped
	}
	id, ch := s.register()
	defer s.unregister(id)
	m.ID = id
	if err := s.conn.Send(m, files...); err != nil {
		return nil, ErrStopped
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, ErrStopped
		}
		closePassed(r)
		if r.Op == agent.OpError {
			return r, fmt.Errorf("%s", r.Error)
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// importDir streams a host directory into the sandbox as a tar; the agent
// unpacks it without following anything out of dst.
func (s *sandbox) importDir(ctx context.Context, src, dst string) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	werr := make(chan error, 1)
	go func() {
		err := tarball.WriteDir(pw, src)
		pw.Close()
		werr <- err
	}()
	_, cerr := s.call(ctx, &agent.Message{Op: agent.OpUntar, Path: dst}, pr)
	pr.Close()
	if err := <-werr; err != nil {
		return err
	}
	return cerr
}

// Exec implements runtime.Sandbox.
func (s *sandbox) Exec(ctx context.Context, req runtime.ExecRequest) (runtime.Process, error) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, fmt.Errorf("exec: no command given: %w", errdefs.ErrInvalid)
	}
	if req.Dir != "" && !filepath.IsAbs(req.Dir) {
		return nil, fmt.Errorf("exec: working directory %q must be absolute: %w", req.Dir, errdefs.ErrInvalid)
	}
	if req.Timeout < 0 {
		return nil, fmt.Errorf("exec: negative timeout: %w", errdefs.ErrInvalid)
	}
	if s.stopped() {
		return nil, ErrStopped
	}
	limit := req.OutputLimit
	if limit <= 0 {
		limit = runtime.DefaultOutputLimit
	}
	if req.TTY {
		return s.execTTY(ctx, req, limit)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	t0 := time.Now()
	before, _ := s.cg.Stats()
	var subBefore uint64
	if s.pidsSub != nil {
		subBefore, _ = s.pidsSub.MaxHits()
	}
	trace(t0, "exec: stats")
	p := &process{s: s, start: time.Now(), before: before, subBefore: subBefore, limit: limit}
	id, ch := s.register()
	p.reqID, p.ch = id, ch
	env := append(append([]string{}, s.baseEnv...), req.Env...)
	msg := &agent.Message{Op: agent.OpExec, ID: id, Exec: &agent.ExecSpec{Argv: req.Argv, Env: env, Dir: req.Dir, TimeoutMS: req.Timeout.Milliseconds()}}
	serr := s.conn.Send(msg, inR, outW, errW)
	inR.Close()
	outW.Close()
	errW.Close()
	if serr != nil {
		s.unregister(id)
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, ErrStopped
	}
	p.copies.Add(2)
	p.outR, p.errR = outR, errR
	go p.copyOut(outR, req.Stdout, &p.outN, &p.outTrunc, "stdout")
	go p.copyOut(errR, req.Stderr, &p.errN, &p.errTrunc, "stderr")
	go func() {
		if req.Stdin != nil {
			_, _ = io.Copy(inW, req.Stdin)
		}
		inW.Close()
	}()
	select {
	case m, ok := <-ch:
		if !ok {
			p.abort()
			return nil, ErrStopped
		}
		if m.Op == agent.OpError {
			p.abort()
			return nil, execError(req.Argv[0], m)
		}
		p.pid = m.PID
		trace(t0, "exec: started")
	case <-ctx.Done():
		p.abort()
		return nil, ctx.Err()
	}
	return p, nil
}

// execTTY runs a command on a new terminal of the sandbox; the agent
// hands back the terminal's master side, which the host reads and writes
// itself.
func (s *sandbox) execTTY(ctx context.Context, req runtime.ExecRequest, limit int64) (runtime.Process, error) {
	before, _ := s.cg.Stats()
	var subBefore uint64
	if s.pidsSub != nil {
		subBefore, _ = s.pidsSub.MaxHits()
	}
	p := &process{s: s, start: time.Now(), before: before, subBefore: subBefore, limit: limit}
	id, ch := s.register()
	p.reqID, p.ch = id, ch
	env := append(append([]string{"TERM=xterm-256color"}, s.baseEnv...), req.Env...)
	msg := &agent.Message{Op: agent.OpExec, ID: id, Exec: &agent.ExecSpec{TTY: true, Rows: req.Rows, Cols: req.Cols,
		Argv: req.Argv, Env: env, Dir: req.Dir, TimeoutMS: req.Timeout.Milliseconds()}}
	if err := s.conn.Send(msg); err != nil {
		s.unregister(id)
		return nil, ErrStopped
	}
	var m *agent.Message
	select {
	case r, ok := <-ch:
		if !ok {
			s.unregister(id)
			return nil, ErrStopped
		}
		m = r
	case <-ctx.Done():
		s.unregister(id)
		return nil, ctx.Err()
	}
	if m.Op == agent.OpError {
		s.unregister(id)
		return nil, execError(req.Argv[0], m)
	}
	if len(m.Passed) != 1 {
		closePassed(m)
		s.unregister(id)
		_ = s.conn.Send(&agent.Message{Op: agent.OpSignal, ID: id, Signal: int(syscall.SIGKILL)})
		return nil, fmt.Errorf("exec %s: the agent sent no terminal", req.Argv[0])
	}
	master, err := pollable(m.Passed[0])
	if err != nil {
		s.unregister(id)
		_ = s.conn.Send(&agent.Message{Op: agent.OpSignal, ID: id, Signal: int(syscall.SIGKILL)})
		return nil, fmt.Errorf("exec %s: terminal: %w", req.Argv[0], err)
	}
	p.pid, p.tty, p.outR = m.PID, master, master
	p.copies.Add(1)
	go p.copyOut(master, req.Stdout, &p.outN, &p.outTrunc, "terminal")
	if req.Stdin != nil {
		// typed into the terminal; its end is not a hang-up
		go func() { _, _ = io.Copy(master, req.Stdin) }()
	}
	return p, nil
}

// pollable returns a non-blocking, poller-backed copy of f (so that read
// deadlines work on it) and closes f.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup int
	var derr error
	if err := rc.Control(func(fd uintptr) { dup, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, err
	}
	return os.NewFile(uintptr(dup), "terminal"), nil
}

// Resize sets the window size of a command's terminal.
func (p *process) Resize(rows, cols uint16) error {
	if p.tty == nil {
		return fmt.Errorf("resize: the command has no terminal: %w", errdefs.ErrInvalid)
	}
	// through the RawConn: safe while the output copier may close it
	rc, err := p.tty.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		return fmt.Errorf("resize: the command's terminal is closed: %w", errdefs.ErrConflict)
	}
	return ierr
}

// ExecError is a command that could not be started.
type ExecError struct {
	Cmd  string
	Code string // "not_found", "not_executable", "bad_dir", ...
	Msg  string
}

func (e *ExecError) Error() string { return "exec " + e.Cmd + ": " + e.Msg }

// ExitCode is the conventional shell status for the failure.
func (e *ExecError) ExitCode() int {
	switch e.Code {
	case "not_found":
		return runtime.ExitNotFound
	case "not_executable":
		return runtime.ExitNotExecutable
	}
	return 1
}

func (e *ExecError) Unwrap() error {
	switch e.Code {
	case "not_found":
		return errdefs.ErrNotFound
	case "invalid", "bad_dir", "not_executable":
		return errdefs.ErrInvalid
	}
	return nil
}

func execError(cmd string, m *agent.Message) error {
	msg := m.Error
	switch m.Code {
	case "not_found":
		msg = "command not found"
	case "not_executable":
		msg = "permission denied or not an executable"
	case "bad_dir":
		msg = "working directory does not exist"
	}
	return &ExecError{Cmd: cmd, Code: m.Code, Msg: msg}
}

type process struct {
	s         *sandbox
	reqID     uint64
	ch        chan *agent.Message
	pid       int
	start     time.Time
	before    cgroups.Stats
	subBefore uint64
	limit     int64

	outR, errR         *os.File
	tty                *os.File // the terminal's master side, with TTY
	copies             sync.WaitGroup
	outN, errN         int64
	outTrunc, errTrunc bool
}

func (p *process) PID() int { return p.pid }

func (p *process) abort() {
	p.s.unregister(p.reqID)
	p.outR.Close()
	p.errR.Close()
	p.copies.Wait()
}

// copyOut copies up to limit bytes to w, then a marker, and discards (but
// counts) the rest so the command never blocks on a full pipe.
func (p *process) copyOut(r *os.File, w io.Writer, n *int64, trunc *bool, name string) {
	defer p.copies.Done()
	defer r.Close()
	if w == nil {
		w = io.Discard
	}
	buf := make([]byte, 32<<10)
	var total int64
	emit := func(k int) {
		if room := p.limit - total; room > 0 {
			chunk := buf[:k]
			if int64(k) > room {
				chunk = buf[:room]
			}
			_, _ = w.Write(chunk)
		}
		if total+int64(k) > p.limit && total <= p.limit {
			_, _ = fmt.Fprintf(w, "\n[airlock: %s truncated at %d bytes]\n", name, p.limit)
		}
		total += int64(k)
	}
	for {
		k, err := r.Read(buf)
		if k > 0 {
			emit(k)
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Wait gave up on EOF (a background child may hold the pipe):
			// what the command wrote is already in the pipe, and a read
			// past the deadline would not return it, so drain it now,
			// without waiting for more.
			drainNonblocking(r, buf, emit)
		}
		break
	}
	*n = total
	*trunc = total > p.limit
}

// drainNonblocking reads what f already holds (at most 64 MiB), never
// waiting.
func drainNonblocking(f *os.File, buf []byte, emit func(int)) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		for read := 0; read < 64<<20; {
			k, err := unix.Read(int(fd), buf)
			if k <= 0 || err != nil {
				return
			}
			emit(k)
			read += k
		}
	})
}

// Signal sends sig to the command's process group. The agent answers on the
// exec request's id; Wait skips that answer.
func (p *process) Signal(sig os.Signal) error {
	ss, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %v: %w", sig, errdefs.ErrInvalid)
	}
	if p.s.stopped() {
		return ErrStopped
	}
	return p.s.conn.Send(&agent.Message{Op: agent.OpSignal, ID: p.reqID, Signal: int(ss)})
}

func (p *process) Wait(ctx context.Context) (runtime.ExitStatus, error) {
	var st runtime.ExitStatus
	var ei *agent.ExitInfo
	for ei == nil {
		select {
		case m, ok := <-p.ch:
			if !ok {
				p.abort()
				return st, ErrStopped
			}
			if m.Op == agent.OpExited && m.Exit != nil {
				ei = m.Exit
			}
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
	p.s.unregister(p.reqID)
	// Background children may hold the pipes open: give the output a short
	// grace period after the command itself exited, then stop reading.
	waited := make(chan struct{})
	go func() { p.copies.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(250 * time.Millisecond):
		_ = p.outR.SetReadDeadline(time.Now())
		_ = p.errR.SetReadDeadline(time.Now())
		<-waited
	}
	st.Code = ei.Code
	if ei.Signal != 0 {
		st.Signal = unix.SignalName(syscall.Signal(ei.Signal))
	}
	st.Duration = time.Duration(ei.DurationUS) * time.Microsecond
	st.UserTime = time.Duration(ei.UserUS) * time.Microsecond
	st.SystemTime = time.Duration(ei.SysUS) * time.Microsecond
	st.MaxRSSBytes = ei.MaxRSSKiB * 1024
	st.StdoutBytes, st.StderrBytes = p.outN, p.errN
	st.StdoutTruncated, st.StderrTruncated = p.outTrunc, p.errTrunc
	st.Files = fileActivity(ei.Files)
	after, _ := p.s.cg.Stats()
	switch {
	case ei.TimedOut:
		st.Limit = runtime.LimitTimeout
		st.Code = runtime.ExitTimeout
	case after.OOMKills > p.before.OOMKills:
		st.Limit = runtime.LimitMemory
	case after.PidsMaxHits > p.before.PidsMaxHits, p.hitPidsSub(), p.s.pidsSub == nil && p.s.hitNProc(p.before, after):
		st.Limit = runtime.LimitPids
	case ei.Signal == int(syscall.SIGXFSZ), ei.DiskFull && st.Code != 0:
		st.Limit = runtime.LimitDisk
	}
	return st, nil
}

// hitPidsSub says whether the commands' pids group refused a fork during
// the command.
func (p *process) hitPidsSub() bool {
	if p.s.pidsSub == nil {
		return false
	}
	n, err := p.s.pidsSub.MaxHits()
	return err == nil && n > p.subBefore
}

// hitNProc says whether the commands reached their process limit
// (RLIMIT_NPROC) between two stats: the group's peak rose to the limit
// plus the agent's own threads.
func (s *sandbox) hitNProc(before, after cgroups.Stats) bool {
	if after.PidsPeak <= before.PidsPeak {
		return false
	}
	threads := 0
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.initPID)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
	}
	// (one task of slack: the kernel refuses the fork that would reach
	// the limit)
	return after.PidsPeak+1 >= uint64(s.lim.Pids)+uint64(threads)
}

// Destroy implements runtime.Sandbox.
func (s *sandbox) Destroy(ctx context.Context) error {
	s.destroy.Do(func() { s.destErr = s.teardown() })
	return s.destErr
}

// teardown kills everything and removes all state; safe on a partly
// created sandbox.
func (s *sandbox) teardown() error {
	var errs []error
	t0 := time.Now()
	s.lifeMu.Lock()
	if s.lifeTimer != nil {
		s.lifeTimer.Stop()
	}
	s.lifeMu.Unlock()
	if s.cg != nil {
		_ = s.cg.Thaw()
	}
	if s.cmd != nil && s.cmd.Process != nil {
		// SIGKILL of a pid namespace's init kills every process in it.
		_ = s.cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("sandbox %s: init did not exit", s.id))
		}
	}
	trace(t0, "teardown: init gone")
	if s.conn != nil {
		s.conn.Close()
	}
	if s.cg != nil {
		if err := s.cg.Destroy(); err != nil {
			errs = append(errs, err)
		}
	}
	trace(t0, "teardown: cgroups gone")
	if s.madeDir {
		// Rename first (we still hold the lock inside): a reaper never
		// mistakes a half-removed dir for a crashed sandbox.
		dead := filepath.Join(filepath.Dir(s.dir), ".dead-"+s.id)
		dir := s.dir
		if err := os.Rename(s.dir, dead); err == nil {
			dir = dead
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if s.slotLock != nil {
		s.slotLock.Close()
	}
	if s.lock != nil {
		s.lock.Close()
	}
	s.markDone()
	trace(t0, "teardown: done")
	return errors.Join(errs...)
}

var _ runtime.Pauser = (*sandbox)(nil)

// Pause freezes every process of the sandbox, its agent included.
func (s *sandbox) Pause(ctx context.Context) error {
	if s.stopped() {
		return ErrStopped
	}
	if err := s.cg.Freeze(); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", s.id, err)
	}
	return nil
}

// Resume thaws a paused sandbox.
func (s *sandbox) Resume(ctx context.Context) error {
	if s.stopped() {
		return ErrStopped
	}
	if err := s.cg.Thaw(); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", s.id, err)
	}
	return nil
}

// fileActivity carries the agent's report of a command's file activity,
// each list capped as the agent caps it: the agent is inside the boundary.
func fileActivity(fa *agent.FileActivity) *runtime.FileActivity {
	if fa == nil {
		return nil
	}
	out := &runtime.FileActivity{Incomplete: fa.Incomplete, Shared: fa.Shared}
	for _, l := range []struct {
		from []string
		to   *[]string
	}{{fa.Written, &out.Written}, {fa.Deleted, &out.Deleted}, {fa.Chmod, &out.Chmod}, {fa.Read, &out.Read}} {
		if len(l.from) > maxActivityList {
			l.from, out.Incomplete = l.from[:maxActivityList], true
		}
		*l.to = l.from
	}
	return out
}

// maxActivityList is the agent's cap on each list of file activity.
const maxActivityList = 1000
