// Package projects keeps the daemon's projects (tenants, issue 22), a
// module of the sandbox core (hook.Module): made, listed and removed by
// the operator, each change on the audit record. What a project owns is
// kept where each object is (a sandbox's record names its project; see
// internal/tenant for who sees what).
//
// It uses only the store and the audit record of its hook.Core.
package projects

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Project is a project as the API shows it.
type Project struct {
	ID      string
	Created time.Time
	Removed *time.Time
}

// Projects is the module. Its methods fail (ErrUnsupported) until
// manager.New has attached it.
type Projects struct {
	// EndKey ends the requests in progress of a removed project's key
	// (apikeys.Keys.EndRequests); nil: nothing to end.
	EndKey func(keyID string)

	st      *store.Store
	file    func() *policy.File  // the daemon's policy file
	maxLife func() time.Duration // the daemon's maximum lifetime (0: none)
	record  func(context.Context, audit.Entry) error
	now     func() time.Time
	logf    func(string, ...any)
}

// New makes the module; attach it through manager.Config.Modules.
func New() *Projects { return &Projects{} }

// Name is the module's name.
func (p *Projects) Name() string { return "projects" }

// Attach takes what the module uses of the core, and says in the
// daemon's log what an upgrade from before projects did.
func (p *Projects) Attach(c hook.Core) error {
	p.st, p.record, p.now, p.logf, p.file, p.maxLife = c.Store(), c.Record, c.Now, c.Logf, c.PolicyFile, c.MaxLifetime
	p.logUpgrade()
	return nil
}

func (p *Projects) logUpgrade() {
	from := p.st.OpenedAt()
	if from == 0 || from >= store.ProjectsVersion {
		return
	}
	ctx := context.Background()
	keys, _ := p.st.ListAPIKeys(ctx)
	sbs, _ := p.st.ListSandboxes(ctx, "")
	p.logf("upgrade: the database had no projects: its %d sandboxes (with their tasks, execs, approvals and grants) now belong to project %q, and its %d API keys are that project's agent keys (make reviewer and admin keys with 'airlock apikey create --project P --role R')",
		len(sbs), tenant.Default, len(keys))
}

func (p *Projects) attached() error {
	if p.st == nil {
		return fmt.Errorf("projects: the module is not attached to a manager: %w", errdefs.ErrUnsupported)
	}
	return nil
}

func projectOf(r *store.Project) *Project {
	return &Project{ID: r.ID, Created: r.Created, Removed: r.Removed}
}

// operator refuses every caller but the operator: projects are made and
// removed on the daemon's host.
func operator(ctx context.Context) error {
	if !tenant.Of(ctx).IsOperator() {
		return fmt.Errorf("projects are made and removed by the operator (the daemon's unix socket): %w", errdefs.ErrDenied)
	}
	return nil
}

// Create makes project name (tenant.CheckProject); a name in use, or
// once used, is a conflict.
func (p *Projects) Create(ctx context.Context, name string) (*Project, error) {
	if err := p.attached(); err != nil {
		return nil, err
	}
	if err := operator(ctx); err != nil {
		return nil, err
	}
	if err := tenant.CheckProject(name); err != nil {
		return nil, err
	}
	rec := &store.Project{ID: name, Created: p.now()}
	if err := p.st.PutProject(ctx, rec); err != nil {
		return nil, err
	}
	_ = p.record(ctx, audit.Entry{Kind: "project.create", Payload: map[string]any{"project": name}})
	return projectOf(rec), nil
}

// List lists the projects the caller sees (the operator: all, removed
// ones too; a key: its own).
func (p *Projects) List(ctx context.Context) ([]*Project, error) {
	if err := p.attached(); err != nil {
		return nil, err
	}
	recs, err := p.st.ListProjects(ctx)
	if err != nil {
		return nil, err
	}
	out := []*Project{}
	for _, r := range recs {
		if tenant.Of(ctx).Sees(r.ID) {
			out = append(out, projectOf(r))
		}
	}
	return out, nil
}

// Get is project id if the caller sees it (else not found).
func (p *Projects) Get(ctx context.Context, id string) (*Project, error) {
	if err := p.attached(); err != nil {
		return nil, err
	}
	r, err := p.st.GetProject(ctx, id)
	if err != nil || !tenant.Of(ctx).Sees(id) {
		return nil, fmt.Errorf("project %q: %w", id, errdefs.ErrNotFound)
	}
	return projectOf(r), nil
}

// Remove removes project id: its keys are revoked, its records stay, it
// takes nothing new, and its name is not reused. A project with
// sandboxes not stopped is a conflict; the default project cannot go.
func (p *Projects) Remove(ctx context.Context, id string) error {
	if err := p.attached(); err != nil {
		return err
	}
	if err := operator(ctx); err != nil {
		return err
	}
	keys, err := p.st.RemoveProject(ctx, id, p.now())
	if err != nil {
		return err
	}
	for _, k := range keys {
		if p.EndKey != nil {
			p.EndKey(k)
		}
	}
	return p.record(ctx, audit.Entry{Kind: "project.remove", Payload: map[string]any{"project": id, "keys_revoked": keys}})
}

// OwnerOf is the project that owns object id of kind (not found: no
// such object): the API's guard asks it for every route that names one.
func (p *Projects) OwnerOf(ctx context.Context, kind tenant.Kind, id string) (string, error) {
	if err := p.attached(); err != nil {
		return "", err
	}
	return p.st.OwnerOf(ctx, string(kind), id)
}
