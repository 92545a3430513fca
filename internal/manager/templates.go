package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/template"
)

// base resolves a template name: the built-in templates first, then each
// TemplateSource module in order.
func (m *Manager) base(ctx context.Context, name string) (*sandbox.Base, error) {
	tpl, err := m.cfg.Templates.Get(name)
	if err == nil {
		b := &sandbox.Base{Name: tpl.Name, Version: tpl.Version, RootFS: tpl.Dir, Lowers: tpl.Lowers, Env: tpl.Env, WorkDir: tpl.WorkDir}
		if b.WorkDir != "" && !path.IsAbs(b.WorkDir) {
			return nil, fmt.Errorf("template %q: working directory %q is not absolute: %w", name, b.WorkDir, errdefs.ErrInvalid)
		}
		b.WorkDir = path.Clean(b.WorkDir)
		if b.WorkDir == "." {
			b.WorkDir = ""
		}
		for _, bd := range tpl.Binds {
			b.Binds = append(b.Binds, runtime.Bind{Source: bd.Source, Target: bd.Target})
		}
		return b, nil
	}
	if !errors.Is(err, template.ErrNotFound) {
		return nil, err
	}
	if b, ok := m.hooks.Template(ctx, name); ok {
		return b, nil
	}
	return nil, fmt.Errorf("%v: %w", err, errdefs.ErrNotFound)
}

// Templates lists the built-in templates and those of the TemplateSource
// modules.
func (m *Manager) Templates(ctx context.Context) ([]*sandbox.TemplateInfo, error) {
	var out []*sandbox.TemplateInfo
	if t, err := m.cfg.Templates.Get("host"); err == nil {
		out = append(out, &sandbox.TemplateInfo{Name: t.Name, Version: t.Version, Kind: "builtin", Created: t.Created})
	}
	imgs, err := m.cfg.Templates.Images()
	if err != nil {
		return nil, err
	}
	for _, img := range imgs {
		out = append(out, &sandbox.TemplateInfo{Name: img.Name, Version: img.Version, Kind: img.Kind, Base: img.Source, Created: img.Created})
	}
	more, err := m.hooks.TemplateList(ctx)
	if err != nil {
		return nil, err
	}
	return append(out, more...), nil
}

// seedFits refuses a snapshot for a sandbox whose command user's home
// is not the one the snapshot kept: restoring /home/user into a
// /home/sandbox sandbox (or the other way) would put the home's files
// where no one looks for them, or fail half way.
func seedFits(base *sandbox.Base, u runtime.User) error {
	if base.Seed == "" {
		return nil
	}
	ru, err := u.Resolve()
	if err != nil {
		return err
	}
	seed := base.SeedHome
	if seed == "" {
		seed = runtime.DefaultUser.Home
	}
	if ru.Home != seed {
		return fmt.Errorf("template %s is a snapshot of a sandbox whose home is %s, and this sandbox's home is %s: start it as that user (a snapshot of an E2B door sandbox starts through the E2B door): %w", base.Name, seed, ru.Home, errdefs.ErrInvalid)
	}
	return nil
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
