package manager

import (
	"strings"
	"time"
)

// MaxLifetime is the daemon's bound on a sandbox's life (0: none), for
// the doors that check a request before they hand it over.
func (m *Manager) MaxLifetime() time.Duration { return m.cfg.MaxLifetime }

func envNames(env []string) []string {
	var names []string
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			names = append(names, k)
		}
	}
	return names
}
