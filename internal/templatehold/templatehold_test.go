package templatehold

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/template"
)

// core is the module's handle on a sandbox core: only Live is used (any
// other method panics through the nil embedded interface).
type core struct {
	hook.Core
	mu   sync.Mutex
	live map[string]sandbox.Base
	// asked, when set, is told the first time Live finds an id live.
	asked chan string
	told  map[string]bool
}

func (c *core) Live(id string) (*hook.LiveInfo, bool) {
	c.mu.Lock()
	b, ok := c.live[id]
	asked := c.asked
	if ok && asked != nil && !c.told[id] {
		c.told[id] = true
	} else {
		asked = nil
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	if asked != nil {
		asked <- id
		// Let the one told run first (its stop), as a busy machine may.
		for range 10 {
			goruntime.Gosched()
		}
	}
	return &hook.LiveInfo{State: sandbox.Running, Base: b}, true
}

func (c *core) remove(id string) {
	c.mu.Lock()
	delete(c.live, id)
	c.mu.Unlock()
}

func (c *core) add(id string, b sandbox.Base) {
	c.mu.Lock()
	c.live[id] = b
	c.mu.Unlock()
}

// setup is the module on a template store in a temp dir, attached to a
// core that knows no sandbox yet.
func setup(t *testing.T) (*Module, *template.Store, *core) {
	t.Helper()
	s, err := template.Open(filepath.Join(t.TempDir(), "templates"))
	if err != nil {
		t.Fatal(err)
	}
	c := &core{live: map[string]sandbox.Base{}}
	m := New(s)
	if m.Name() != "templatehold" {
		t.Errorf("name %q", m.Name())
	}
	if err := m.Attach(c); err != nil {
		t.Fatal(err)
	}
	return m, s, c
}

// layer makes a stored layer as an image import leaves it (unpacking a
// real one chowns to root), named by the digest of name, and returns its
// diffID and the root dir a sandbox starts from.
func layer(t *testing.T, s *template.Store, name string) (diffID, root string) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	hx := hex.EncodeToString(sum[:])
	root = filepath.Join(s.Root, "layers", hx, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := s.LayerRoot("sha256:" + hx); err != nil || p != root {
		t.Fatalf("the test's layer is not where the store keeps layers: %s %v", p, err)
	}
	return "sha256:" + hx, root
}

// gc runs the template GC and returns what it removed and what it found
// held, sorted.
func gc(t *testing.T, s *template.Store) (removed, held []string) {
	t.Helper()
	res, err := s.GC()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Removed)
	slices.Sort(res.Held)
	return res.Removed, res.Held
}

func sorted(l ...string) []string {
	slices.Sort(l)
	return l
}

// A sandbox's layers (its root and every lower) are held from its create
// to its stop: the GC leaves them, then takes them once it stopped.
func TestHoldFromCreateToStop(t *testing.T) {
	m, s, c := setup(t)
	top, topRoot := layer(t, s, "top")
	low, lowRoot := layer(t, s, "low")
	c.add("sb-1", sandbox.Base{RootFS: topRoot, Lowers: []string{lowRoot}})
	ctx := context.Background()
	if err := m.OnCreate(ctx, hook.SandboxRef{ID: "sb-1"}); err != nil {
		t.Fatal(err)
	}
	if removed, held := gc(t, s); len(removed) != 0 || !slices.Equal(held, sorted(top, low)) {
		t.Fatalf("GC while running: removed %q, held %q", removed, held)
	}
	for _, d := range []string{topRoot, lowRoot} {
		if _, err := os.Stat(filepath.Join(d, "file")); err != nil {
			t.Errorf("a held layer lost its files: %v", err)
		}
	}
	if p := m.OnStop(ctx, hook.StopEvent{SandboxID: "sb-1", Reason: sandbox.StopDestroyed}); p != nil {
		t.Errorf("stop payload %v", p)
	}
	if removed, held := gc(t, s); !slices.Equal(removed, sorted(top, low)) || len(held) != 0 {
		t.Errorf("GC after the stop: removed %q, held %q", removed, held)
	}
}

// Holds are per sandbox: a layer two sandboxes share is held until the
// last of them stops, and a stop (or a second stop) of one never lets go
// of another's.
func TestSharedLayerHeldUntilTheLastStops(t *testing.T) {
	m, s, c := setup(t)
	base, baseRoot := layer(t, s, "base")
	app, appRoot := layer(t, s, "app")
	c.add("sb-1", sandbox.Base{RootFS: appRoot, Lowers: []string{baseRoot}})
	c.add("sb-2", sandbox.Base{RootFS: baseRoot})
	ctx := context.Background()
	for _, id := range []string{"sb-1", "sb-2"} {
		if err := m.OnCreate(ctx, hook.SandboxRef{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	m.OnStop(ctx, hook.StopEvent{SandboxID: "sb-1"})
	m.OnStop(ctx, hook.StopEvent{SandboxID: "sb-1"})
	m.OnStop(ctx, hook.StopEvent{SandboxID: "sb-never-created"})
	if removed, held := gc(t, s); !slices.Equal(removed, []string{app}) || !slices.Equal(held, []string{base}) {
		t.Fatalf("GC after one stop: removed %q, held %q", removed, held)
	}
	m.OnStop(ctx, hook.StopEvent{SandboxID: "sb-2"})
	if removed, held := gc(t, s); !slices.Equal(removed, []string{base}) || len(held) != 0 {
		t.Errorf("GC after the last stop: removed %q, held %q", removed, held)
	}
}

// A built-in template (a root outside the store's layers) needs no hold:
// its create succeeds and holds nothing of the store's.
func TestBuiltinTemplateHoldsNothing(t *testing.T) {
	m, s, c := setup(t)
	orphan, _ := layer(t, s, "orphan")
	c.add("sb-1", sandbox.Base{RootFS: t.TempDir(), Lowers: []string{"/"}})
	ctx := context.Background()
	if err := m.OnCreate(ctx, hook.SandboxRef{ID: "sb-1"}); err != nil {
		t.Fatal(err)
	}
	if removed, held := gc(t, s); !slices.Equal(removed, []string{orphan}) || len(held) != 0 {
		t.Errorf("GC: removed %q, held %q", removed, held)
	}
	m.OnStop(ctx, hook.StopEvent{SandboxID: "sb-1"})
}

// A create the module cannot hold fails (the core then stops the
// sandbox as failed), and holds nothing: not a sandbox that is not live,
// not the layers of one whose lower layer is gone (the root's hold is
// let go again).
func TestCreateThatCannotHoldFailsAndHoldsNothing(t *testing.T) {
	m, s, c := setup(t)
	ctx := context.Background()
	if err := m.OnCreate(ctx, hook.SandboxRef{ID: "sb-gone"}); err == nil || !strings.Contains(err.Error(), "sandbox sb-gone is not live") {
		t.Errorf("not live: %v", err)
	}
	top, topRoot := layer(t, s, "top")
	missing := filepath.Join(s.Root, "layers", strings.Repeat("ab", 32), "root")
	c.add("sb-1", sandbox.Base{RootFS: topRoot, Lowers: []string{missing}})
	if err := m.OnCreate(ctx, hook.SandboxRef{ID: "sb-1"}); err == nil || !strings.Contains(err.Error(), "hold layer") {
		t.Fatalf("a lower layer that is gone: %v", err)
	}
	if removed, held := gc(t, s); !slices.Equal(removed, []string{top}) || len(held) != 0 {
		t.Errorf("GC after the failed create: removed %q, held %q", removed, held)
	}
}

// Creates and stops of many sandboxes at once on one layer: while any
// holds it the GC leaves it, once all stopped (their stops racing each
// other, each stop twice) it goes; nothing is held twice or lost.
func TestConcurrentCreatesAndStops(t *testing.T) {
	m, s, c := setup(t)
	shared, sharedRoot := layer(t, s, "shared")
	const n = 32
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "sb-" + strings.Repeat("x", i+1)
		c.add(ids[i], sandbox.Base{RootFS: sharedRoot})
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- m.OnCreate(ctx, hook.SandboxRef{ID: id})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// All but the last stop, each twice, at once.
	for _, id := range ids[:n-1] {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.OnStop(ctx, hook.StopEvent{SandboxID: id})
			}()
		}
	}
	wg.Wait()
	if removed, held := gc(t, s); len(removed) != 0 || !slices.Equal(held, []string{shared}) {
		t.Fatalf("GC with one sandbox left: removed %q, held %q", removed, held)
	}
	m.OnStop(ctx, hook.StopEvent{SandboxID: ids[n-1]})
	if removed, held := gc(t, s); !slices.Equal(removed, []string{shared}) || len(held) != 0 {
		t.Errorf("GC after all stopped: removed %q, held %q", removed, held)
	}
	m.mu.Lock()
	left := len(m.held)
	m.mu.Unlock()
	if left != 0 {
		t.Errorf("%d holds left after every stop", left)
	}
}

// A sandbox stopped while its create's hooks run (a destroy, its TTL,
// its init dying): the core takes it out of the live set, then runs the
// StopHooks, possibly right after this module saw it live and before
// its hold is kept. Whatever the interleaving, once both hooks returned
// nothing is held for it (a hold kept after its stop would never be let
// go: the layers would stay until the daemon stopped).
func TestStopDuringCreateLeavesNoHold(t *testing.T) {
	m, s, c := setup(t)
	shared, sharedRoot := layer(t, s, "shared")
	const n = 100
	c.asked, c.told = make(chan string), map[string]bool{}
	ctx := context.Background()
	for i := range n {
		id := fmt.Sprintf("sb-%d", i)
		c.add(id, sandbox.Base{RootFS: sharedRoot})
		done := make(chan error, 1)
		go func() { done <- m.OnCreate(ctx, hook.SandboxRef{ID: id}) }()
		// The stop comes the moment the module has seen the sandbox live.
		<-c.asked
		c.remove(id)
		m.OnStop(ctx, hook.StopEvent{SandboxID: id, Reason: sandbox.StopDestroyed})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	left := len(m.held)
	m.mu.Unlock()
	if left != 0 {
		t.Errorf("%d of %d sandboxes stopped during their create are still held", left, n)
	}
	if removed, held := gc(t, s); !slices.Equal(removed, []string{shared}) || len(held) != 0 {
		t.Errorf("GC after all stopped: removed %q, held %q", removed, held)
	}
}
