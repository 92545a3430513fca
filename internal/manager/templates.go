package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/template"
)

// Base is what a sandbox starts from: a template's root and binds, and a
// seed (a tar restored at "/" through runtime.Files at create and at
// every reset; "": none).
type Base struct {
	Name, Version string
	RootFS        string
	Lowers        []string // more layers below RootFS, top first (an image's)
	Binds         []runtime.Bind
	// Env is what its commands start with, before the caller's (the
	// template's PATH).
	Env  []string
	Seed string
}

// base resolves a template name: the built-in templates first, then each
// TemplateSource module in order.
func (m *Manager) base(name string) (*Base, error) {
	tpl, err := m.cfg.Templates.Get(name)
	if err == nil {
		b := &Base{Name: tpl.Name, Version: tpl.Version, RootFS: tpl.Dir, Lowers: tpl.Lowers, Env: tpl.Env}
		for _, bd := range tpl.Binds {
			b.Binds = append(b.Binds, runtime.Bind{Source: bd.Source, Target: bd.Target})
		}
		return b, nil
	}
	if !errors.Is(err, template.ErrNotFound) {
		return nil, err
	}
	for _, src := range m.templateSources {
		if b, serr := src.hook.Template(name); serr == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%v: %w", err, errdefs.ErrNotFound)
}

// TemplateInfo is a template a sandbox can be created from.
type TemplateInfo struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Kind    string    `json:"kind"` // "builtin", "snapshot", "image" or "debian"
	Base    string    `json:"base,omitempty"`
	Created time.Time `json:"created"`
}

// Templates lists the built-in templates and those of the TemplateSource
// modules.
func (m *Manager) Templates(ctx context.Context) ([]*TemplateInfo, error) {
	var out []*TemplateInfo
	if t, err := m.cfg.Templates.Get("host"); err == nil {
		out = append(out, &TemplateInfo{Name: t.Name, Version: t.Version, Kind: "builtin", Created: t.Created})
	}
	imgs, err := m.cfg.Templates.Images()
	if err != nil {
		return nil, err
	}
	for _, img := range imgs {
		out = append(out, &TemplateInfo{Name: img.Name, Version: img.Version, Kind: img.Kind, Base: img.Source, Created: img.Created})
	}
	for _, src := range m.templateSources {
		more, err := src.hook.Templates(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// seedSandbox restores a snapshot's files into a new sandbox.
func seedSandbox(ctx context.Context, sb runtime.Sandbox, seed string) error {
	f, ok := sb.(runtime.Files)
	if !ok {
		return fmt.Errorf("backend has no file access: %w", errdefs.ErrUnsupported)
	}
	r, err := os.Open(seed)
	if err != nil {
		return err
	}
	defer r.Close()
	return f.Untar(ctx, "/", r)
}
