// Package manager is the daemon's sandbox manager: it creates sandboxes on
// a runtime backend from templates, runs commands in them, enforces TTLs,
// and keeps the record of every sandbox and exec in the store. It is the
// only caller of the backend and the store; the API layer calls it.
//
// Invariants: a sandbox's record is written before Create returns and is
// never deleted by the manager (records outlive sandboxes); every exec
// gets a record before it starts and its end (or failure) is recorded.
package manager

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// Stop reasons recorded for a sandbox.
const (
	StopDestroyed = "destroyed"
	StopExpired   = "expired"
	StopLost      = "lost"   // the daemon that owned it went away
	StopFailed    = "failed" // its init died on its own
	StopShutdown  = "daemon-stopped"
)

// DefaultStoredOutput caps what is kept of each stream of each exec.
const DefaultStoredOutput = 1 << 20

// Config wires a Manager.
type Config struct {
	Backend   runtime.Backend
	Templates *template.Store
	Store     *store.Store
	// Backends are the backends besides Backend (the default) a request
	// may name (CreateRequest.Backend), by Name; Unavailable says, per
	// backend name, why it is missing on this host and how to install it,
	// for a clear error instead of a fallback to another boundary.
	Backends    map[string]runtime.Backend
	Unavailable map[string]string
	// TemplateBackends names the backend of a template's sandboxes when
	// the request names none (template name -> backend name).
	TemplateBackends map[string]string
	// MaxLifetime bounds every sandbox's life: a sandbox asked for without
	// a TTL gets it, and a longer TTL is refused. 0: no bound.
	MaxLifetime time.Duration
	// Caps bound what any caller may ask for.
	Caps Caps
	// StoredOutput caps the bytes kept per stream per exec; 0: default.
	StoredOutput int64
	// Policy is the daemon's policy file; nil: the built-in defaults.
	Policy *policy.File
	// Now is the clock (nil: time.Now); tests move it.
	Now func() time.Time
	// Audit is the tamper-evident record (nil: none is kept).
	Audit *audit.Log
	// AuditRetry is how often a stopped audit log is tried again
	// (0: DefaultAuditRetry).
	AuditRetry time.Duration
	// Redactor hides secrets in stored output and records (nil: none).
	Redactor Redactor
	Logf     func(format string, args ...any)
	// Modules are the features attached to the core, in the order their
	// hooks run (see Module).
	Modules []Module
}

// Manager owns the live sandboxes of one daemon.
type Manager struct {
	cfg Config

	// reserved is what Creates under way reserve of Caps.Host (m.mu).
	reserved runtime.HostCost

	mu       sync.Mutex
	creating int // Creates under way (counted against Caps.Sandboxes)
	live     map[string]*live
	running  map[string]*runningExec // by exec id

	// egressSvc is the network module's egress service (NetworkModule);
	// nil: no network.
	egressSvc Network

	auditRetry auditRetry

	// The modules' hooks, in Config.Modules order (set by attach).
	createHooks    []named[CreateHook]
	execHooks      []named[ExecHook]
	afterExecHooks []named[AfterExecHook]
	stopHooks      []named[StopHook]
	// templateSources resolve template names the built-ins do not have.
	templateSources []named[TemplateSource]
	// The secrets surface (module_secrets.go).
	secretSources []named[SecretSource]
	brokerSources []named[BrokerSource]
	taskEndHooks  []named[TaskEndHook]
	// The approvals surface (module_approvals.go); holder nil: an ask is
	// denied.
	lifts  []named[PolicyLift]
	holder *named[Holder]
	// bundler writes tasks' review bundles (module_review.go); nil: none.
	bundler TaskBundler
}

func (m *Manager) now() time.Time { return m.cfg.Now().UTC() }

// live is the record of a sandbox while it lives (in Manager.live).
type live struct {
	// state is where it is in its life; changed only by transition (m.mu).
	state State
	sb    runtime.Sandbox
	cost  runtime.HostCost // reserved of Caps.Host while it lives
	rec   *store.Sandbox
	ttl   *time.Timer
	spec  runtime.Spec // as created: Reset starts over from it
	seed  string       // snapshot seed restored at create (and reset)
	// base is the template it started from: spec's binds less the
	// network's (a snapshot must not keep this sandbox's trust bundle).
	base Base
	// pol is the sandbox's effective policy; taskID its task, if any;
	// scope the write scope applied inside it (again after a reset).
	pol    *policy.Policy
	taskID string
	scope  []string
	// starting counts this sandbox's execs between the backend's start of
	// the command and their entry in Manager.running: a connection the
	// command makes in that moment waits for it (Core.ExecOf).
	starting int
}

// New makes a manager. Sandboxes the store still lists as running died
// with the previous daemon: they are marked stopped ("lost"), and the
// commands it ran in them ended ("lost"), both on the audit record.
func New(ctx context.Context, cfg Config) (*Manager, error) {
	if cfg.Backend == nil || cfg.Templates == nil || cfg.Store == nil {
		return nil, fmt.Errorf("manager: backend, templates and store are required: %w", errdefs.ErrInvalid)
	}
	if cfg.StoredOutput <= 0 {
		cfg.StoredOutput = DefaultStoredOutput
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Redactor == nil {
		cfg.Redactor = nopRedactor{}
	}
	m := &Manager{cfg: cfg, live: map[string]*live{}, running: map[string]*runningExec{}}
	if err := m.attach(); err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if err := m.reapLost(ctx); err != nil {
		return nil, fmt.Errorf("manager: end what the previous daemon left running: %w", err)
	}
	m.startAuditRetry()
	return m, nil
}

// Sandbox is a sandbox as the API shows it.
type Sandbox struct {
	ID              string            `json:"id"`
	State           string            `json:"state"`
	Backend         string            `json:"backend"`
	Template        string            `json:"template"`
	TemplateVersion string            `json:"template_version"`
	Labels          map[string]string `json:"labels,omitempty"`
	Limits          runtime.Limits    `json:"limits"`
	Isolation       runtime.Isolation `json:"isolation"`
	Created         time.Time         `json:"created"`
	Expires         *time.Time        `json:"expires,omitempty"`
	Stopped         *time.Time        `json:"stopped,omitempty"`
	StopReason      string            `json:"stop_reason,omitempty"`
	// Policy is the version of the sandbox's effective policy, and the
	// layers that made it.
	Policy        string   `json:"policy,omitempty"`
	PolicySources []string `json:"policy_sources,omitempty"`
	// Egress is what a running sandbox's egress has recorded against its
	// audit budget, and the cut if it used it up (GET of one sandbox).
	Egress *egress.Usage `json:"egress,omitempty"`
}

// specRecord is what the store keeps of a sandbox's spec.
type specRecord struct {
	Limits   runtime.Limits `json:"limits"`
	EnvNames []string       `json:"env_names,omitempty"`
	Policy   *policy.Policy `json:"policy,omitempty"`
}

func view(rec *store.Sandbox) *Sandbox {
	v := &Sandbox{
		ID: rec.ID, State: rec.State, Backend: rec.Backend, Template: rec.Template, TemplateVersion: rec.TemplateVersion,
		Labels: rec.Labels, Created: rec.Created, Expires: rec.Expires, Stopped: rec.Stopped, StopReason: rec.StopReason,
	}
	var sp specRecord
	if json.Unmarshal(rec.Spec, &sp) == nil {
		v.Limits = sp.Limits
		if sp.Policy != nil {
			v.Policy, v.PolicySources = sp.Policy.Version(), sp.Policy.Sources
		}
	}
	_ = json.Unmarshal(rec.Isolation, &v.Isolation)
	return v
}

// CreateRequest asks for a sandbox.
type CreateRequest struct {
	Template string `json:"template,omitempty"`
	// Backend names the isolation backend ("native", "gvisor"); "": the
	// daemon's default. One that is not available is an error, never a
	// fallback to another boundary.
	Backend    string            `json:"backend,omitempty"`
	Limits     runtime.Limits    `json:"limits"`
	TTLSeconds int64             `json:"ttl_seconds,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Env        []string          `json:"env,omitempty"`
	// Policy is the sandbox's own policy layer, over the daemon's.
	Policy *policy.Layer `json:"policy,omitempty"`
	// TightenOnly refuses a Policy that relaxes the daemon's (set for
	// callers that are agents, not operators).
	TightenOnly bool `json:"-"`
	taskID      string
}

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

func envNames(env []string) []string {
	var names []string
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			names = append(names, k)
		}
	}
	return names
}

func validEnv(env []string) error {
	for i, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("env[%d]: contains a NUL byte: %w", i, errdefs.ErrInvalid)
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("env[%d] %q: use K=V: %w", i, kv, errdefs.ErrInvalid)
		}
	}
	return nil
}

// Create makes a sandbox and records it, in named steps: admit the
// request, plan it (template, policy, backend), start it on the backend,
// record it, then make it live (TTL, watch, network, module hooks). What
// a step fails after is undone.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (*Sandbox, error) {
	ttl, err := m.admitCreate(&req)
	if err != nil {
		return nil, err
	}
	release, err := m.reserveSlot()
	if err != nil {
		return nil, err
	}
	defer release()
	p, err := m.planCreate(req)
	if err != nil {
		return nil, err
	}
	cost, err := m.hostCost(p.be, p.spec.Limits)
	if err != nil {
		return nil, err
	}
	releaseHost, err := m.reserveHost(cost)
	if err != nil {
		return nil, err
	}
	defer releaseHost()
	sb, err := m.startSandbox(ctx, p)
	if err != nil {
		m.dropNetwork(p.spec.ID)
		return nil, err
	}
	rec, err := m.recordCreate(ctx, req, p, sb, ttl)
	if err != nil {
		m.dropNetwork(p.spec.ID)
		return nil, err
	}
	ls := &live{sb: sb, cost: cost, rec: rec, spec: p.spec, seed: p.base.Seed, base: *p.base, pol: p.pol, taskID: req.taskID}
	if err := m.goLive(ctx, ls); err != nil {
		return nil, err
	}
	return m.shownSandbox(rec)
}

// admitCreate checks a request before anything is reserved for it.
func (m *Manager) admitCreate(req *CreateRequest) (time.Duration, error) {
	if req.Template == "" {
		req.Template = "host"
	}
	if err := template.ValidName(req.Template); err != nil {
		return 0, fmt.Errorf("template %q: %w", req.Template, errdefs.ErrInvalid)
	}
	ttl, err := CheckCreate(*req, m.cfg.MaxLifetime)
	if err != nil {
		return 0, err
	}
	if err := m.auditHealthy(); err != nil {
		return 0, err
	}
	if err := m.cfg.Caps.check(req.Limits); err != nil {
		return 0, err
	}
	return ttl, nil
}

// createPlan is what Create decided before the backend starts anything.
type createPlan struct {
	base *Base
	pol  *policy.Policy
	be   runtime.Backend
	spec runtime.Spec // without its ID and network yet
}

// planCreate resolves the request's template, policy and backend.
func (m *Manager) planCreate(req CreateRequest) (*createPlan, error) {
	if err := m.learnSecrets(req.Env); err != nil {
		return nil, err
	}
	base, err := m.base(req.Template)
	if err != nil {
		return nil, err
	}
	source := "sandbox"
	if req.taskID != "" {
		source = "task"
	}
	pol, err := m.sandboxPolicy(base.Name, req.Policy, req.TightenOnly, source)
	if err != nil {
		return nil, err
	}
	beName := req.Backend
	if beName == "" {
		beName = m.cfg.TemplateBackends[base.Name]
	}
	be, err := m.backend(beName)
	if err != nil {
		return nil, err
	}
	spec := runtime.Spec{RootFS: base.RootFS, Binds: base.Binds, Env: runtime.MergeEnv(base.Env, req.Env), Limits: req.Limits}
	return &createPlan{base: base, pol: pol, be: be, spec: spec}, nil
}

// startSandbox gives the plan's spec its ID and network (the network
// module's), starts it on the backend and restores its snapshot seed;
// p.spec is then as created (Reset starts over from it).
func (m *Manager) startSandbox(ctx context.Context, p *createPlan) (runtime.Sandbox, error) {
	p.spec.ID = runtime.NewID()
	if m.egressSvc != nil {
		n, err := m.egressSvc.SandboxNetwork(p.spec.ID)
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
	if m.egressSvc != nil && id != "" {
		m.egressSvc.RemoveSandbox(id)
	}
}

// recordCreate writes the new sandbox's record and its sandbox.create
// event; either failing destroys it (a record that is written stays,
// stopped as failed).
func (m *Manager) recordCreate(ctx context.Context, req CreateRequest, p *createPlan, sb runtime.Sandbox, ttl time.Duration) (*store.Sandbox, error) {
	info, pol := sb.Info(), p.pol
	specJSON, _ := json.Marshal(specRecord{Limits: info.Limits, EnvNames: envNames(req.Env), Policy: pol})
	isoJSON, _ := json.Marshal(info.Isolation)
	rec := &store.Sandbox{
		ID: sb.ID(), State: "running", Backend: p.be.Name(), Template: p.base.Name, TemplateVersion: p.base.Version,
		Labels: req.Labels, Spec: specJSON, Isolation: isoJSON, Created: time.Now().UTC(),
	}
	if ttl > 0 {
		exp := rec.Created.Add(ttl)
		rec.Expires = &exp
	}
	if err := m.cfg.Store.PutSandbox(ctx, rec); err != nil {
		_ = sb.Destroy(context.Background())
		return nil, fmt.Errorf("record sandbox: %w", err)
	}
	if err := m.record(ctx, audit.Entry{SandboxID: rec.ID, TaskID: req.taskID, Kind: "sandbox.create", Payload: map[string]any{
		"template": p.base.Name, "template_version": p.base.Version, "backend": rec.Backend, "limits": info.Limits, "isolation": info.Isolation,
		"env_names": envNames(req.Env), "labels": req.Labels, "policy": pol.Version(), "policy_sources": pol.Sources, "expires": rec.Expires}}); err != nil {
		_ = sb.Destroy(context.Background())
		now := time.Now().UTC()
		rec.State, rec.Stopped, rec.StopReason = "stopped", &now, StopFailed
		_ = m.cfg.Store.UpdateSandbox(context.Background(), rec)
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
		_ = m.stop(context.WithoutCancel(ctx), id, StopFailed)
		return fmt.Errorf("egress policy: %w", err)
	}
	for _, h := range m.createHooks {
		if err := h.hook.OnCreate(ctx, SandboxRef{ID: id, TaskID: ls.taskID}); err != nil {
			_ = m.stop(context.WithoutCancel(ctx), id, StopFailed)
			return fmt.Errorf("module %s: %w", h.name, err)
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
	id := ls.rec.ID
	ls.ttl = time.AfterFunc(time.Until(*ls.rec.Expires), func() {
		m.cfg.Logf("sandbox %s expired", id)
		_ = m.stop(context.Background(), id, StopExpired)
	})
}

// watch records a sandbox that stopped on its own.
func (m *Manager) watch(ls *live, sb runtime.Sandbox) {
	<-sb.Done()
	m.mu.Lock()
	cur, still := m.live[ls.rec.ID]
	// not destroyed, not being reset, not reset since
	still = still && cur == ls && ls.state != Resetting && ls.sb == sb
	m.mu.Unlock()
	if still {
		_ = m.stop(context.Background(), ls.rec.ID, StopFailed)
	}
}

// stop destroys a live sandbox and records why.
func (m *Manager) stop(ctx context.Context, id, reason string) error {
	m.mu.Lock()
	ls, ok := m.live[id]
	var sb runtime.Sandbox
	var prev State
	if ok {
		delete(m.live, id)
		if ls.ttl != nil {
			ls.ttl.Stop()
		}
		prev = ls.state
		_ = ls.transition(Stopped) // legal from every live state
		if prev != Resetting {
			sb = ls.sb // a reset under way cleans up itself
		}
		// Its processes run until Destroy is done (a task's diff comes
		// first): its share of the host stays reserved until then.
		m.reserved.Pids += ls.cost.Pids
		m.reserved.Ptys += ls.cost.Ptys
		defer func() {
			m.mu.Lock()
			m.reserved.Pids -= ls.cost.Pids
			m.reserved.Ptys -= ls.cost.Ptys
			m.mu.Unlock()
		}()
	}
	m.mu.Unlock()
	if ok && m.egressSvc != nil {
		m.egressSvc.RemoveSandbox(id)
	}
	if !ok {
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return err
		}
		return nil // already stopped: deleting twice is fine
	}
	payload := map[string]any{"reason": reason}
	for _, h := range m.stopHooks {
		for k, v := range h.hook.OnStop(context.WithoutCancel(ctx), StopEvent{SandboxID: id, TaskID: ls.taskID, Reason: reason, Prev: prev, Sandbox: sb}) {
			payload[k] = v
		}
	}
	var derr error
	if sb != nil {
		derr = sb.Destroy(ctx)
	}
	now := time.Now().UTC()
	m.mu.Lock()
	ls.rec.State, ls.rec.Stopped, ls.rec.StopReason = "stopped", &now, reason
	rec := *ls.rec
	m.mu.Unlock()
	if derr != nil {
		payload["error"] = derr.Error()
	}
	_ = m.record(context.WithoutCancel(ctx), audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "sandbox.stop", Payload: payload})
	if err := m.cfg.Store.UpdateSandbox(context.Background(), &rec); err != nil {
		return errors.Join(derr, err)
	}
	return derr
}

// Destroy stops a sandbox; its record stays.
func (m *Manager) Destroy(ctx context.Context, id string) error {
	return m.stop(ctx, id, StopDestroyed)
}

// Get returns a sandbox's record.
func (m *Manager) Get(ctx context.Context, id string) (*Sandbox, error) {
	rec, err := m.cfg.Store.GetSandbox(ctx, id)
	if err != nil {
		return nil, err
	}
	v, err := m.shownSandbox(rec)
	if err != nil {
		return nil, err
	}
	v.Egress = m.egressUsage(id)
	return v, nil
}

// List returns sandboxes, newest first; state "" means all.
func (m *Manager) List(ctx context.Context, state string) ([]*Sandbox, error) {
	if state != "" && state != "running" && state != "paused" && state != "stopped" {
		return nil, fmt.Errorf("state %q: use running, paused or stopped: %w", state, errdefs.ErrInvalid)
	}
	recs, err := m.cfg.Store.ListSandboxes(ctx, state)
	if err != nil {
		return nil, err
	}
	out := make([]*Sandbox, 0, len(recs))
	for _, r := range recs {
		v, err := m.shownSandbox(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// SetTTL sets a running sandbox's time to live from now (0: none).
func (m *Manager) SetTTL(ctx context.Context, id string, ttl time.Duration) (*Sandbox, error) {
	if ttl < 0 || ttl > MaxRequestDuration {
		return nil, fmt.Errorf("ttl_seconds: want 0 to %d: %w", int64(MaxRequestDuration/time.Second), errdefs.ErrInvalid)
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
	// MaxLifetime counts from creation: a TTL cannot push past it.
	if max := m.cfg.MaxLifetime; max > 0 {
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
	_ = m.record(ctx, audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "sandbox.timeout", Payload: map[string]any{"ttl": ttl.String(), "expires": rec.Expires}})
	return m.shownSandbox(&rec)
}

// runtimeSandbox returns the backend's sandbox id, when it may be used:
// running, or finishing (its task's tests and diff use it); not paused,
// not being reset. Read under the lock.
func (m *Manager) runtimeSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	m.mu.Lock()
	ls, ok := m.live[id]
	var sb runtime.Sandbox
	var state State
	if ok {
		sb, state = ls.sb, ls.state
	}
	m.mu.Unlock()
	if ok && state != Running && state != Finishing {
		return nil, fmt.Errorf("sandbox %s is %s: %w", id, stateWhy(state, Running), errdefs.ErrConflict)
	}
	if ok {
		return sb, nil
	}
	if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
}

// ExecRequest is one command.
type ExecRequest struct {
	// Background returns as soon as the command started; it runs on, its
	// output is kept (capped) and its end recorded.
	Background bool
	// OpenStdin keeps the command's stdin open for Input and CloseStdin
	// (Stdin is then ignored).
	OpenStdin bool
	// TTY runs it on a terminal (Rows x Cols); see Resize.
	TTY         bool
	Rows, Cols  uint16
	Argv        []string
	Env         []string
	Cwd         string
	Timeout     time.Duration
	Stdin       io.Reader
	OutputLimit int64
	// A command the policy holds for approval waits ApprovalWait (0:
	// the approvals module's default), or with NoWait fails at once with
	// an approval_pending error naming the approval (see Holder).
	ApprovalWait time.Duration
	NoWait       bool
	taskTest     bool
}

// Exec is an exec record as the API shows it.
type Exec struct {
	ID        string              `json:"id"`
	SandboxID string              `json:"sandbox_id"`
	Argv      []string            `json:"argv"`
	Cwd       string              `json:"cwd"`
	EnvNames  []string            `json:"env_names,omitempty"`
	Started   time.Time           `json:"started"`
	Ended     *time.Time          `json:"ended,omitempty"`
	Status    *runtime.ExitStatus `json:"status,omitempty"`
	Error     string              `json:"error,omitempty"`
	Policy    *ExecPolicy         `json:"policy,omitempty"`
}

// ExecPolicy is the policy's decision on an exec, in short.
type ExecPolicy struct {
	Action     policy.Action  `json:"action"`
	Classes    []policy.Class `json:"classes"`
	Rules      []string       `json:"rules,omitempty"`
	Reason     string         `json:"reason"`
	Grant      []string       `json:"grant,omitempty"`
	BreakGlass string         `json:"break_glass,omitempty"`
	Version    string         `json:"policy"`
}

func execPolicyOf(raw json.RawMessage) *ExecPolicy {
	if raw == nil {
		return nil
	}
	var d policy.Decision
	if json.Unmarshal(raw, &d) != nil || d.Analysis == nil {
		return nil
	}
	ep := &ExecPolicy{Action: d.Action, Classes: d.Analysis.Classes, Reason: d.Reason, Grant: d.Grant, BreakGlass: d.BreakGlass, Version: d.Policy}
	for _, m := range d.Matches {
		if m.Action == d.Action || d.Grant != nil || d.BreakGlass != "" {
			ep.Rules = appendUniq(ep.Rules, m.Rule)
		}
	}
	return ep
}

func newExecID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "e-" + hex.EncodeToString(b[:])
}

// cappedSlack is what capped keeps beyond its cap, so that a secret that
// straddles the cap is seen whole by the redactor (a known value's longest
// form, base64 of secrets.MaxValueBytes, is about 87 KiB).
const cappedSlack = 128 << 10

// capped keeps the first n bytes written to it (and cappedSlack more, for
// the redactor: see redacted).
type capped struct {
	mu  sync.Mutex // Write runs while checkpoints are taken
	buf bytes.Buffer
	n   int64
	// ckLen and ckCut: the bytes kept and the cut at the last checkpoint.
	ckLen, ckCut int
}

// redacted returns the first n bytes kept, redacted. When the cap cuts a
// secret, the cut moves to before it: a part of a secret is never kept.
func (c *capped) redacted(r Redactor) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.buf.Bytes()
	if int64(len(b)) <= c.n {
		out, _ := r.Redact(b)
		return out
	}
	cut := int(c.n)
	for _, f := range r.Find(b) {
		if f.Start < cut && f.End > cut {
			cut = f.Start
		}
	}
	out, _ := r.Redact(b[:cut])
	return out
}

// checkpointHold is the least a checkpoint holds back of the output's
// tail: a secret may still be arriving there (see checkpoint).
const checkpointHold = 64 << 10

// checkpoint returns what may be stored of the output while the command
// still runs, redacted, and false if that has not changed since the last
// call. The tail is held back (at least checkpointHold bytes, and at least
// the longest form of any known secret value): a secret still arriving
// there is not found yet. The cut moves to before a secret it would
// split, so no part of one is ever stored.
func (c *capped) checkpoint(r Redactor) ([]byte, bool) {
	c.mu.Lock()
	if c.buf.Len() == c.ckLen {
		c.mu.Unlock()
		return nil, false
	}
	c.ckLen = c.buf.Len()
	b := bytes.Clone(c.buf.Bytes())
	c.mu.Unlock()
	cut := min(len(b)-max(checkpointHold, r.LongestMatch()), int(c.n))
	if cut <= 0 {
		return nil, false
	}
	for _, f := range r.Find(b) {
		if f.Start < cut && f.End > cut {
			cut = f.Start
		}
	}
	if cut == c.ckCut {
		return nil, false
	}
	c.ckCut = cut
	out, _ := r.Redact(b[:cut])
	return out, true
}

// checkpointEvery is how often a running command's output is stored.
var checkpointEvery = 2 * time.Second

// checkpointOutput stores the output of a running command every
// checkpointEvery (see capped.checkpoint), so that a daemon that dies
// keeps what it had. stop ends it and waits for a store under way: the
// final store comes after.
func (m *Manager) checkpointOutput(execID string, stdout, stderr *capped) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			for _, s := range []struct {
				name string
				c    *capped
			}{{"stdout", stdout}, {"stderr", stderr}} {
				if b, ok := s.c.checkpoint(m.cfg.Redactor); ok {
					if err := m.cfg.Store.PutOutput(context.Background(), execID, s.name, b); err != nil {
						m.cfg.Logf("exec %s: checkpoint of its %s: %v", execID, s.name, err)
					}
				}
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.n + cappedSlack - int64(c.buf.Len()); room > 0 {
		if int64(len(p)) > room {
			c.buf.Write(p[:room])
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}

// runningExec is a command that has not ended yet.
type runningExec struct {
	p         runtime.Process
	sandboxID string
	taskID    string
	stdin     *io.PipeWriter // nil unless started with OpenStdin
	stdinMu   sync.Mutex
	inputMu   sync.Mutex     // guards inputTail (taken inside stdinMu, never around it)
	inputTail []byte         // typed input not yet recorded (no line end yet)
	keep      map[string]any // the ExecHooks' state (ExecCall.Keep), by module
}

// finishExec waits for a command and records how it ended.
func (m *Manager) finishExec(ctx context.Context, rec *store.Exec, p runtime.Process, outKeep, errKeep *capped) (string, *runtime.ExitStatus, error) {
	defer func() {
		m.mu.Lock()
		if r := m.running[rec.ID]; r != nil && r.stdin != nil {
			r.stdin.Close()
		}
		delete(m.running, rec.ID)
		m.mu.Unlock()
	}()
	stopCheckpoints := m.checkpointOutput(rec.ID, outKeep, errKeep)
	st, err := p.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		// the caller went away: the command must not outlive the request
		_ = p.Signal(syscall.SIGKILL)
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err = p.Wait(wctx)
		cancel()
	}
	stopCheckpoints()
	ended := time.Now().UTC()
	stdout := outKeep.redacted(m.cfg.Redactor)
	stderr := errKeep.redacted(m.cfg.Redactor)
	_ = m.cfg.Store.PutOutput(context.Background(), rec.ID, "stdout", stdout)
	_ = m.cfg.Store.PutOutput(context.Background(), rec.ID, "stderr", stderr)
	m.mu.Lock()
	taskID := ""
	var keep map[string]any
	r := m.running[rec.ID]
	if r != nil {
		taskID, keep = r.taskID, r.keep
	}
	m.mu.Unlock()
	if r != nil {
		_ = m.flushInput(context.WithoutCancel(ctx), rec.SandboxID, rec.ID, r)
	}
	for _, h := range m.afterExecHooks {
		done := ExecDone{SandboxID: rec.SandboxID, TaskID: taskID, ExecID: rec.ID, Argv: rec.Argv, Err: err, Keep: keep[h.name]}
		if err == nil {
			done.Status = &st
		}
		h.hook.AfterExec(context.WithoutCancel(ctx), done)
	}
	endPayload := map[string]any{"stdout": audit.Blob(stdout), "stderr": audit.Blob(stderr), "ended": ended}
	if err != nil {
		endPayload["error"] = err.Error()
	} else {
		endPayload["status"] = st
	}
	// The end is recorded off the exec's critical path (its start was
	// recorded before it ran); readers of the log wait for it.
	m.recordAsync(ctx, audit.Entry{SandboxID: rec.SandboxID, TaskID: taskID, ExecID: rec.ID, Kind: "exec.end", Payload: endPayload})
	if err == nil {
		// The audit log broke while the command ran (its network was cut
		// then): the caller is told, not shown a plain success.
		if herr := m.auditHealthy(); herr != nil {
			err = fmt.Errorf("the command ended (exit code %d), but its record is incomplete: %w", st.Code, herr)
		}
	}
	if err != nil {
		_ = m.endExec(context.Background(), rec.ID, ended, nil, err.Error())
		return rec.ID, nil, err
	}
	stJSON, _ := json.Marshal(st)
	// (endExec redacts its file activity: paths may hold a secret.)
	if ferr := m.endExec(context.Background(), rec.ID, ended, stJSON, ""); ferr != nil {
		return rec.ID, &st, ferr
	}
	return rec.ID, &st, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// gatedWriter holds writes until gate is closed, so that no output can
// overtake the "started" notice.
type gatedWriter struct {
	gate chan struct{}
	w    io.Writer
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.gate
	return g.w.Write(p)
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func execView(e *store.Exec) *Exec {
	v := &Exec{ID: e.ID, SandboxID: e.SandboxID, Argv: e.Argv, Cwd: e.Cwd, EnvNames: e.EnvNames, Started: e.Started, Ended: e.Ended, Error: e.Error,
		Policy: execPolicyOf(e.Decision)}
	if len(e.Status) > 0 {
		var st runtime.ExitStatus
		if json.Unmarshal(e.Status, &st) == nil {
			v.Status = &st
		}
	}
	return v
}

// Execs lists a sandbox's exec records, oldest first.
func (m *Manager) Execs(ctx context.Context, id string) ([]*Exec, error) {
	if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
		return nil, err
	}
	recs, err := m.cfg.Store.ListExecs(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]*Exec, 0, len(recs))
	for _, r := range recs {
		v, err := m.shownExec(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Output returns the stored output of one stream of an exec.
func (m *Manager) Output(ctx context.Context, id, execID, stream string) ([]byte, error) {
	e, err := m.cfg.Store.GetExec(ctx, execID)
	if err != nil {
		return nil, err
	}
	if e.SandboxID != id {
		return nil, fmt.Errorf("exec %s not found in sandbox %s: %w", execID, id, errdefs.ErrNotFound)
	}
	return m.cfg.Store.GetOutput(ctx, execID, stream)
}

// Shutdown destroys every live sandbox (the daemon is stopping), a few
// at a time (ShutdownParallel); open tasks keep their diffs.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	ids := make([]string, 0, len(m.live))
	for id := range m.live {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	sort.Strings(ids)
	if m.cfg.Audit != nil {
		defer m.cfg.Audit.Flush() // nothing recorded is lost at shutdown
	}
	m.stopAuditRetry()
	err := m.stopAll(ctx, ids, StopShutdown)
	if m.egressSvc != nil {
		m.egressSvc.Close(ctx) // the refusal counts still open
	}
	return err
}

// LiveCount is the number of running sandboxes.
func (m *Manager) LiveCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// Files gives access to a running sandbox's files.
func (m *Manager) Files(ctx context.Context, id string) (runtime.Files, error) {
	sb, err := m.runtimeSandbox(ctx, id)
	if err != nil {
		return nil, err
	}
	f, ok := sb.(runtime.Files)
	if !ok {
		return nil, fmt.Errorf("backend %s has no file access: %w", m.cfg.Backend.Name(), errdefs.ErrUnsupported)
	}
	return f, nil
}

// Pause freezes a running sandbox (state "paused"); Resume thaws it.
func (m *Manager) Pause(ctx context.Context, id string) (*Sandbox, error) {
	return m.setPaused(ctx, id, true)
}

// Resume thaws a paused sandbox.
func (m *Manager) Resume(ctx context.Context, id string) (*Sandbox, error) {
	return m.setPaused(ctx, id, false)
}

func (m *Manager) setPaused(ctx context.Context, id string, pause bool) (*Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls, ok := m.live[id]
	if !ok {
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	if ls.state == Resetting {
		return nil, fmt.Errorf("sandbox %s is being reset: %w", id, errdefs.ErrConflict)
	}
	p, ok := ls.sb.(runtime.Pauser)
	if !ok {
		return nil, fmt.Errorf("backend %s cannot pause: %w", m.cfg.Backend.Name(), errdefs.ErrUnsupported)
	}
	from, to := Paused, Running
	if pause {
		from, to = Running, Paused
	}
	want := to.String()
	if ls.state == to || (!pause && ls.state == Finishing) {
		return nil, fmt.Errorf("sandbox %s is already %s: %w", id, want, errdefs.ErrConflict)
	}
	if ls.state != from {
		return nil, fmt.Errorf("sandbox %s is %s: %w", id, stateWhy(ls.state, to), errdefs.ErrConflict)
	}
	var err error
	if pause {
		err = p.Pause(ctx)
	} else {
		err = p.Resume(ctx)
	}
	if err != nil {
		return nil, err
	}
	_ = ls.transition(to) // checked above, under the same lock
	ls.rec.State = want
	rec := *ls.rec
	if err := m.cfg.Store.UpdateSandbox(ctx, &rec); err != nil {
		return nil, err
	}
	kind := "sandbox.resume"
	if pause {
		kind = "sandbox.pause"
	}
	_ = m.record(ctx, audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: kind, Payload: map[string]any{}})
	return m.shownSandbox(&rec)
}

// Reset starts a sandbox over from its template: every process is killed
// and every file it wrote (workspace, home, /tmp, caches, shell history)
// is gone; its id, record, TTL and exec records stay. A task's checkout
// is gone too.
func (m *Manager) Reset(ctx context.Context, id string) (*Sandbox, error) {
	m.mu.Lock()
	ls, ok := m.live[id]
	if !ok {
		m.mu.Unlock()
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	old := ls.sb
	// Nothing may use it meanwhile; watch ignores its end.
	if err := ls.transition(Resetting); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.mu.Unlock()
	if err := old.Destroy(ctx); err != nil {
		m.cfg.Logf("reset %s: destroy: %v", id, err)
	}
	spec := ls.spec
	spec.ID = id
	be, err := m.backend(ls.rec.Backend)
	var sb runtime.Sandbox
	if err == nil {
		sb, err = be.Create(ctx, spec)
	}
	if err == nil && ls.seed != "" {
		if err = seedSandbox(ctx, sb, ls.seed); err != nil {
			_ = sb.Destroy(context.Background())
		}
	}
	m.mu.Lock()
	if err != nil {
		delete(m.live, id)
		if ls.ttl != nil {
			ls.ttl.Stop()
		}
		if ls.state != Stopped {
			_ = ls.transition(Stopped)
		}
		now := time.Now().UTC()
		ls.rec.State, ls.rec.Stopped, ls.rec.StopReason = "stopped", &now, StopFailed
		rec := *ls.rec
		m.mu.Unlock()
		_ = m.cfg.Store.UpdateSandbox(context.Background(), &rec)
		return nil, fmt.Errorf("reset %s: %w", id, err)
	}
	if cur, still := m.live[id]; !still || cur != ls || ls.state != Resetting {
		// destroyed (or expired) while it was being reset
		m.mu.Unlock()
		_ = sb.Destroy(context.Background())
		return nil, fmt.Errorf("sandbox %s was stopped during its reset: %w", id, errdefs.ErrConflict)
	}
	ls.sb = sb
	_ = ls.transition(Running)
	if len(ls.scope) > 0 {
		// The write scope holds for the sandbox's life, resets included.
		if err := restrictWrites(ctx, sb, ls.scope); err != nil {
			m.mu.Unlock()
			_ = m.Destroy(context.Background(), id)
			return nil, fmt.Errorf("reset %s: %w", id, err)
		}
	}
	isoJSON, _ := json.Marshal(sb.Info().Isolation)
	ls.rec.Isolation, ls.rec.State = isoJSON, "running"
	rec := *ls.rec
	m.mu.Unlock()
	go m.watch(ls, sb)
	if err := m.cfg.Store.UpdateSandbox(ctx, &rec); err != nil {
		return nil, err
	}
	_ = m.record(ctx, audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "sandbox.reset", Payload: map[string]any{"template_version": rec.TemplateVersion}})
	return m.shownSandbox(&rec)
}

// GetExec returns one exec record of a sandbox.
func (m *Manager) GetExec(ctx context.Context, id, execID string) (*Exec, error) {
	e, err := m.cfg.Store.GetExec(ctx, execID)
	if err != nil {
		return nil, err
	}
	if e.SandboxID != id {
		return nil, fmt.Errorf("exec %s not found in sandbox %s: %w", execID, id, errdefs.ErrNotFound)
	}
	return m.shownExec(e)
}

// Signal sends sig to a running command's process group.
func (m *Manager) Signal(ctx context.Context, id, execID string, sig syscall.Signal) error {
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("signal %d: %w", sig, errdefs.ErrInvalid)
	}
	m.mu.Lock()
	r, ok := m.running[execID]
	m.mu.Unlock()
	if !ok || r.sandboxID != id {
		if _, err := m.GetExec(ctx, id, execID); err != nil {
			return err
		}
		return fmt.Errorf("exec %s has ended: %w", execID, errdefs.ErrConflict)
	}
	if err := r.p.Signal(sig); err != nil {
		return err
	}
	return m.record(ctx, audit.Entry{SandboxID: id, TaskID: r.taskID, ExecID: execID, Kind: "exec.signal", Payload: map[string]any{"signal": sig.String()}})
}

func (m *Manager) runningStdin(ctx context.Context, id, execID string) (*runningExec, error) {
	m.mu.Lock()
	r, ok := m.running[execID]
	m.mu.Unlock()
	if !ok || r.sandboxID != id {
		if _, err := m.GetExec(ctx, id, execID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("exec %s has ended: %w", execID, errdefs.ErrConflict)
	}
	if r.stdin == nil {
		return nil, fmt.Errorf("exec %s was not started with an open stdin: %w", execID, errdefs.ErrConflict)
	}
	return r, nil
}

// Input writes data to a running command's open stdin. It blocks while
// the command does not read (as a pipe would), up to ctx.
func (m *Manager) Input(ctx context.Context, id, execID string, data []byte) error {
	r, err := m.runningStdin(ctx, id, execID)
	if err != nil {
		return err
	}
	r.stdinMu.Lock()
	defer r.stdinMu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := r.stdin.Write(data)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("exec %s: stdin closed: %w", execID, errdefs.ErrConflict)
		}
		// What is typed into a running command is part of the record, a
		// line at a time: redacted chunk by chunk, a secret typed in
		// pieces would be kept in pieces.
		r.inputMu.Lock()
		defer r.inputMu.Unlock()
		r.inputTail = append(r.inputTail, data...)
		if i := bytes.LastIndexAny(r.inputTail, "\r\n"); i >= 0 || len(r.inputTail) >= maxInputTail {
			n := len(r.inputTail)
			if i >= 0 {
				n = i + 1
			}
			line := r.inputTail[:n]
			r.inputTail = append([]byte(nil), r.inputTail[n:]...)
			return m.recordInput(ctx, id, execID, r, line)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxInputTail is how much typed input without a line end is held before
// it is recorded anyway.
const maxInputTail = 4 << 10

func (m *Manager) recordInput(ctx context.Context, id, execID string, r *runningExec, data []byte) error {
	return m.record(ctx, audit.Entry{SandboxID: id, TaskID: r.taskID, ExecID: execID, Kind: "exec.input", Payload: map[string]any{"data": audit.Blob(data)}})
}

// flushInput records the typed input still held without a line end. It
// takes inputMu only: an Input blocked writing to a stdin nobody reads
// holds stdinMu, and closing stdin is what releases it.
func (m *Manager) flushInput(ctx context.Context, id, execID string, r *runningExec) error {
	r.inputMu.Lock()
	defer r.inputMu.Unlock()
	if len(r.inputTail) == 0 {
		return nil
	}
	tail := r.inputTail
	r.inputTail = nil
	return m.recordInput(ctx, id, execID, r, tail)
}

// CloseStdin closes a running command's open stdin (it reads end of file).
func (m *Manager) CloseStdin(ctx context.Context, id, execID string) error {
	r, err := m.runningStdin(ctx, id, execID)
	if err != nil {
		return err
	}
	cerr := r.stdin.Close()
	if err := m.flushInput(ctx, id, execID, r); err != nil {
		return err
	}
	return cerr
}

// Resize sets the window of a running command's terminal.
func (m *Manager) Resize(ctx context.Context, id, execID string, rows, cols uint16) error {
	if rows == 0 || cols == 0 {
		return fmt.Errorf("rows and cols must be positive: %w", errdefs.ErrInvalid)
	}
	m.mu.Lock()
	r, ok := m.running[execID]
	m.mu.Unlock()
	if !ok || r.sandboxID != id {
		if _, err := m.GetExec(ctx, id, execID); err != nil {
			return err
		}
		return fmt.Errorf("exec %s has ended: %w", execID, errdefs.ErrConflict)
	}
	rz, ok := r.p.(runtime.Resizer)
	if !ok {
		return fmt.Errorf("exec %s has no terminal: %w", execID, errdefs.ErrConflict)
	}
	return rz.Resize(rows, cols)
}
