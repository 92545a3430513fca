package manager

import (
	"fmt"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Caps bound what any caller may ask for (airlock serve's --max-* flags):
// a client, remote ones too, chooses its sandboxes' limits, but not past
// these. A zero field bounds nothing.
type Caps struct {
	// Limits: the most one sandbox may ask for, field by field (memory,
	// pids, cpus, disk, tmp, nofile, ptys).
	Limits runtime.Limits
	// Sandboxes: how many may exist at once.
	Sandboxes int
}

func (c Caps) check(l runtime.Limits) error {
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

// reserveSlot counts a Create against Caps.Sandboxes until release.
func (m *Manager) reserveSlot() (release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.cfg.Caps.Sandboxes; n > 0 && len(m.live)+m.creating >= n {
		return nil, fmt.Errorf("%d sandboxes exist: at most %d on this daemon (airlock serve --max-sandboxes): %w", len(m.live)+m.creating, n, errdefs.ErrLimitExceeded)
	}
	m.creating++
	return func() {
		m.mu.Lock()
		m.creating--
		m.mu.Unlock()
	}, nil
}
