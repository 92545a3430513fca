package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/recorder"

	"github.com/airlock-dev/airlock/internal/redacted"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// backend returns the named backend ("": the default).
func (m *Manager) backend(name string) (runtime.Backend, error) {
	if name == "" || name == m.cfg.Backend.Name() {
		return m.cfg.Backend, nil
	}
	if be, ok := m.cfg.Backends[name]; ok {
		return be, nil
	}
	if why, ok := m.cfg.Unavailable[name]; ok {
		return nil, fmt.Errorf("backend %q is not available on this host: %s: %w", name, why, errdefs.ErrUnsupported)
	}
	return nil, fmt.Errorf("backend %q: unknown (known: native, gvisor): %w", name, errdefs.ErrInvalid)
}

// Create makes a sandbox and records it, in named steps: admit the
// request, plan it (template, policy, backend), start it on the backend,
// record it, then make it live (TTL, watch, network, module hooks). What
// a step fails after is undone.
func (m *Manager) Create(ctx context.Context, req sandbox.CreateRequest) (*sandbox.Sandbox, error) {
	return m.create(ctx, req, "")
}

// create is Create, for the sandbox of task taskID ("": none). A warm
// pool's sandbox of the request's shape is claimed if one is ready;
// otherwise the backend starts one.
func (m *Manager) create(ctx context.Context, req sandbox.CreateRequest, taskID string) (*sandbox.Sandbox, error) {
	maxLife, err := m.projectDefaults(ctx, &req)
	if err != nil {
		return nil, err
	}
	ttl, err := m.admitCreate(&req, maxLife)
	if err != nil {
		return nil, err
	}
	p, err := m.planCreate(ctx, req, taskID)
	if err != nil {
		return nil, err
	}
	// the project's quotas, before anything starts (hook.Admitter)
	quota, err := m.hooks.AdmitCreate(ctx, p.project, req.Limits)
	if err != nil {
		return nil, err
	}
	sb, cost, release, err := m.claimOrStart(ctx, req, p)
	if err != nil {
		quota()
		return nil, err
	}
	defer release()
	if err := checkExpiry(req, sb); err != nil {
		_ = sb.Destroy(context.Background())
		m.dropNetwork(p.spec.ID)
		return nil, err
	}
	rec, err := m.recordCreate(ctx, req, p, sb, ttl)
	if err != nil {
		m.dropNetwork(p.spec.ID)
		quota()
		return nil, err
	}
	ls := &live{maxLife: maxLife, sb: sb, cost: cost, rec: rec, spec: p.spec, seed: p.base.Seed, base: *p.base, pol: p.pol, netLayer: p.netLayer, taskID: taskID,
		warm: p.warm, warmEnv: p.warmEnv, oneShot: req.OneShot, onExpiry: expiry{pause: req.PauseOnExpiry, ttl: ttl}, quota: quota}
	if err := m.goLive(ctx, ls); err != nil {
		return nil, err
	}
	if ls.oneShot {
		m.armOneShot(rec.ID, ls)
	}
	return m.recs.ShownSandbox(rec)
}

// claimOrStart is the plan's sandbox: a warm one claimed, else one the
// backend starts. release gives back what it reserved of the caps (once
// the sandbox is live, where it is counted).
func (m *Manager) claimOrStart(ctx context.Context, req sandbox.CreateRequest, p *createPlan) (runtime.Sandbox, runtime.HostCost, func(), error) {
	if w := m.claimWarm(ctx, req, p); w != nil {
		return w.sb, w.cost, w.release, nil
	}
	cost, err := m.cfg.Caps.Host.Cost(p.be, p.spec.Limits)
	if err != nil {
		return nil, cost, nil, err
	}
	release, err := m.reserve(ctx, cost)
	if err != nil {
		return nil, cost, nil, err
	}
	sb, err := m.startSandbox(ctx, p)
	if err != nil {
		m.dropNetwork(p.spec.ID)
		release()
		return nil, cost, nil, err
	}
	return sb, cost, release, nil
}

// reserve counts a Create and its cost against the caps until release.
// What the warm pools hold gives way: while the caps refuse it, a ready
// sandbox is evicted and the reservation tried again.
func (m *Manager) reserve(ctx context.Context, cost runtime.HostCost) (func(), error) {
	for {
		releaseSlot, err := m.reserveSlot(false)
		if err == nil {
			var releaseHost func()
			if releaseHost, err = m.reserveHost(cost); err == nil {
				return func() { releaseHost(); releaseSlot() }, nil
			}
			releaseSlot()
		}
		if !errors.Is(err, errdefs.ErrLimitExceeded) || m.hooks.Pool == nil || !m.hooks.Pool.Evict(ctx) {
			return nil, err
		}
	}
}

// projectDefaults gives a request its project's defaults
// (hook.Defaulter): its template when it names none, and the bound on
// its life, the shorter of the daemon's and the project's (0: none).
func (m *Manager) projectDefaults(ctx context.Context, req *sandbox.CreateRequest) (time.Duration, error) {
	maxLife := m.cfg.MaxLifetime
	project, err := tenant.NewObjectProject(ctx, req.Project)
	if err != nil {
		return 0, err
	}
	d, err := m.hooks.CreateDefaults(ctx, project)
	if err != nil {
		return 0, err
	}
	if req.Template == "" {
		req.Template = d.Template
	}
	if d.MaxLifetime > 0 && (maxLife <= 0 || d.MaxLifetime < maxLife) {
		maxLife = d.MaxLifetime
	}
	return maxLife, nil
}

// admitCreate checks a request, with maxLife its bound on life (0:
// none), before anything is reserved for it.
func (m *Manager) admitCreate(req *sandbox.CreateRequest, maxLife time.Duration) (time.Duration, error) {
	if req.Template == "" {
		req.Template = "host"
	}
	if err := template.ValidName(req.Template); err != nil {
		return 0, fmt.Errorf("template %q: %w", req.Template, errdefs.ErrInvalid)
	}
	ttl, err := sandbox.CheckCreate(*req, maxLife)
	if err != nil {
		return 0, err
	}
	if err := m.rec.Healthy(); err != nil {
		return 0, err
	}
	if err := m.cfg.Caps.Check(req.Limits); err != nil {
		return 0, err
	}
	return ttl, nil
}

// createPlan is what Create decided before the backend starts anything.
type createPlan struct {
	base *sandbox.Base
	pol  *policy.Policy
	// netLayer is the request's NetworkLayer (nil: none).
	netLayer *netpolicy.Policy
	be       runtime.Backend
	spec     runtime.Spec // without its ID and network yet
	taskID   string       // "": not a task's sandbox
	project  string       // who owns it (tenant.NewObjectProject)
	// warm is the warm pool's sandbox claimed for it (nil: none), and
	// warmEnv the request's env its commands get (see live.warm).
	warm    runtime.Sandbox
	warmEnv []string
}

// planCreate resolves the request's project, template, policy and
// backend.
func (m *Manager) planCreate(ctx context.Context, req sandbox.CreateRequest, taskID string) (*createPlan, error) {
	project, err := tenant.NewObjectProject(ctx, req.Project)
	if err != nil {
		return nil, err
	}
	pr, err := m.cfg.Store.GetProject(ctx, project)
	if err != nil || pr.Removed != nil {
		return nil, fmt.Errorf("project %q: %w", project, errdefs.ErrNotFound)
	}
	own, err := policy.LayerFromJSON(pr.Policy)
	if err != nil {
		return nil, fmt.Errorf("project %q: its stored policy cannot be read (%v): creates are refused until it is set again: %w", project, err, errdefs.ErrUnsupported)
	}
	if err := m.learnSecrets(req.Env); err != nil {
		return nil, err
	}
	base, err := m.base(ctx, req.Template)
	if err != nil {
		return nil, err
	}
	if err := seedFits(base, req.User); err != nil {
		return nil, err
	}
	source := "sandbox"
	if taskID != "" {
		source = "task"
	}
	lineage := append(slices.Clone(base.Lineage), base.Name)
	pol, err := sandbox.PolicyOf(m.cfg.Policy, lineage, project, own, req.Policy, req.TightenOnly, source)
	if err != nil {
		return nil, err
	}
	pol = pol.WithHome(req.User.Home)
	if l := req.NetworkLayer; l != nil {
		if _, err := pol.Egress.NarrowedBy(*l); err != nil {
			return nil, fmt.Errorf("network layer: %w", err)
		}
	}
	beName := req.Backend
	if beName == "" {
		beName = m.cfg.TemplateBackends[base.Name]
	}
	be, err := m.backend(beName)
	if err != nil {
		return nil, err
	}
	spec := runtime.Spec{RootFS: base.RootFS, Lowers: base.Lowers, Binds: base.Binds, Env: runtime.MergeEnv(base.Env, req.Env), Limits: req.Limits, User: req.User}
	return &createPlan{base: base, pol: pol, netLayer: req.NetworkLayer, be: be, spec: spec, taskID: taskID, project: project}, nil
}

// startSandbox gives the plan's spec its ID and network (the network
// module's), starts it on the backend and restores its snapshot seed;
// p.spec is then as created (Reset starts over from it).
func (m *Manager) startSandbox(ctx context.Context, p *createPlan) (runtime.Sandbox, error) {
	p.spec.ID = runtime.NewID()
	if m.hooks.Network != nil {
		n, err := m.hooks.Network.SandboxNetwork(p.spec.ID)
		if err != nil {
			return nil, err
		}
		p.spec.Network, p.spec.MaxProxyConns = n.Network, n.MaxProxyConns
		p.spec.Env = append(slices.Clip(n.Env), p.spec.Env...)
		p.spec.Binds = append(slices.Clip(p.spec.Binds), n.Binds...)
	}
	sb, err := p.be.Create(ctx, p.spec)
	if err != nil {
		return nil, err
	}
	if p.base.Seed != "" {
		if err := seedSandbox(ctx, sb, p.base.Seed); err != nil {
			_ = sb.Destroy(context.Background())
			return nil, fmt.Errorf("restore snapshot %s: %w", p.base.Name, err)
		}
	}
	return sb, nil
}

// dropNetwork forgets the network of a sandbox that never went live (its
// CA and trust bundle were made for it before the backend's create).
func (m *Manager) dropNetwork(id string) {
	if m.hooks.Network != nil && id != "" {
		m.hooks.Network.RemoveSandbox(id)
	}
}

// recordCreate writes the new sandbox's record and its sandbox.create
// event; either failing destroys it (a record that is written stays,
// stopped as failed).
func (m *Manager) recordCreate(ctx context.Context, req sandbox.CreateRequest, p *createPlan, sb runtime.Sandbox, ttl time.Duration) (*store.Sandbox, error) {
	info, pol := sb.Info(), p.pol
	specJSON, _ := json.Marshal(redacted.Spec{Limits: info.Limits, EnvNames: envNames(req.Env), Policy: pol})
	isoJSON, _ := json.Marshal(info.Isolation)
	rec := &store.Sandbox{
		ID: sb.ID(), State: "running", Backend: p.be.Name(), Template: p.base.Name, TemplateVersion: p.base.Version,
		Labels: req.Labels, Spec: specJSON, Isolation: isoJSON, Created: time.Now().UTC(), Project: p.project,
	}
	if ttl > 0 {
		exp := rec.Created.Add(ttl)
		rec.Expires = &exp
	}
	if err := recorder.RecordFirst("record sandbox", m.cfg.Store.PutSandbox(ctx, rec)); err != nil {
		_ = sb.Destroy(context.Background())
		return nil, err
	}
	// The labels' keys are user data the audit log's redaction keeps
	// when shaped like a field's name (redact.JSON): redacted here.
	labels, err := redacted.Scrubbed(m.cfg.Redactor, &req.Labels)
	if err == nil {
		payload := map[string]any{
			"template": p.base.Name, "template_version": p.base.Version, "backend": rec.Backend, "limits": info.Limits, "isolation": info.Isolation,
			"env_names": envNames(req.Env), "labels": *labels, "policy": pol.Version(), "policy_sources": pol.Sources, "expires": rec.Expires,
			"project": rec.Project}
		if p.netLayer != nil {
			payload["network_layer"] = p.netLayer
		}
		if p.warm != nil {
			payload["warm"] = true // claimed from the warm pool
		}
		err = m.rec.Record(ctx, audit.Entry{SandboxID: rec.ID, TaskID: p.taskID, Kind: "sandbox.create", Payload: payload})
	}
	if err != nil {
		_ = sb.Destroy(context.Background())
		now := time.Now().UTC()
		rec.State, rec.Stopped, rec.StopReason = "stopped", &now, sandbox.StopFailed
		m.rec.BestEffort("sandbox "+rec.ID+": record it stopped", m.cfg.Store.UpdateSandbox(context.Background(), rec))
		return nil, err
	}
	return rec, nil
}

// goLive enters a recorded sandbox in the live set (its TTL armed, its
// end watched), applies its egress policy, then runs the modules'
// CreateHooks; a failure stops it as failed.
func (m *Manager) goLive(ctx context.Context, ls *live) error {
	id := ls.rec.ID
	m.mu.Lock()
	m.live[id] = ls
	m.armTTL(ls)
	m.mu.Unlock()
	go m.watch(ls, ls.sb)
	if err := m.applyEgress(ctx, id); err != nil {
		m.rec.BestEffort("sandbox "+id+": stop it as failed", m.stop(context.WithoutCancel(ctx), id, sandbox.StopFailed))
		return fmt.Errorf("egress policy: %w", err)
	}
	for _, h := range m.hooks.Create {
		if err := h.Hook.OnCreate(ctx, hook.SandboxRef{ID: id, TaskID: ls.taskID}); err != nil {
			m.rec.BestEffort("sandbox "+id+": stop it as failed", m.stop(context.WithoutCancel(ctx), id, sandbox.StopFailed))
			return fmt.Errorf("module %s: %w", h.Name, err)
		}
	}
	return nil
}

// armTTL (re)starts the sandbox's TTL timer; m.mu held.
func (m *Manager) armTTL(ls *live) {
	if ls.ttl != nil {
		ls.ttl.Stop()
		ls.ttl = nil
	}
	if ls.rec.Expires == nil {
		return
	}
	m.armAt(ls, *ls.rec.Expires) // expiry.go: destroyed or paused then
}

// watch records a sandbox that stopped on its own.
func (m *Manager) watch(ls *live, sb runtime.Sandbox) {
	<-sb.Done()
	m.mu.Lock()
	cur, still := m.live[ls.rec.ID]
	// not destroyed, not being reset, not reset since
	still = still && cur == ls && ls.state != sandbox.Resetting && ls.sb == sb
	m.mu.Unlock()
	if still {
		m.rec.BestEffort("sandbox "+ls.rec.ID+": stop it as failed", m.stop(context.Background(), ls.rec.ID, sandbox.StopFailed))
	}
}

// SetTTL sets a running sandbox's time to live from now (0: none).
func (m *Manager) SetTTL(ctx context.Context, id string, ttl time.Duration) (*sandbox.Sandbox, error) {
	if ttl < 0 || ttl > reqcheck.MaxDuration {
		return nil, fmt.Errorf("ttl_seconds: want 0 to %d: %w", int64(reqcheck.MaxDuration/time.Second), errdefs.ErrInvalid)
	}
	m.mu.Lock()
	ls, ok := m.live[id]
	if !ok {
		m.mu.Unlock()
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	var exp *time.Time
	if ttl > 0 {
		e := time.Now().UTC().Add(ttl)
		exp = &e
	}
	// MaxLifetime (or the project's shorter one) counts from creation:
	// a TTL cannot push past it.
	if max := ls.maxLife; max > 0 {
		limit := ls.rec.Created.Add(max)
		if exp == nil {
			exp = &limit
		} else if exp.After(limit) {
			m.mu.Unlock()
			return nil, fmt.Errorf("the sandbox may live until %s (maximum lifetime %s): %w", limit.Format(time.RFC3339), max, errdefs.ErrInvalid)
		}
	}
	ls.rec.Expires = exp
	m.armTTL(ls)
	rec := *ls.rec
	m.mu.Unlock()
	if err := m.cfg.Store.UpdateSandbox(ctx, &rec); err != nil {
		return nil, err
	}
	m.rec.BestEffort("sandbox "+id+": record its timeout", m.rec.Record(ctx, audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "sandbox.timeout", Payload: map[string]any{"ttl": ttl.String(), "expires": rec.Expires}}))
	return m.recs.ShownSandbox(&rec)
}

// warm is a ready sandbox made for the warm pool (hook.Warm): started,
// holding its slot and host cost of the caps, not live, not recorded.
type warm struct {
	m        *Manager
	sb       runtime.Sandbox
	shape    hook.WarmShape
	spec     runtime.Spec // as started: its ID and network
	netEnv   []string     // what its network put in spec.Env (first)
	netBinds []runtime.Bind
	version  string // its template's version (a newer one is not claimed)
	layers   []string
	cost     runtime.HostCost
	release  func() // its slot and host cost

	mu    sync.Mutex
	taken bool // claimed or discarded: it is handed out once
}

func (w *warm) ID() string            { return w.spec.ID }
func (w *warm) Shape() hook.WarmShape { return w.shape }
func (w *warm) Layers() []string      { return slices.Clone(w.layers) }
func (w *warm) Done() <-chan struct{} { return w.sb.Done() }

// Discard destroys w unless it was taken (claimed or discarded).
func (w *warm) Discard(context.Context) {
	if w.take() {
		w.end()
	}
}

// take marks w taken; false: it already was (claimed or discarded).
func (w *warm) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.taken {
		return false
	}
	w.taken = true
	return true
}

// end destroys a taken w that will not be claimed.
func (w *warm) end() {
	_ = w.sb.Destroy(context.Background())
	w.m.dropNetwork(w.spec.ID)
	w.release()
}

// prewarm makes a warm sandbox of shape s (Core.Prewarm).
func (m *Manager) prewarm(ctx context.Context, s hook.WarmShape) (*warm, error) {
	if s.Template == "" || s.Backend == "" {
		return nil, fmt.Errorf("a warm sandbox needs its template and backend: %w", errdefs.ErrInvalid)
	}
	if err := m.cfg.Caps.Check(s.Limits); err != nil {
		return nil, err
	}
	base, err := m.base(ctx, s.Template)
	if err != nil {
		return nil, err
	}
	be, err := m.backend(s.Backend)
	if err != nil {
		return nil, err
	}
	releaseSlot, err := m.reserveSlot(true)
	if err != nil {
		return nil, err
	}
	cost, err := m.cfg.Caps.Host.Cost(be, s.Limits)
	var releaseHost func()
	if err == nil {
		releaseHost, err = m.reserveHost(cost)
	}
	if err != nil {
		releaseSlot()
		return nil, err
	}
	release := func() { releaseHost(); releaseSlot() }
	p := &createPlan{base: base, be: be, spec: runtime.Spec{RootFS: base.RootFS, Lowers: base.Lowers, Binds: base.Binds, Env: runtime.MergeEnv(base.Env), Limits: s.Limits}}
	nEnv, nBinds := len(p.spec.Env), len(p.spec.Binds)
	sb, err := m.startSandbox(ctx, p)
	if err != nil {
		m.dropNetwork(p.spec.ID)
		release()
		return nil, err
	}
	return &warm{m: m, sb: sb, shape: s, spec: p.spec, netEnv: p.spec.Env[:len(p.spec.Env)-nEnv], netBinds: p.spec.Binds[nBinds:],
		version: base.Version, layers: append([]string{base.RootFS}, base.Lowers...), cost: cost, release: release}, nil
}

// warmShape is the shape of the warm sandboxes a request may claim: its
// template and backend, and its limits but those a claim applies
// (runtime.Relimiter). ok false: nothing of a pool fits it (a command
// user of its own is in the sandbox's passwd, made at create).
func warmShape(req sandbox.CreateRequest, p *createPlan) (hook.WarmShape, bool) {
	l := req.Limits
	l.MemoryBytes, l.CPUs, l.Lifetime = 0, 0, 0
	return hook.WarmShape{Template: p.base.Name, Backend: p.be.Name(), Limits: l}, req.User == runtime.User{}
}

// claimWarm takes a warm sandbox for the plan, if the pool has one of its
// shape that can be given the request's limits, and makes p.spec what
// startSandbox would have; nil: start one. A warm sandbox taken but not
// claimed (its template changed since, it stopped, its limits cannot be
// set) is destroyed: it ran nothing, and the request is not cut down to
// fit it.
func (m *Manager) claimWarm(ctx context.Context, req sandbox.CreateRequest, p *createPlan) *warm {
	shape, ok := warmShape(req, p)
	if m.hooks.Pool == nil || !ok {
		return nil
	}
	w, _ := m.hooks.Pool.Take(shape).(*warm)
	if w == nil || w.m != m || !w.take() {
		return nil
	}
	var err error
	select {
	case <-w.sb.Done():
		err = fmt.Errorf("it stopped while it waited")
	default:
		if w.shape != shape || w.version != p.base.Version {
			err = fmt.Errorf("template %s changed since", shape.Template)
		} else if req.Limits != w.shape.Limits {
			err = relimit(ctx, w.sb, req.Limits)
		}
	}
	if err != nil {
		m.cfg.Logf("warm sandbox %s not claimed: %v", w.spec.ID, err)
		w.end()
		return nil
	}
	p.spec.ID, p.spec.Network, p.spec.MaxProxyConns = w.spec.ID, w.spec.Network, w.spec.MaxProxyConns
	p.spec.Env = append(slices.Clip(w.netEnv), p.spec.Env...)
	p.spec.Binds = append(slices.Clip(p.spec.Binds), w.netBinds...)
	p.warm, p.warmEnv = w.sb, slices.Clone(req.Env)
	return w
}

// relimit gives a warm sandbox the request's limits.
func relimit(ctx context.Context, sb runtime.Sandbox, lim runtime.Limits) error {
	r, ok := sb.(runtime.Relimiter)
	if !ok {
		return fmt.Errorf("its backend cannot change limits after create: %w", errdefs.ErrUnsupported)
	}
	return r.Relimit(ctx, lim)
}
