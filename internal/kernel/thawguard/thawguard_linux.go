package thawguard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
)

// Arg0 marks a re-executed airlock binary as a thaw guard.
const Arg0 = "airlock-thaw-guard"

// ready is what a guard writes to its stdout once it ignores the signals
// it must and waits on its pipe.
const ready = "ready\n"

// MaybeRun turns this process into a thaw guard when it was started as
// one (os.Args[0] is Arg0) and never returns then; otherwise it returns at
// once. native.MaybeInit and gvisor.MaybeInit call it.
func MaybeRun() {
	if len(os.Args) > 0 && os.Args[0] == Arg0 {
		run()
	}
}

// run is the guard's whole life: os.Args[1] is the group's freezer.state
// file, descriptor 3 the pipe's read end. Only the pipe ends it: a stop of
// the whole service signals every process of it, and the guard must not
// go before the daemon, so SIGTERM, SIGINT and SIGHUP are ignored.
func run() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if len(os.Args) != 2 || !validFreezerState(os.Args[1]) {
		fmt.Fprintln(os.Stderr, "airlock thaw guard: usage: airlock-thaw-guard CGROUP-V1-FREEZER-DIR/freezer.state (started by airlock at a pause, not by hand)")
		os.Exit(2)
	}
	pipe := os.NewFile(3, "thaw-guard-pipe")
	// Ready: the daemon freezes the group only after this.
	_, _ = os.Stdout.WriteString(ready)
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

// guard is a running guard: the daemon's end of its pipe and its process.
type guard struct {
	w   *os.File
	cmd *exec.Cmd
}

// start starts exe (an airlock binary: its main calls MaybeRun) as a
// guard for the freezer state file state.
func start(exe, state string) (*guard, error) {
	r, w, err := os.Pipe() // close-on-exec: no other child inherits w
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	defer readyR.Close()
	cmd := &exec.Cmd{
		Path:       exe,
		Args:       []string{Arg0, state},
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
	_ = readyR.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(readyR)
	if string(b) != ready {
		_ = cmd.Process.Kill()
		w.Close()
		return nil, fmt.Errorf("the thaw guard (%s, pid %d) did not start: it said %q", exe, cmd.Process.Pid, b)
	}
	return &guard{w: w, cmd: cmd}, nil
}

// stop ends the guard without a thaw; the caller has thawed the group.
func (g *guard) stop() error {
	_, err := g.w.Write([]byte{'q'})
	g.w.Close()
	if err != nil {
		// It reads end of file instead, and thaws the group again.
		return fmt.Errorf("tell the thaw guard (pid %d) to exit: %w", g.cmd.Process.Pid, err)
	}
	return nil
}

// Freezer pauses and resumes one sandbox's cgroup, with a thaw guard
// while it is paused on cgroup v1. Its zero value is ready; it orders a
// sandbox's freezes, thaws and guards.
type Freezer struct {
	mu    sync.Mutex
	guard *guard
}

// Freeze freezes cg. When the sandbox must die with its owner
// (dieWithOwner) and cg has a v1 freezer, it first starts a thaw guard
// (the airlock binary exe); an other sandbox's frozen processes wait for
// Reap, as its running ones would.
func (f *Freezer) Freeze(cg *cgroups.Group, exe string, dieWithOwner bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if state, ok := cg.V1FreezerState(); ok && dieWithOwner && f.guard == nil {
		g, err := start(exe, state)
		if err != nil {
			return err
		}
		f.guard = g
	}
	if err := cg.Freeze(); err != nil {
		_ = f.stopLocked() // the group is not frozen: nothing to thaw
		return err
	}
	return nil
}

// Thaw thaws cg, then ends its guard, if any; a group that did not thaw
// keeps its guard. logf gets a guard that could not be told to exit.
func (f *Freezer) Thaw(cg *cgroups.Group, logf func(string, ...any)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := cg.Thaw(); err != nil {
		return err
	}
	if err := f.stopLocked(); err != nil {
		logf("%v", err)
	}
	return nil
}

// Release thaws cg as far as it can and ends its guard whatever the
// outcome: for a teardown, which kills the group next.
func (f *Freezer) Release(cg *cgroups.Group, logf func(string, ...any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = cg.Thaw()
	if err := f.stopLocked(); err != nil {
		logf("%v", err)
	}
}

// stopLocked ends the guard, if any. Called with mu held.
func (f *Freezer) stopLocked() error {
	if f.guard == nil {
		return nil
	}
	err := f.guard.stop()
	f.guard = nil
	return err
}
