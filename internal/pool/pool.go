// Package pool is the daemon's warm pools (issue 27): per template and
// backend it keeps ready sandboxes that never ran a command, made by the
// core (hook.Core.Prewarm) and counted against the daemon's caps, so that
// a Create of a pool's shape claims one (hook.WarmPool.Take) instead of
// waiting for a backend. A ready sandbox is handed out once; the pool
// forgets it and makes another in the background. What the request sets
// (labels, env, policy, egress, memory, CPUs, lifetime) the core applies
// at the claim; a claimed sandbox is an ordinary one from then on, and is
// destroyed when it stops, never given back.
//
// Ready sandboxes count against the daemon's caps like live ones; a
// create the caps would refuse while they hold the room evicts one
// (hook.WarmPool.Evict) instead of failing.
//
// Each pool keeps Min ready; a claim that finds it empty (a miss) raises
// its target by one, up to Max, and every Idle period without a miss
// lowers it by one toward Min (the ready ones beyond it are destroyed).
package pool

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
)

// Spec is one pool of the daemon's configuration.
type Spec struct {
	Template string
	Backend  string // resolved (never "")
	Min, Max int    // 0 <= Min <= Max, Max >= 1
}

// Config configures the pools.
type Config struct {
	Pools []Spec
	// Hold keeps a ready sandbox's template layers from the template GC
	// until it is claimed (the core's own hold then takes over) or
	// discarded; nil: none is taken.
	Hold func(dirs []string) (release func(), err error)
	// Retry is the first wait after a failed fill, doubled up to 30 s
	// (0: 1 s); Idle the period without a miss that lowers a raised
	// target (0: 1 min).
	Retry, Idle time.Duration
}

// Status is one pool as `airlock pool ls` shows it.
type Status struct {
	Template, Backend string
	Min, Max, Target  int
	Ready, Filling    int
	// The counts since the daemon started: sandboxes made, claimed,
	// creates that found the pool empty, fills that failed, ready ones
	// that stopped on their own or were destroyed (target lowered, drain).
	Created, Claimed, Misses, Failed, Discarded int64
	LastError                                   string
}

// Pools is the warm pool module (hook.WarmPool, hook.CreateHook).
type Pools struct {
	cfg    Config
	core   hook.Core
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	pools    map[hook.WarmShape]*pool
	order    []*pool
	claimed  map[string]*entry // taken, until its create's hooks ran
	draining bool
}

type pool struct {
	st    Status
	shape hook.WarmShape
	ready []*entry // oldest first
	kick  chan struct{}
	miss  time.Time
}

// entry is a ready sandbox; taken is closed when it is handed out,
// created when its create reached the CreateHooks.
type entry struct {
	w              hook.Warm
	release        func() // its layers' hold
	taken, created chan struct{}
}

// New checks cfg and returns the module; Start begins the fills.
func New(cfg Config) (*Pools, error) {
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.Idle <= 0 {
		cfg.Idle = time.Minute
	}
	ps := &Pools{cfg: cfg, pools: map[hook.WarmShape]*pool{}, claimed: map[string]*entry{}}
	ps.ctx, ps.cancel = context.WithCancel(context.Background())
	for _, s := range cfg.Pools {
		if s.Template == "" || s.Backend == "" || s.Min < 0 || s.Max < 1 || s.Min > s.Max || s.Max > MaxReady {
			return nil, fmt.Errorf("pool %s@%s: want a template, a backend and 0 <= min <= max, max >= 1 (got %d:%d): %w", s.Template, s.Backend, s.Min, s.Max, errdefs.ErrInvalid)
		}
		shape := hook.WarmShape{Template: s.Template, Backend: s.Backend}
		if ps.pools[shape] != nil {
			return nil, fmt.Errorf("pool %s@%s: given twice: %w", s.Template, s.Backend, errdefs.ErrInvalid)
		}
		p := &pool{shape: shape, kick: make(chan struct{}, 1),
			st: Status{Template: s.Template, Backend: s.Backend, Min: s.Min, Max: s.Max, Target: s.Min}}
		ps.pools[shape] = p
		ps.order = append(ps.order, p)
	}
	return ps, nil
}

// Name is the module's name.
func (ps *Pools) Name() string { return "pool" }

// Attach keeps the core; nothing is made before Start.
func (ps *Pools) Attach(c hook.Core) error {
	ps.core = c
	return nil
}

// Start begins filling every pool (once the core is made: a fill calls it).
func (ps *Pools) Start() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.draining || ps.core == nil {
		return
	}
	for _, p := range ps.order {
		ps.wg.Add(1)
		go ps.run(p)
	}
}

// List is every pool's status, by template then backend.
func (ps *Pools) List() []Status {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]Status, 0, len(ps.order))
	for _, p := range ps.order {
		st := p.st
		st.Ready = len(p.ready)
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Template != out[j].Template {
			return out[i].Template < out[j].Template
		}
		return out[i].Backend < out[j].Backend
	})
	return out
}

// Take implements hook.WarmPool: the oldest ready sandbox of shape s.
func (ps *Pools) Take(s hook.WarmShape) hook.Warm {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.pools[s]
	if p == nil || ps.draining {
		return nil
	}
	defer poke(p.kick)
	if len(p.ready) == 0 {
		p.st.Misses++
		p.miss = time.Now()
		if p.st.Target < p.st.Max {
			p.st.Target++
		}
		return nil
	}
	e := p.ready[0]
	p.ready = p.ready[1:]
	p.st.Claimed++
	close(e.taken)
	ps.claimed[e.w.ID()] = e
	return e.w
}

// OnCreate implements hook.CreateHook: a claimed sandbox's create has
// reached the hooks (the template hold, earlier in the module order, holds
// its layers now), so the pool's hold goes.
func (ps *Pools) OnCreate(_ context.Context, sb hook.SandboxRef) error {
	ps.mu.Lock()
	e := ps.claimed[sb.ID]
	delete(ps.claimed, sb.ID)
	ps.mu.Unlock()
	if e != nil {
		close(e.created)
	}
	return nil
}

// Evict implements hook.WarmPool: the newest ready sandbox of the pool
// with the most ready is destroyed (its target stays: it refills once
// the caps let it; a fill that takes the room first is evicted again by
// the create's next try, until the pools have none).
func (ps *Pools) Evict(ctx context.Context) bool {
	ps.mu.Lock()
	var from *pool
	for _, p := range ps.order {
		if len(p.ready) > 0 && (from == nil || len(p.ready) > len(from.ready)) {
			from = p
		}
	}
	if from == nil {
		ps.mu.Unlock()
		return false
	}
	e := from.ready[len(from.ready)-1]
	from.ready = from.ready[:len(from.ready)-1]
	from.st.Discarded++
	ps.mu.Unlock()
	e.w.Discard(ctx)
	// it refills when there is room (a fill the caps refuse backs off)
	poke(from.kick)
	return true
}

// Drain implements hook.WarmPool: no more fills, every ready one destroyed.
func (ps *Pools) Drain(ctx context.Context) {
	ps.mu.Lock()
	ps.draining = true
	var all []*entry
	for _, p := range ps.order {
		all = append(all, p.ready...)
		p.st.Discarded += int64(len(p.ready))
		p.ready = nil
	}
	ps.mu.Unlock()
	ps.cancel()
	ps.wg.Wait()
	for _, e := range all {
		e.w.Discard(ctx)
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// ParseSpec reads a pool as `airlock serve --pool` gives it:
// TEMPLATE[@BACKEND]=MIN[:MAX] (MAX: MIN; backend "": the template's).
func ParseSpec(v string) (Spec, error) {
	bad := func(why string) (Spec, error) {
		return Spec{}, fmt.Errorf("pool %q: %s (want TEMPLATE[@BACKEND]=MIN[:MAX]): %w", v, why, errdefs.ErrInvalid)
	}
	name, counts, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return bad("no template")
	}
	var s Spec
	s.Template, s.Backend, _ = strings.Cut(name, "@")
	if s.Template == "" || strings.Contains(s.Backend, "@") {
		return bad("no template")
	}
	lo, hi, ranged := strings.Cut(counts, ":")
	var err error
	if s.Min, err = strconv.Atoi(lo); err != nil {
		return bad("min is not a number")
	}
	s.Max = s.Min
	if ranged {
		if s.Max, err = strconv.Atoi(hi); err != nil {
			return bad("max is not a number")
		}
	}
	if s.Min < 0 || s.Max < 1 || s.Min > s.Max || s.Max > MaxReady {
		return bad(fmt.Sprintf("want 0 <= min <= max, 1 <= max <= %d", MaxReady))
	}
	return s, nil
}

// MaxReady bounds one pool's max (the daemon's --max-sandboxes bounds
// them all).
const MaxReady = 1024
