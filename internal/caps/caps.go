// Package caps is what any caller of one daemon may ask for (airlock
// serve's --max-* flags): a client, remote ones too, chooses its
// sandboxes' limits, but not past these. It decides and holds nothing:
// the sandbox core keeps the count of what its sandboxes hold and asks
// here whether one more fits.
package caps

import (
	"fmt"
	"math"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Caps bound what any caller may ask for. A zero field bounds nothing.
type Caps struct {
	// Limits: the most one sandbox may ask for, field by field (memory,
	// pids, cpus, disk, tmp, nofile, ptys).
	Limits runtime.Limits
	// Sandboxes: how many may exist at once.
	Sandboxes int
	// Host: what the sandboxes together may take of the host's global
	// tables.
	Host HostBudget
}

// HostBudget is what a daemon's sandboxes together may take of the
// host's global tables: each table's size less what the host keeps for
// itself (see airlock serve). Each Create reserves the most its sandbox
// may take (runtime.HostCoster) until the sandbox ends, and is refused
// when that does not fit. A zero field bounds nothing.
type HostBudget struct {
	Pids int64 // host tasks (kernel.pid_max, kernel.threads-max)
	Ptys int64 // host pseudo-terminals of non-initial devpts
}

// Set says whether b bounds anything.
func (b HostBudget) Set() bool { return b.Pids > 0 || b.Ptys > 0 }

// Cost is what a Create on be with limits l must reserve: zero when b
// bounds nothing; an error when be cannot say (it is not a
// runtime.HostCoster), so that nothing runs unaccounted.
func (b HostBudget) Cost(be runtime.Backend, l runtime.Limits) (runtime.HostCost, error) {
	if !b.Set() {
		return runtime.HostCost{}, nil
	}
	hc, ok := be.(runtime.HostCoster)
	if !ok {
		return runtime.HostCost{}, fmt.Errorf("backend %s cannot say what its sandboxes take of the host, and this daemon has a host budget: %w", be.Name(), errdefs.ErrUnsupported)
	}
	return hc.HostCost(l)
}

// Admit refuses cost when it does not fit beside used (what the live
// sandboxes and the other Creates hold), naming the host table.
func (b HostBudget) Admit(used, cost runtime.HostCost) error {
	switch {
	case b.Pids > 0 && used.Pids+cost.Pids > b.Pids:
		return fmt.Errorf("host tasks: this sandbox may take %d, the daemon's sandboxes hold %d of the %d the host can give them (kernel.pid_max less the host's reserve): destroy a sandbox, ask for fewer pids, or raise kernel.pid_max: %w", cost.Pids, used.Pids, b.Pids, errdefs.ErrLimitExceeded)
	case b.Ptys > 0 && used.Ptys+cost.Ptys > b.Ptys:
		return fmt.Errorf("host terminals: this sandbox may open %d, the daemon's sandboxes hold %d of the %d the host can give them (kernel.pty.max less kernel.pty.reserve and a reserve): destroy a sandbox, ask for fewer ptys, or raise kernel.pty.max: %w", cost.Ptys, used.Ptys, b.Ptys, errdefs.ErrLimitExceeded)
	}
	return nil
}

// AdmitSandbox refuses one more sandbox beside the n that exist (live
// or being created).
func (c Caps) AdmitSandbox(n int) error {
	if c.Sandboxes > 0 && n >= c.Sandboxes {
		return fmt.Errorf("%d sandboxes exist: at most %d on this daemon (airlock serve --max-sandboxes): %w", n, c.Sandboxes, errdefs.ErrLimitExceeded)
	}
	return nil
}

// Check refuses limits l past c.Limits, naming the field.
func (c Caps) Check(l runtime.Limits) error {
	over := func(name string, v, max any) error {
		return fmt.Errorf("limits.%s %v: at most %v on this daemon (airlock serve --max-*): %w", name, v, max, errdefs.ErrInvalid)
	}
	m := c.Limits
	switch {
	case m.MemoryBytes > 0 && l.MemoryBytes > m.MemoryBytes:
		return over("memory_bytes", l.MemoryBytes, m.MemoryBytes)
	case m.Pids > 0 && l.Pids > m.Pids:
		return over("pids", l.Pids, m.Pids)
	case m.CPUs > 0 && l.CPUs > m.CPUs:
		return over("cpus", l.CPUs, m.CPUs)
	case m.DiskBytes > 0 && l.DiskBytes > m.DiskBytes:
		return over("disk_bytes", l.DiskBytes, m.DiskBytes)
	case m.TmpBytes > 0 && l.TmpBytes > m.TmpBytes:
		return over("tmp_bytes", l.TmpBytes, m.TmpBytes)
	case m.NoFile > 0 && l.NoFile > m.NoFile:
		return over("nofile", l.NoFile, m.NoFile)
	case m.Ptys > 0 && l.Ptys > m.Ptys:
		return over("ptys", l.Ptys, m.Ptys)
	}
	return nil
}

// CheckLimits refuses negative limits, a CPU count that is not a finite
// number, and a limits.lifetime that is negative or past maxLifetime (0:
// reqcheck.MaxDuration), each naming its field. Upper bounds per daemon
// are Caps' (Check).
func CheckLimits(l runtime.Limits, maxLifetime time.Duration) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"memory_bytes", l.MemoryBytes}, {"pids", l.Pids}, {"disk_bytes", l.DiskBytes}, {"tmp_bytes", l.TmpBytes}, {"inodes", l.Inodes}} {
		if f.v < 0 {
			return fmt.Errorf("limits.%s: %d must not be negative: %w", f.name, f.v, errdefs.ErrInvalid)
		}
	}
	if l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) {
		return fmt.Errorf("limits.cpus: %v: want a number of CPUs, 0 or more: %w", l.CPUs, errdefs.ErrInvalid)
	}
	if l.NoFile > math.MaxInt32 {
		return fmt.Errorf("limits.nofile: %d: at most %d: %w", l.NoFile, math.MaxInt32, errdefs.ErrInvalid)
	}
	max := maxLifetime
	if max <= 0 || max > reqcheck.MaxDuration {
		max = reqcheck.MaxDuration
	}
	if l.Lifetime < 0 || l.Lifetime > max {
		return fmt.Errorf("limits.lifetime: %d nanoseconds: want 0 to %d: %w", int64(l.Lifetime), int64(max), errdefs.ErrInvalid)
	}
	return nil
}
