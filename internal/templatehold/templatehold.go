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
// The sandbox may stop meanwhile (a destroy, its TTL): the core takes it
// out of the live set before its StopHooks run, so once the hold is kept
// it is looked up again, and a sandbox no longer live has its hold let
// go here or by OnStop, whichever takes it first (else it would be kept
// until the daemon stopped).
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
	if _, ok := m.core.Live(sb.ID); !ok {
		m.let(sb.ID) // stopped: nothing to hold, and nothing failed here
	}
	return nil
}

// let lets go of the hold of sandbox id, if it is still kept.
func (m *Module) let(id string) {
	m.mu.Lock()
	release := m.held[id]
	delete(m.held, id)
	m.mu.Unlock()
	if release != nil {
		release()
	}
}

// OnStop lets the stopped sandbox's layers go.
func (m *Module) OnStop(_ context.Context, ev hook.StopEvent) map[string]any {
	m.let(ev.SandboxID)
	return nil
}
