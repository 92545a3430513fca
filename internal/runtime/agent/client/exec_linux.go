package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// Exec starts a command (runtime.Sandbox.Exec): the host makes its stdio
// and copies the output itself.
func (c *Client) Exec(ctx context.Context, req runtime.ExecRequest) (runtime.Process, error) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, fmt.Errorf("exec: no command given: %w", errdefs.ErrInvalid)
	}
	if req.Dir != "" && !filepath.IsAbs(req.Dir) {
		return nil, fmt.Errorf("exec: working directory %q must be absolute: %w", req.Dir, errdefs.ErrInvalid)
	}
	if req.Timeout < 0 {
		return nil, fmt.Errorf("exec: negative timeout: %w", errdefs.ErrInvalid)
	}
	if c.stopped() {
		return nil, ErrStopped
	}
	limit := req.OutputLimit
	if limit <= 0 {
		limit = runtime.DefaultOutputLimit
	}
	if req.TTY {
		return c.execTTY(ctx, req, limit)
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
	p := &process{c: c, start: time.Now(), check: c.opt.Meter(), limit: limit}
	c.opt.Trace(t0, "exec: stats")
	id, ch := c.register()
	p.reqID, p.ch = id, ch
	env := runtime.MergeEnv(c.opt.BaseEnv, req.Env)
	msg := &proto.Message{Op: proto.OpExec, ID: id, Exec: &proto.ExecSpec{Argv: req.Argv, Env: env, Dir: req.Dir, TimeoutMS: req.Timeout.Milliseconds()}}
	serr := c.conn.Send(msg, inR, outW, errW)
	inR.Close()
	outW.Close()
	errW.Close()
	if serr != nil {
		c.unregister(id)
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
		if m.Op == proto.OpError {
			p.abort()
			return nil, execError(req.Argv[0], m)
		}
		p.pid = m.PID
		c.opt.Trace(t0, "exec: started")
	case <-ctx.Done():
		p.abort()
		return nil, ctx.Err()
	}
	return p, nil
}

// execTTY runs a command on a new terminal of the sandbox. The agent hands
// back the terminal's master side, which the host reads and writes
// itself; or, with RelayTTY, relays the terminal over a socket the host
// passes along.
func (c *Client) execTTY(ctx context.Context, req runtime.ExecRequest, limit int64) (runtime.Process, error) {
	p := &process{c: c, start: time.Now(), check: c.opt.Meter(), limit: limit}
	id, ch := c.register()
	p.reqID, p.ch = id, ch
	env := runtime.MergeEnv([]string{"TERM=xterm-256color"}, c.opt.BaseEnv, req.Env)
	msg := &proto.Message{Op: proto.OpExec, ID: id, Exec: &proto.ExecSpec{TTY: true, Relay: c.opt.RelayTTY, Rows: req.Rows, Cols: req.Cols,
		Argv: req.Argv, Env: env, Dir: req.Dir, TimeoutMS: req.Timeout.Milliseconds()}}
	var hostEnd *os.File
	if c.opt.RelayTTY {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			c.unregister(id)
			return nil, err
		}
		// non-blocking before os.NewFile: the poller then backs it, so
		// read deadlines work on it
		if err := unix.SetNonblock(fds[0], true); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			c.unregister(id)
			return nil, err
		}
		hostEnd = os.NewFile(uintptr(fds[0]), "terminal-relay")
		agentEnd := os.NewFile(uintptr(fds[1]), "terminal-relay")
		err = c.conn.Send(msg, agentEnd)
		agentEnd.Close()
		if err != nil {
			hostEnd.Close()
			c.unregister(id)
			return nil, ErrStopped
		}
	} else if err := c.conn.Send(msg); err != nil {
		c.unregister(id)
		return nil, ErrStopped
	}
	fail := func(err error) (runtime.Process, error) {
		if hostEnd != nil {
			hostEnd.Close()
		}
		c.unregister(id)
		return nil, err
	}
	var m *proto.Message
	select {
	case r, ok := <-ch:
		if !ok {
			return fail(ErrStopped)
		}
		m = r
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	if m.Op == proto.OpError {
		closePassed(m)
		return fail(execError(req.Argv[0], m))
	}
	var term *os.File
	if hostEnd != nil {
		closePassed(m)
		term = hostEnd
		p.relayed = true
	} else {
		if len(m.Passed) != 1 {
			closePassed(m)
			_ = c.conn.Send(&proto.Message{Op: proto.OpSignal, ID: id, Signal: int(syscall.SIGKILL)})
			return fail(fmt.Errorf("exec %s: the agent sent no terminal", req.Argv[0]))
		}
		master, err := pollable(m.Passed[0])
		if err != nil {
			_ = c.conn.Send(&proto.Message{Op: proto.OpSignal, ID: id, Signal: int(syscall.SIGKILL)})
			return fail(fmt.Errorf("exec %s: terminal: %w", req.Argv[0], err))
		}
		term = master
	}
	p.pid, p.tty, p.outR = m.PID, term, term
	p.copies.Add(1)
	go p.copyOut(term, req.Stdout, &p.outN, &p.outTrunc, "terminal")
	if req.Stdin != nil {
		// typed into the terminal; its end is not a hang-up
		go func() { _, _ = io.Copy(term, req.Stdin) }()
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

type process struct {
	c     *Client
	reqID uint64
	ch    chan *proto.Message
	pid   int
	start time.Time
	check func(*proto.ExitInfo) runtime.Limit
	limit int64

	outR, errR         *os.File
	tty                *os.File // the terminal's master side (or its relay), with TTY
	relayed            bool     // tty is the agent's relay: resize by message
	copies             sync.WaitGroup
	outN, errN         int64
	outTrunc, errTrunc bool
}

func (p *process) PID() int { return p.pid }

// Resize sets the window size of a command's terminal.
func (p *process) Resize(rows, cols uint16) error {
	if p.tty == nil {
		return fmt.Errorf("resize: the command has no terminal: %w", errdefs.ErrInvalid)
	}
	if p.relayed {
		// answered on the exec's id, like a signal; Wait skips the answer
		if p.c.stopped() {
			return ErrStopped
		}
		return p.c.conn.Send(&proto.Message{Op: proto.OpResize, ID: p.reqID, Rows: rows, Cols: cols})
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

func (p *process) abort() {
	p.c.unregister(p.reqID)
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
			DrainNonblocking(r, buf, emit)
		}
		break
	}
	*n = total
	*trunc = total > p.limit
}

// DrainNonblocking reads what f already holds (at most 64 MiB), never
// waiting.
func DrainNonblocking(f *os.File, buf []byte, emit func(int)) {
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
	if p.c.stopped() {
		return ErrStopped
	}
	return p.c.conn.Send(&proto.Message{Op: proto.OpSignal, ID: p.reqID, Signal: int(ss)})
}

func (p *process) Wait(ctx context.Context) (runtime.ExitStatus, error) {
	var st runtime.ExitStatus
	var ei *proto.ExitInfo
	for ei == nil {
		select {
		case m, ok := <-p.ch:
			if !ok {
				p.abort()
				// The sandbox stopped under the command: if that was a
				// limit (one that kills the whole sandbox), say so.
				if lim := p.check(nil); lim != runtime.LimitNone {
					st.Code, st.Signal, st.Limit = 128+int(syscall.SIGKILL), "SIGKILL", lim
					st.Duration = time.Since(p.start)
					st.StdoutBytes, st.StderrBytes = p.outN, p.errN
					return st, nil
				}
				return st, ErrStopped
			}
			if m.Op == proto.OpExited && m.Exit != nil {
				ei = m.Exit
			}
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
	p.c.unregister(p.reqID)
	// Background children may hold the pipes open: give the output a short
	// grace period after the command itself exited, then stop reading.
	waited := make(chan struct{})
	go func() { p.copies.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(250 * time.Millisecond):
		_ = p.outR.SetReadDeadline(time.Now())
		if p.errR != nil {
			_ = p.errR.SetReadDeadline(time.Now())
		}
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
	switch lim := p.check(ei); {
	case ei.TimedOut:
		st.Limit = runtime.LimitTimeout
		st.Code = runtime.ExitTimeout
	case lim != runtime.LimitNone:
		st.Limit = lim
	case ei.Signal == int(syscall.SIGXFSZ), ei.DiskFull && st.Code != 0:
		st.Limit = runtime.LimitDisk
	}
	return st, nil
}

// fileActivity carries the agent's report of a command's file activity,
// each list capped as the agent caps it: the agent is inside the boundary.
func fileActivity(fa *proto.FileActivity) *runtime.FileActivity {
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
