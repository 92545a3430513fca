package manager

import (
	"github.com/airlock-dev/airlock/internal/caps"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Caps and HostBudget are internal/caps's (named here too: the daemon's
// Config spells them manager.Caps). The core keeps the count of what
// its sandboxes hold; caps says whether one more fits.
type (
	Caps       = caps.Caps
	HostBudget = caps.HostBudget
)

// reserveHost counts cost against Caps.Host until release, refusing
// what would not fit beside the live sandboxes and the other Creates.
func (m *Manager) reserveHost(cost runtime.HostCost) (release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	used := m.reserved
	for _, ls := range m.live {
		used.Pids += ls.cost.Pids
		used.Ptys += ls.cost.Ptys
	}
	if err := m.cfg.Caps.Host.Admit(used, cost); err != nil {
		return nil, err
	}
	m.reserved.Pids += cost.Pids
	m.reserved.Ptys += cost.Ptys
	return func() {
		m.mu.Lock()
		m.reserved.Pids -= cost.Pids
		m.reserved.Ptys -= cost.Ptys
		m.mu.Unlock()
	}, nil
}

// reserveSlot counts a Create (or, with warm, a warm pool's sandbox)
// against Caps.Sandboxes until release, beside the live sandboxes and
// those whose teardown has not ended (a destroy answered early, as
// DestroyAsync's is, still holds its processes and disk until then).
func (m *Manager) reserveSlot(warm bool) (release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.cfg.Caps.AdmitSandbox(len(m.live) + m.creating + m.warm + len(m.stopping)); err != nil {
		return nil, err
	}
	n := &m.creating
	if warm {
		n = &m.warm
	}
	*n++
	return func() {
		m.mu.Lock()
		*n--
		m.mu.Unlock()
	}, nil
}
