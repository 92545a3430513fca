package native

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/client"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"github.com/airlock-dev/airlock/internal/runtime/hostside"
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
	user    runtime.User // the command user's name and home
	created time.Time

	// host is what the sandbox holds on the host (state dir and lock,
	// uid slot, cgroup, channel, lifetime, freezer) and its teardown.
	host    *hostside.Base
	uidBase int              // the uid slot's first host uid: the sandbox's root
	pidsSub *cgroups.PidsSub // the commands' own pids group (v1: pids hierarchy; v2: threaded child)
	cmd     *exec.Cmd
	initPID int
	exited  chan struct{}

	landlockABI int
	seccomp     string
}

func (s *sandbox) ID() string             { return s.id }
func (s *sandbox) Done() <-chan struct{}  { return s.host.Done() }
func (s *sandbox) Cgroup() *cgroups.Group { return s.host.Cgroup }
func (s *sandbox) InitPID() int           { return s.initPID }
func (s *sandbox) Limits() runtime.Limits { return s.lim }

func (s *sandbox) Info() runtime.Info {
	boundary := "linux namespaces + seccomp"
	if s.landlockABI > 0 {
		boundary += " + landlock"
	}
	return runtime.Info{
		ID: s.id, Backend: "native", Created: s.created, Limits: s.lim, User: s.user,
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
func (s *sandbox) meter() func(*proto.ExitInfo) runtime.Limit {
	before, _ := s.host.Cgroup.LimitHits()
	var subBefore uint64
	if s.pidsSub != nil {
		subBefore, _ = s.pidsSub.MaxHits()
	}
	return func(ei *proto.ExitInfo) runtime.Limit {
		after, _ := s.host.Cgroup.LimitHits()
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

// Destroy implements runtime.Sandbox: the teardown of package hostside,
// whose stage 3 is stopInit.
func (s *sandbox) Destroy(ctx context.Context) error {
	return s.host.Destroy(s.stopInit)
}

// stopInit kills the init, if it was started, and waits for it: SIGKILL
// of a pid namespace's init kills every process in it.
func (s *sandbox) stopInit() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("sandbox %s: init did not exit", s.id)
	}
}

var _ runtime.Pauser = (*sandbox)(nil)
var _ runtime.Sweeper = (*sandbox)(nil)

// Pause freezes every process of the sandbox, its agent included.
func (s *sandbox) Pause(ctx context.Context) error {
	return s.host.Pause(s.b.exe, s.b.cfg.DieWithOwner)
}

// Resume thaws a paused sandbox.
func (s *sandbox) Resume(ctx context.Context) error { return s.host.Resume() }

// initLog is the end of the init's log, for an error message.
func (s *sandbox) initLog() string {
	return hostside.LogTail(filepath.Join(s.dir, "init.log"), "init log")
}

// Relimit implements runtime.Relimiter for a sandbox that ran nothing
// yet: memory and the CPU quota are the cgroup's (rewritten, its pids
// kept), the lifetime a timer from now. The other limits are set in the
// init (rlimits, the disk's size) and stay.
func (s *sandbox) Relimit(_ context.Context, lim runtime.Limits) error {
	want, err := withDefaults(lim)
	if err != nil {
		return err
	}
	cur := s.lim
	cur.MemoryBytes, cur.CPUs, cur.Lifetime = want.MemoryBytes, want.CPUs, want.Lifetime
	if want != cur {
		return fmt.Errorf("sandbox %s: only memory, cpus and lifetime can change after create: %w", s.id, errdefs.ErrUnsupported)
	}
	if s.lim.Lifetime > 0 && want.Lifetime != s.lim.Lifetime {
		return fmt.Errorf("sandbox %s: its lifetime is already running: %w", s.id, errdefs.ErrUnsupported)
	}
	if s.host.Stopped() {
		return ErrStopped
	}
	if want.MemoryBytes != s.lim.MemoryBytes || want.CPUs != s.lim.CPUs {
		if err := s.host.Cgroup.SetLimits(cgroups.Limits{MemoryBytes: want.MemoryBytes, Pids: s.lim.Pids + agentPidsReserve, CPUs: want.CPUs}); err != nil {
			return err
		}
	}
	if want.Lifetime > 0 && s.lim.Lifetime == 0 {
		s.host.StartLifetime(want.Lifetime, func() { _ = s.Destroy(context.Background()) })
	}
	s.lim = want
	return nil
}

// Usage implements runtime.Meter: the sandbox's cgroup.
func (s *sandbox) Usage() (runtime.Usage, error) { return s.host.Usage() }
