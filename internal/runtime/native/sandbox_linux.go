package native

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/agent"
	"github.com/airlock-dev/airlock/internal/agent/client"
	"github.com/airlock-dev/airlock/internal/cgroups"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/thawguard"
)

// ErrStopped is returned for operations on a sandbox that has stopped.
var ErrStopped = client.ErrStopped

// ExecError is a command that could not be started.
type ExecError = client.ExecError

type sandbox struct {
	// Client is the agent's channel once the sandbox is ready: Exec, the
	// file operations and write scopes.
	*client.Client

	b       *Backend
	id      string
	dir     string
	lim     runtime.Limits
	created time.Time

	madeDir  bool
	lock     *os.File
	slot     int
	slotLock *os.File
	uidBase  int
	cg       *cgroups.Group
	pidsSub  *cgroups.PidsSub // the commands' own pids group (v1: pids hierarchy; v2: threaded child)
	cmd      *exec.Cmd
	initPID  int
	exited   chan struct{}
	conn     *agent.Conn

	landlockABI int
	seccomp     string
	lifeMu      sync.Mutex
	lifeTimer   *time.Timer
	// freezer pauses and resumes the group, with a thaw guard while it
	// is paused on v1 (package thawguard)
	freezer thawguard.Freezer

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
			WriteScope:  s.WriteScope(),
		},
	}
}

// meter reads the sandbox's cgroup counters when a command starts and
// names, when it ends, the limit it hit: an OOM kill, a refused fork.
func (s *sandbox) meter() func(*agent.ExitInfo) runtime.Limit {
	before, _ := s.cg.Stats()
	var subBefore uint64
	if s.pidsSub != nil {
		subBefore, _ = s.pidsSub.MaxHits()
	}
	return func(ei *agent.ExitInfo) runtime.Limit {
		after, _ := s.cg.Stats()
		switch {
		case ei == nil:
			return runtime.LimitNone
		case after.OOMKills > before.OOMKills:
			return runtime.LimitMemory
		case after.PidsMaxHits > before.PidsMaxHits, s.hitPidsSub(subBefore), s.pidsSub == nil && s.hitNProc(before, after):
			return runtime.LimitPids
		}
		return runtime.LimitNone
	}
}

// hitPidsSub says whether the commands' pids group refused a fork since
// its count was before.
func (s *sandbox) hitPidsSub(before uint64) bool {
	if s.pidsSub == nil {
		return false
	}
	n, err := s.pidsSub.MaxHits()
	return err == nil && n > before
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
		s.freezer.Release(s.cg, s.logf)
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
var _ runtime.Sweeper = (*sandbox)(nil)

// Pause freezes every process of the sandbox, its agent included.
func (s *sandbox) Pause(ctx context.Context) error {
	if s.stopped() {
		return ErrStopped
	}
	if err := s.freezer.Freeze(s.cg, s.b.exe, s.b.cfg.DieWithOwner); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", s.id, err)
	}
	return nil
}

// Resume thaws a paused sandbox.
func (s *sandbox) Resume(ctx context.Context) error {
	if s.stopped() {
		return ErrStopped
	}
	if err := s.freezer.Thaw(s.cg, s.logf); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", s.id, err)
	}
	return nil
}

// logf logs an operational message about the sandbox.
func (s *sandbox) logf(format string, args ...any) {
	s.b.cfg.Logf("sandbox %s: "+format, append([]any{s.id}, args...)...)
}
