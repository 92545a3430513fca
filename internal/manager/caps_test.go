package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// costBackend is a backend that says what its sandboxes take of the host.
type costBackend struct {
	fakeBackend
	perPid int64
}

func (b costBackend) HostCost(l runtime.Limits) (runtime.HostCost, error) {
	if l.Pids < 0 {
		return runtime.HostCost{}, errdefs.ErrInvalid
	}
	return runtime.HostCost{Pids: 64 + b.perPid*max(l.Pids, 256), Ptys: max(l.Ptys, 16)}, nil
}

// The attack of the review: sandboxes of the default limits, created one
// after another, take the host's whole task table (256 of them held more
// than pid_max). Creates are refused once the next would not fit beside
// the live sandboxes and those being created, with an error naming the
// host table; a sandbox ending gives its share back.
func TestHostBudgetRefusesWhatWouldExhaustTheHost(t *testing.T) {
	m := &Manager{cfg: Config{Caps: Caps{Host: HostBudget{Pids: 24576, Ptys: 2304}}}, live: map[string]*live{}}
	be := costBackend{perPid: 1}
	cost, err := m.cfg.Caps.Host.Cost(be, runtime.Limits{})
	if err != nil || cost.Pids != 320 {
		t.Fatalf("cost %+v %v", cost, err)
	}
	n := 0
	var releases []func()
	for ; n < 1000; n++ {
		rel, err := m.reserveHost(cost)
		if err != nil {
			if !errors.Is(err, errdefs.ErrLimitExceeded) || !strings.Contains(err.Error(), "kernel.pid_max") {
				t.Fatalf("refusal %d: %v, want a limit error naming kernel.pid_max", n, err)
			}
			break
		}
		releases = append(releases, rel)
	}
	if want := 24576 / 320; n != want {
		t.Fatalf("%d sandboxes admitted, want %d (24576 tasks / 320 each)", n, want)
	}
	// half become live sandboxes: still counted, through m.live
	for i := range n / 2 {
		m.live[fmt.Sprint("sb", i)] = &live{cost: cost}
		releases[i]()
	}
	if _, err := m.reserveHost(cost); err == nil {
		t.Fatal("admitted beyond the budget once some became live")
	}
	// one ends: one more fits
	for id := range m.live {
		delete(m.live, id)
		break
	}
	if _, err := m.reserveHost(cost); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
	// terminals are their own budget
	m2 := &Manager{cfg: Config{Caps: Caps{Host: HostBudget{Ptys: 40}}}, live: map[string]*live{}}
	if _, err := m2.reserveHost(runtime.HostCost{Ptys: 32}); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.reserveHost(runtime.HostCost{Ptys: 16}); err == nil || !strings.Contains(err.Error(), "kernel.pty.max") {
		t.Errorf("terminals beyond the budget: %v", err)
	}
}

// Nothing runs unaccounted: with a host budget, a backend that cannot
// say what its sandboxes take is refused; without one it is not asked.
func TestHostBudgetNeedsTheBackendsCost(t *testing.T) {
	m := &Manager{cfg: Config{Caps: Caps{Host: HostBudget{Pids: 1000}}}, live: map[string]*live{}}
	if _, err := m.cfg.Caps.Host.Cost(fakeBackend{}, runtime.Limits{}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("a backend without HostCost: %v, want unsupported", err)
	}
	if _, err := m.cfg.Caps.Host.Cost(costBackend{}, runtime.Limits{Pids: -1}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("invalid limits: %v, want the backend's error", err)
	}
	m.cfg.Caps.Host = HostBudget{}
	if c, err := m.cfg.Caps.Host.Cost(fakeBackend{}, runtime.Limits{}); err != nil || c != (runtime.HostCost{}) {
		t.Errorf("no budget: %+v %v", c, err)
	}
}

// heldSandbox's Destroy waits until it is let go.
type heldSandbox struct {
	fakeSandbox
	entered, let chan struct{}
}

func (s *heldSandbox) Destroy(context.Context) error {
	close(s.entered)
	<-s.let
	s.once.Do(func() { close(s.done) })
	return nil
}

// A sandbox being stopped still holds its processes until its Destroy is
// done (a task's stop first takes its diff, up to a minute, with every
// process running): its share of the host's tables is given back only
// then, or a Create meanwhile takes the host beyond its budget.
func TestHostBudgetHeldUntilDestroyEnds(t *testing.T) {
	m, st, _ := testManager(t, t.TempDir())
	ctx := context.Background()
	cost := runtime.HostCost{Pids: 320, Ptys: 16}
	m.cfg.Caps.Host = HostBudget{Pids: 320, Ptys: 16}
	rec := &store.Sandbox{ID: "sb-held", State: "running", Backend: "fake", Template: "host", Created: time.Now().UTC()}
	if err := st.PutSandbox(ctx, rec); err != nil {
		t.Fatal(err)
	}
	sb := &heldSandbox{fakeSandbox: fakeSandbox{id: rec.ID, done: make(chan struct{})}, entered: make(chan struct{}), let: make(chan struct{})}
	m.live[rec.ID] = &live{sb: sb, rec: rec, cost: cost}
	destroyed := make(chan error, 1)
	go func() { destroyed <- m.Destroy(ctx, rec.ID) }()
	<-sb.entered
	if rel, err := m.reserveHost(cost); err == nil {
		rel()
		close(sb.let)
		<-destroyed
		t.Fatal("a Create fitted while the stopping sandbox still held its share")
	}
	close(sb.let)
	if err := <-destroyed; err != nil {
		t.Fatal(err)
	}
	rel, err := m.reserveHost(cost)
	if err != nil {
		t.Fatalf("after the destroy ended: %v", err)
	}
	rel()
}
