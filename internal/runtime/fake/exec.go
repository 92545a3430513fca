package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// hostPATH is every command's PATH: the host's programs.
const hostPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// outputGrace is how long Wait reads output after the command exited
// (a background child may hold the pipes for ever).
const outputGrace = 250 * time.Millisecond

func checkExec(req runtime.ExecRequest) error {
	switch {
	case len(req.Argv) == 0 || req.Argv[0] == "":
		return fmt.Errorf("empty argv: %w", errdefs.ErrInvalid)
	case req.Dir != "" && !path.IsAbs(req.Dir):
		return fmt.Errorf("dir %q is not absolute: %w", req.Dir, errdefs.ErrInvalid)
	case req.Timeout < 0 || req.OutputLimit < 0:
		return fmt.Errorf("negative timeout or output limit: %w", errdefs.ErrInvalid)
	}
	for _, s := range append(append([]string{req.Dir}, req.Argv...), req.Env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("NUL byte in the request: %w", errdefs.ErrInvalid)
		}
	}
	return nil
}

// Exec starts req as a host process of the calling user, in the
// sandbox's directory that req.Dir names.
func (s *sandbox) Exec(ctx context.Context, req runtime.ExecRequest) (runtime.Process, error) {
	if err := checkExec(req); err != nil {
		return nil, err
	}
	// s.mu over the start: a Destroy or Pause that follows finds the
	// new process, and none starts after them.
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
		return nil, fmt.Errorf("sandbox %s is stopped: %w", s.id, errdefs.ErrConflict)
	case s.paused:
		return nil, fmt.Errorf("sandbox %s is paused: %w", s.id, errdefs.ErrConflict)
	}
	if req.Dir == "" {
		req.Dir = "/workspace"
	}
	dir := s.hostPath(req.Dir)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("working directory %s: not found: %w", req.Dir, errdefs.ErrNotFound)
	}
	bin, err := lookPath(req.Argv[0], dir)
	if err != nil {
		return nil, err
	}
	s.execs++
	p := &process{s: s, execKV: fmt.Sprintf("%s=%s.%d", execVar, s.token, s.execs), limit: req.OutputLimit, done: make(chan struct{})}
	if p.limit == 0 {
		p.limit = runtime.DefaultOutputLimit
	}
	cmd := &exec.Cmd{Path: bin, Args: req.Argv, Dir: dir, Env: s.env(req, p.execKV)}
	if err := p.start(cmd, req); err != nil {
		return nil, err
	}
	if req.Timeout > 0 {
		p.timer = time.AfterFunc(req.Timeout, p.timeout)
	}
	return p, nil
}

// env is the base environment, the sandbox's, the request's and the
// markers, in that order (later wins).
func (s *sandbox) env(req runtime.ExecRequest, execKV string) []string {
	u := s.spec.User
	env := []string{"PATH=" + hostPATH, "HOME=" + s.hostPath(u.Home), "USER=" + u.Name, "LOGNAME=" + u.Name, "TMPDIR=" + s.hostPath("/tmp"), "LANG=C.UTF-8"}
	if req.TTY {
		env = append(env, "TERM=xterm-256color")
	}
	env = append(append(env, s.spec.Env...), req.Env...)
	return append(env, s.marker(), execKV)
}

// lookPath finds argv0 as a shell would: a name with a slash as it is
// (relative to dir), others in hostPATH.
func lookPath(argv0, dir string) (string, error) {
	cands := []string{argv0}
	if strings.Contains(argv0, "/") {
		if !filepath.IsAbs(argv0) {
			cands[0] = filepath.Join(dir, argv0)
		}
	} else {
		cands = cands[:0]
		for _, d := range filepath.SplitList(hostPATH) {
			cands = append(cands, filepath.Join(d, argv0))
		}
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			if unix.Access(c, unix.X_OK) != nil {
				return "", fmt.Errorf("%s: not executable: %w", argv0, errdefs.ErrDenied)
			}
			return c, nil
		}
	}
	return "", fmt.Errorf("%s: command not found: %w", argv0, errdefs.ErrNotFound)
}

// process is one command; its output is copied by goroutines (copies).
type process struct {
	s              *sandbox
	execKV         string
	limit          int64
	cmd            *exec.Cmd
	started, ended time.Time
	timer          *time.Timer
	tty            *os.File // the terminal's master, for Resize
	reads          []*os.File
	copies         sync.WaitGroup
	outs           [2]capture
	stdinW         *os.File

	mu       sync.Mutex
	timedOut bool
	done     chan struct{} // closed once the command is reaped
	waitOnce sync.Once
}

// capture is one output stream's count and truncation.
type capture struct {
	n     int64
	trunc bool
}

func (p *process) start(cmd *exec.Cmd, req runtime.ExecRequest) error {
	var childFiles []*os.File
	defer func() {
		for _, f := range childFiles {
			f.Close()
		}
	}()
	var err error
	if req.TTY {
		childFiles, err = p.openTTY(cmd, req)
	} else {
		childFiles, err = p.openPipes(cmd, req)
	}
	if err != nil {
		p.closeReads()
		return err
	}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		p.closeReads()
		if p.stdinW != nil {
			p.stdinW.Close()
		}
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p.cmd = cmd
	go func() {
		_ = cmd.Wait()
		p.ended = time.Now()
		close(p.done)
	}()
	return nil
}

// openPipes gives the command stdout and stderr pipes and, when req has
// one, a stdin pipe; it returns the child's ends.
func (p *process) openPipes(cmd *exec.Cmd, req runtime.ExecRequest) ([]*os.File, error) {
	var child []*os.File
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	for i, w := range []io.Writer{req.Stdout, req.Stderr} {
		r, cw, err := os.Pipe()
		if err != nil {
			return child, err
		}
		child = append(child, cw)
		p.reads = append(p.reads, r)
		name := [2]string{"stdout", "stderr"}[i]
		p.copies.Add(1)
		go p.copyOut(r, w, &p.outs[i], name)
	}
	cmd.Stdout, cmd.Stderr = child[0], child[1]
	if req.Stdin != nil {
		cr, w, err := os.Pipe()
		if err != nil {
			return child, err
		}
		child = append(child, cr)
		cmd.Stdin, p.stdinW = cr, w
		go func() { _, _ = io.Copy(w, req.Stdin); w.Close() }()
	}
	return child, nil
}

// openTTY puts the command on a new host pseudo-terminal of req's size;
// it returns the child's end.
func (p *process) openTTY(cmd *exec.Cmd, req runtime.ExecRequest) ([]*os.File, error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open a terminal: %w", err)
	}
	master := os.NewFile(uintptr(mfd), "ptmx")
	p.reads = append(p.reads, master)
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		return nil, err
	}
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	if err != nil {
		return nil, err
	}
	rows, cols := req.Rows, req.Cols
	if rows == 0 || cols == 0 {
		rows, cols = 24, 80
	}
	if err := unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		return nil, err
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	p.tty = master
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	p.copies.Add(1)
	go p.copyOut(master, req.Stdout, &p.outs[0], "output")
	if req.Stdin != nil {
		go func() { _, _ = io.Copy(master, req.Stdin) }()
	}
	return []*os.File{slave}, nil
}

func (p *process) closeReads() {
	for _, r := range p.reads {
		r.Close()
	}
}

// copyOut copies up to the limit to w, then a marker, and counts (and
// drops) the rest, so that the command never blocks on a full pipe.
func (p *process) copyOut(r *os.File, w io.Writer, c *capture, name string) {
	defer p.copies.Done()
	defer r.Close() // also when nobody Waits
	if w == nil {
		w = io.Discard
	}
	buf := make([]byte, 32<<10)
	emit := func(k int) {
		if room := p.limit - c.n; room > 0 {
			_, _ = w.Write(buf[:min(int64(k), room)])
		}
		if c.n+int64(k) > p.limit && c.n <= p.limit {
			_, _ = fmt.Fprintf(w, "\n[airlock: %s truncated at %d bytes]\n", name, p.limit)
		}
		c.n += int64(k)
	}
	for {
		k, err := r.Read(buf)
		if k > 0 {
			emit(k)
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				drain(r, buf, emit)
			}
			break
		}
	}
	c.trunc = c.n > p.limit
}

// drain reads what f already holds, never waiting (a read past a
// deadline would not return it).
func drain(f *os.File, buf []byte, emit func(int)) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for read := 0; read < 64<<20; {
			k, err := unix.Read(int(fd), buf)
			if k <= 0 || err != nil {
				return true
			}
			emit(k)
			read += k
		}
		return true
	})
}

// timeout ends the command's whole tree and says so in its status.
func (p *process) timeout() {
	p.mu.Lock()
	p.timedOut = true
	p.mu.Unlock()
	_, _ = killAll(context.Background(), p.execKV)
}

func (p *process) PID() int { return p.cmd.Process.Pid }

// Signal sends sig to the command's process group.
func (p *process) Signal(sig os.Signal) error {
	ss, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %v: %w", sig, errdefs.ErrInvalid)
	}
	select {
	case <-p.done:
		return fmt.Errorf("the command has ended: %w", errdefs.ErrConflict)
	default:
	}
	return unix.Kill(-p.cmd.Process.Pid, ss)
}

// Resize sets the terminal's window size.
func (p *process) Resize(rows, cols uint16) error {
	if p.tty == nil {
		return fmt.Errorf("resize: the command has no terminal: %w", errdefs.ErrInvalid)
	}
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

// Wait waits for the command, then for its output (a short grace while
// background children hold the pipes).
func (p *process) Wait(ctx context.Context) (runtime.ExitStatus, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		return runtime.ExitStatus{}, ctx.Err()
	}
	p.waitOnce.Do(p.finishOutput)
	return p.status(), nil
}

func (p *process) finishOutput() {
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.stdinW != nil {
		p.stdinW.Close()
	}
	waited := make(chan struct{})
	go func() { p.copies.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(outputGrace):
		for _, r := range p.reads {
			_ = r.SetReadDeadline(time.Now())
		}
		<-waited
	}
	p.closeReads()
}

func (p *process) status() runtime.ExitStatus {
	ps := p.cmd.ProcessState
	st := runtime.ExitStatus{Duration: p.ended.Sub(p.started), UserTime: ps.UserTime(), SystemTime: ps.SystemTime(),
		StdoutBytes: p.outs[0].n, StderrBytes: p.outs[1].n, StdoutTruncated: p.outs[0].trunc, StderrTruncated: p.outs[1].trunc}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		st.MaxRSSBytes = ru.Maxrss * 1024
	}
	ws := ps.Sys().(syscall.WaitStatus)
	st.Code = ws.ExitStatus()
	if ws.Signaled() {
		st.Code, st.Signal = 128+int(ws.Signal()), unix.SignalName(ws.Signal())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timedOut {
		st.Code, st.Limit = runtime.ExitTimeout, runtime.LimitTimeout
	}
	return st
}
