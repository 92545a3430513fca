package native

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A paused sandbox must still die with its daemon. On cgroup v1 the
// freezer holds back even SIGKILL: the init's parent-death signal stays
// pending while the group is frozen, so a SIGKILLed daemon would leave the
// sandbox frozen for good (and Reap only runs at the next start). So Pause
// first starts a thaw guard: this binary again, outside the sandbox, which
// blocks reading a pipe whose write end only the daemon holds. When the
// daemon dies the pipe reads end of file, the guard thaws the group, and
// the pending SIGKILL ends the sandbox. Resume and Destroy thaw the group
// themselves, then write a byte to the pipe and close it: a guard that
// reads a byte exits without thawing, so an old guard can never undo a
// later pause, and nobody waits for it. cgroup v2's freezer lets fatal
// signals through, so on v2 there is no guard.

// guardArg0 marks a re-executed airlock binary as a thaw guard.
const guardArg0 = "airlock-thaw-guard"

// guardReady is what a guard writes to its stdout once it ignores the
// signals it must and waits on its pipe.
const guardReady = "ready\n"

// runThawGuard is the guard's whole life: os.Args[1] is the group's
// freezer.state file, descriptor 3 the pipe's read end. Only the pipe
// ends it: a stop of the whole service signals every process of it, and
// the guard must not go before the daemon, so SIGTERM, SIGINT and SIGHUP
// are ignored.
func runThawGuard() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if len(os.Args) != 2 || !validFreezerState(os.Args[1]) {
		fmt.Fprintln(os.Stderr, "airlock thaw guard: usage: airlock-thaw-guard CGROUP-V1-FREEZER-DIR/freezer.state (started by airlock at a pause, not by hand)")
		os.Exit(2)
	}
	pipe := os.NewFile(3, "thaw-guard-pipe")
	// Ready: the daemon freezes the group only after this.
	_, _ = os.Stdout.WriteString(guardReady)
	os.Stdout.Close()
	var b [1]byte
	if n, _ := pipe.Read(b[:]); n > 0 {
		os.Exit(0) // resumed or destroyed: the daemon thawed it
	}
	// end of file without a word: the daemon died
	f, err := os.OpenFile(os.Args[1], os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		os.Exit(0) // the group is gone already
	}
	if err == nil {
		_, err = f.WriteString("THAWED")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock thaw guard: thaw %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	os.Exit(0)
}

// validFreezerState: the guard only ever writes a v1 freezer's state file
// (on a cgroup file system, wherever it is mounted).
func validFreezerState(p string) bool {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || filepath.Base(p) != "freezer.state" {
		return false
	}
	var st unix.Statfs_t
	return unix.Statfs(p, &st) == nil && st.Type == unix.CGROUP_SUPER_MAGIC
}

// thawGuard is a running guard: the daemon's end of its pipe and its
// process.
type thawGuard struct {
	w   *os.File
	cmd *exec.Cmd
}

// startThawGuard starts a guard for the freezer state file state.
func (s *sandbox) startThawGuard(state string) (*thawGuard, error) {
	r, w, err := os.Pipe() // close-on-exec: no other child inherits w
	if err != nil {
		return nil, err
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	defer ready.Close()
	cmd := &exec.Cmd{
		Path:       s.b.exe,
		Args:       []string{guardArg0, state},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Dir:        "/",
		Stdout:     readyW,
		ExtraFiles: []*os.File{r},
		// A session of its own: no terminal's signals reach it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	r.Close()
	readyW.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start the thaw guard: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	_ = ready.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(ready)
	if string(b) != guardReady {
		_ = cmd.Process.Kill()
		w.Close()
		return nil, fmt.Errorf("the thaw guard (%s, pid %d) did not start: it said %q", s.b.exe, cmd.Process.Pid, b)
	}
	return &thawGuard{w: w, cmd: cmd}, nil
}

// stop ends the guard without a thaw; the caller has thawed the group.
func (g *thawGuard) stop() error {
	_, err := g.w.Write([]byte{'q'})
	g.w.Close()
	if err != nil {
		// It reads end of file instead, and thaws the group again.
		return fmt.Errorf("tell the thaw guard (pid %d) to exit: %w", g.cmd.Process.Pid, err)
	}
	return nil
}
