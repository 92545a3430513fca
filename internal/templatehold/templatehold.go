// Package templatehold is the daemon's module that keeps an image
// template's layers from the template GC while a sandbox runs on them
// (issue 21): a hold (template.Store.HoldDirs, shared flocks that die
// with the daemon) from the sandbox's create to its stop. A template
// removed meanwhile loses its record at once; its layers go at the
// first GC after the last sandbox on them stopped.
package templatehold

import (
	"context"
	"fmt"
	"sync"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/template"
)

// Module holds the layers of every live sandbox's template.
type Module struct {
	store *template.Store
	core  hook.Core

	mu   sync.Mutex
	held map[string]func() // sandbox id -> release
}

// New returns the module for the daemon's template store.
func New(s *template.Store) *Module {
	return &Module{store: s, held: map[string]func(){}}
}

// Name is the module's name.
func (m *Module) Name() string { return "templatehold" }

// Attach keeps the core.
func (m *Module) Attach(c hook.Core) error {
	m.core = c
	return nil
}

// OnCreate holds the new sandbox's layers (none for a built-in template).
func (m *Module) OnCreate(_ context.Context, sb hook.SandboxRef) error {
	info, ok := m.core.Live(sb.ID)
	if !ok {
		return fmt.Errorf("sandbox %s is not live", sb.ID)
	}
	release, err := m.store.HoldDirs(append([]string{info.Base.RootFS}, info.Base.Lowers...))
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.held[sb.ID] = release
	m.mu.Unlock()
	return nil
}

// OnStop lets the stopped sandbox's layers go.
func (m *Module) OnStop(_ context.Context, ev hook.StopEvent) map[string]any {
	m.mu.Lock()
	release := m.held[ev.SandboxID]
	delete(m.held, ev.SandboxID)
	m.mu.Unlock()
	if release != nil {
		release()
	}
	return nil
}
