// Package quotas is the projects' quotas (issue 22), a module of the
// sandbox core (hook.Module, hook.Admitter): how many sandboxes a
// project may have live, the memory, CPUs and disk their limits add up
// to, how many commands it may start a minute, and how much of their
// output the store may keep (counted as each ends, AfterExec). The core
// asks it at every create, before the backend starts anything, and at
// every exec;
// each admission is checked and counted under one lock, so a burst
// cannot pass the check before any of it is counted. It also keeps a
// token bucket per API key (KeyRates) for the API's TCP door.
//
// A project's quotas are the daemon's defaults (airlock serve
// --project-quota) with what its record sets over them (Settings, the
// JSON of projects.quotas). What they count lives in memory: a daemon
// starts with no live sandbox (internal/lost ended the previous one's).
package quotas

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Config is the module's daemon settings.
type Config struct {
	// Defaults are every project's quotas but those its record sets.
	Defaults Limits
	// Unset is what a sandbox counts of a limit it leaves to its backend
	// (a zero field of its request): the backends' default memory and
	// disk, and for CPUs every core of the host (no CPU limit: it may
	// use them all). A zero field here counts nothing.
	Unset runtime.Limits
}

// Usage is what a project holds now against its quotas.
type Usage struct {
	Sandboxes       int64
	MemoryBytes     int64
	CPUs            float64
	DiskBytes       int64
	ExecsLastMinute int64
	// StoredOutputBytes: the output the store keeps of its commands.
	StoredOutputBytes int64
	// EgressBytesLastDay: what its sandboxes' egress moved in the last
	// 24 hours.
	EgressBytesLastDay int64
}

// Report is a project's quotas and usage (GET /v1/projects/{id}/usage).
type Report struct {
	Project string
	Quotas  Limits   // in force
	Set     Settings // what its record sets over the defaults
	Usage   Usage
}

// Quotas is the module. Until manager.New attaches it, it admits
// nothing (ErrUnsupported).
type Quotas struct {
	cfg    Config
	st     *store.Store
	core   hook.Core
	record func(context.Context, audit.Entry) error
	now    func() time.Time

	// load serialises reading a project's settings from the store with
	// their writes (SetQuotas), so a read that began before a write
	// never leaves its older value in the cache.
	load sync.Mutex
	// mu guards projects: every admission, count and release.
	mu       sync.Mutex
	projects map[string]*project
}

// project is one project's quotas and counts (an entry may exist not
// yet loaded: EgressMoved counts into it before anything asked).
type project struct {
	loaded bool
	set    Settings
	err    error // its stored settings could not be read (fails closed)
	use    Usage // but ExecsLastMinute
	execs  window
	egress dayWindow // bytes its sandboxes' egress moved
	// counted is when use.StoredOutputBytes was read from the store
	// (between, each command's AfterExec adds its own).
	counted time.Time
}

// New makes the module; attach it through manager.Config.Modules.
func New(cfg Config) *Quotas {
	return &Quotas{cfg: cfg, projects: map[string]*project{}}
}

// Name is the module's name.
func (q *Quotas) Name() string { return "quotas" }

// Attach takes the store, the audit record and the clock of the core.
func (q *Quotas) Attach(c hook.Core) error {
	if err := q.cfg.Defaults.Check(); err != nil {
		return fmt.Errorf("the default quotas: %w", err)
	}
	q.st, q.core, q.record, q.now = c.Store(), c, c.Record, c.Now
	return nil
}

func (q *Quotas) attached() error {
	if q == nil || q.st == nil {
		return fmt.Errorf("quotas: the module is not attached to a manager: %w", errdefs.ErrUnsupported)
	}
	return nil
}

// entry is project id's entry with its settings loaded (mu not held).
func (q *Quotas) entry(ctx context.Context, id string) (*project, error) {
	q.mu.Lock()
	p := q.projects[id]
	if p != nil && p.loaded {
		q.mu.Unlock()
		return p, p.err
	}
	q.mu.Unlock()
	q.load.Lock()
	defer q.load.Unlock()
	q.mu.Lock()
	p = q.ensure(id)
	loaded := p.loaded
	q.mu.Unlock()
	if loaded {
		return p, p.err
	}
	rec, err := q.st.GetProject(ctx, id)
	if err != nil {
		return nil, err // not found, or the store failing: not cached
	}
	set, err := decodeSettings(rec.Quotas)
	stored, serr := q.st.OutputBytes(ctx, id)
	if serr != nil {
		return nil, serr
	}
	q.mu.Lock()
	p.set, p.err, p.loaded = set, err, true
	p.use.StoredOutputBytes, p.counted = stored, q.now()
	q.mu.Unlock()
	return p, err
}

// ensure is project id's entry, made empty (mu held).
func (q *Quotas) ensure(id string) *project {
	p := q.projects[id]
	if p == nil {
		p = &project{}
		q.projects[id] = p
	}
	return p
}

// counted is what a sandbox of limits l counts against the quotas.
func (q *Quotas) counted(l runtime.Limits) Usage {
	u := Usage{Sandboxes: 1, MemoryBytes: l.MemoryBytes, CPUs: l.CPUs, DiskBytes: l.DiskBytes}
	if u.MemoryBytes == 0 {
		u.MemoryBytes = q.cfg.Unset.MemoryBytes
	}
	if u.CPUs == 0 {
		u.CPUs = q.cfg.Unset.CPUs
	}
	if u.DiskBytes == 0 {
		u.DiskBytes = q.cfg.Unset.DiskBytes
	}
	return u
}

// AdmitCreate reserves a sandbox of project with limits against its
// quotas (hook.Admitter): refused, as an *Error naming the quota, when
// it would take the project past one.
func (q *Quotas) AdmitCreate(ctx context.Context, projectID string, limits runtime.Limits) (func(), error) {
	if err := q.attached(); err != nil {
		return nil, err
	}
	p, err := q.entry(ctx, projectID)
	if err != nil {
		return nil, err
	}
	c := q.counted(limits)
	q.mu.Lock()
	defer q.mu.Unlock()
	lim := p.set.Over(q.cfg.Defaults)
	for _, f := range []struct {
		name              string
		limit, used, asks float64
	}{
		{NameSandboxes, float64(lim.Sandboxes), float64(p.use.Sandboxes), 1},
		{NameMemory, float64(lim.MemoryBytes), float64(p.use.MemoryBytes), float64(c.MemoryBytes)},
		{NameCPUs, lim.CPUs, p.use.CPUs, c.CPUs},
		{NameDisk, float64(lim.DiskBytes), float64(p.use.DiskBytes), float64(c.DiskBytes)},
	} {
		if f.limit > 0 && f.used+f.asks > f.limit+1e-9 {
			return nil, &Error{Project: projectID, Quota: f.name, Limit: f.limit, Used: f.used, Asked: f.asks}
		}
	}
	p.use.add(c, 1)
	return sync.OnceFunc(func() {
		q.mu.Lock()
		p.use.add(c, -1)
		q.mu.Unlock()
	}), nil
}

// add adds (sign 1) or takes back (-1) what one sandbox counts.
func (u *Usage) add(c Usage, sign int64) {
	u.Sandboxes += sign * c.Sandboxes
	u.MemoryBytes += sign * c.MemoryBytes
	u.CPUs += float64(sign) * c.CPUs
	u.DiskBytes += sign * c.DiskBytes
	if sign < 0 && u.Sandboxes == 0 {
		u.CPUs = 0 // no float drift once nothing is held
	}
}

// AdmitExec counts one command of project (hook.Admitter): refused, as an
// *Error, when the project started its quota of commands in the last
// minute.
func (q *Quotas) AdmitExec(ctx context.Context, projectID string) error {
	if err := q.attached(); err != nil {
		return err
	}
	p, err := q.entry(ctx, projectID)
	if err != nil {
		return err
	}
	if err := q.admitStored(ctx, projectID, p); err != nil {
		return err
	}
	sec := q.now().Unix()
	q.mu.Lock()
	defer q.mu.Unlock()
	lim := p.set.Over(q.cfg.Defaults).ExecsPerMinute
	if n := p.execs.total(sec); lim > 0 && n >= lim {
		return &Error{Project: projectID, Quota: NameExecsPerMinute, Limit: float64(lim), Used: float64(n), Asked: 1}
	}
	p.execs.add(sec)
	return nil
}

// admitStored refuses a command of a project whose stored output is at
// its quota. The count in memory only grows between reads (a purge does
// not tell it), so before refusing it is read again from the store, at
// most once a second: a purge lets commands run again, and a flood of
// refused ones does not become a flood of scans.
func (q *Quotas) admitStored(ctx context.Context, projectID string, p *project) error {
	q.mu.Lock()
	lim := p.set.Over(q.cfg.Defaults).StoredOutputBytes
	used, stale := p.use.StoredOutputBytes, q.now().Sub(p.counted) >= time.Second
	q.mu.Unlock()
	if lim <= 0 || used < lim {
		return nil
	}
	if stale {
		n, err := q.st.OutputBytes(ctx, projectID)
		if err != nil {
			return err
		}
		q.mu.Lock()
		p.use.StoredOutputBytes, p.counted = n, q.now()
		q.mu.Unlock()
		if used = n; used < lim {
			return nil
		}
	}
	return &Error{Project: projectID, Quota: NameStoredOutput, Limit: float64(lim), Used: float64(used)}
}

// AfterExec adds what the store keeps of a command's output to its
// project's count (hook.AfterExecHook).
func (q *Quotas) AfterExec(ctx context.Context, x hook.ExecDone) {
	if q.attached() != nil || x.ExecID == "" {
		return
	}
	projectID := ""
	if li, ok := q.core.Live(x.SandboxID); ok && li.View != nil {
		projectID = li.View.Project
	} else if sb, err := q.st.GetSandbox(ctx, x.SandboxID); err == nil {
		projectID = sb.Project
	}
	n, err := q.st.ExecOutputBytes(ctx, x.ExecID)
	if err != nil || projectID == "" || n == 0 {
		return // read again from the store before any refusal
	}
	q.mu.Lock()
	if p := q.projects[projectID]; p != nil && p.loaded {
		p.use.StoredOutputBytes += n
	}
	q.mu.Unlock()
}

// Usage is project id's quotas and what it holds now. The caller's
// access to the project is the API's guard's.
func (q *Quotas) Usage(ctx context.Context, id string) (*Report, error) {
	if err := q.attached(); err != nil {
		return nil, err
	}
	p, err := q.entry(ctx, id)
	if err != nil {
		return nil, err
	}
	sec := q.now().Unix()
	q.mu.Lock()
	defer q.mu.Unlock()
	u := p.use
	u.ExecsLastMinute = p.execs.total(sec)
	u.EgressBytesLastDay = p.egress.total(q.egressSlotNow())
	return &Report{Project: id, Quotas: p.set.Over(q.cfg.Defaults), Set: p.set, Usage: u}, nil
}

// SetQuotas replaces what project id's record sets over the defaults
// and records project.quotas. The operator sets any; a project's admin
// only tightens (each quota in force after bounds at least as much as
// before: raising one is the operator's). What is live already stays:
// a quota lowered below the usage refuses what comes next.
func (q *Quotas) SetQuotas(ctx context.Context, id string, s Settings) (*Report, error) {
	if err := q.attached(); err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	who := tenant.Of(ctx)
	if !who.IsOperator() && !(who.Role.AtLeast(tenant.Admin) && who.Project == id) {
		return nil, fmt.Errorf("project %q: %w", id, errdefs.ErrNotFound)
	}
	old, err := q.Usage(ctx, id)
	if err != nil {
		return nil, err
	}
	next := s.Over(q.cfg.Defaults)
	if name, ok := tighter(next, old.Quotas); !who.IsOperator() && !ok {
		return nil, fmt.Errorf("quota %s: a project's admin may only lower its quotas; raising one (or lifting its bound) is the operator's, on the daemon's unix socket: %w", name, errdefs.ErrDenied)
	}
	if err := q.write(ctx, id, s, old.Set); err != nil {
		return nil, err
	}
	return q.Usage(ctx, id)
}

// write records and stores project id's settings s (before: the old
// ones), then caches them.
func (q *Quotas) write(ctx context.Context, id string, s, before Settings) error {
	raw, _ := json.Marshal(s)
	q.load.Lock()
	defer q.load.Unlock()
	if err := q.record(ctx, audit.Entry{Kind: "project.quotas", Payload: map[string]any{"project": id, "set": s, "before": before}}); err != nil {
		return err
	}
	if err := q.st.SetProjectQuotas(ctx, id, raw); err != nil {
		return err
	}
	q.mu.Lock()
	p := q.ensure(id)
	p.set, p.err, p.loaded = s, nil, true
	q.mu.Unlock()
	return nil
}

// window counts commands per second over the last minute.
type window struct {
	secs   [60]int64 // the second each slot counts
	counts [60]int64
}

// total is the count of the 60 seconds up to sec.
func (w *window) total(sec int64) int64 {
	var n int64
	for i, s := range w.secs {
		if sec-s < 60 && sec >= s {
			n += w.counts[i]
		}
	}
	return n
}

func (w *window) add(sec int64) {
	i := ((sec % 60) + 60) % 60
	if w.secs[i] != sec {
		w.secs[i], w.counts[i] = sec, 0
	}
	w.counts[i]++
}
