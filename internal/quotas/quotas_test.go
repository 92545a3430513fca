package quotas

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// core is the core as the module uses it: a store with project "p", the
// audit record (kept), and a clock the test moves.
type core struct {
	hook.Core
	st     *store.Store
	mu     sync.Mutex
	now    time.Time
	events []audit.Entry
}

func (c *core) Store() *store.Store                { return c.st }
func (c *core) Live(string) (*hook.LiveInfo, bool) { return nil, false }
func (c *core) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *core) Record(_ context.Context, e audit.Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
	return nil
}
func (c *core) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newQuotas(t testing.TB, cfg Config) (*Quotas, *core) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &core{st: st, now: time.Unix(1_800_000_000, 0).UTC()}
	for _, p := range []string{"p", "other"} {
		if err := st.PutProject(context.Background(), &store.Project{ID: p, Created: c.now}); err != nil {
			t.Fatal(err)
		}
	}
	q := New(cfg)
	if err := q.Attach(c); err != nil {
		t.Fatal(err)
	}
	return q, c
}

func quotaErr(t *testing.T, err error, name string) *Error {
	t.Helper()
	var qe *Error
	if !errors.As(err, &qe) || qe.Quota != name || !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Fatalf("want quota %s refused, got %v", name, err)
	}
	return qe
}

// The attack: 50 creates at once against a quota of 10. Exactly 10 are
// admitted; each refusal names the quota with the usage at its limit.
func TestABurstOfCreatesIsAdmittedUpToTheQuota(t *testing.T) {
	q, _ := newQuotas(t, Config{Defaults: Limits{Sandboxes: 10}})
	ctx := context.Background()
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := q.AdmitCreate(ctx, "p", runtime.Limits{})
			var qe *Error
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &qe) && qe.Quota == NameSandboxes && qe.Limit == 10 && qe.Used == 10:
				refused.Add(1)
			default:
				t.Errorf("create: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != 10 || refused.Load() != 40 {
		t.Fatalf("%d admitted, %d refused; want 10 and 40", ok.Load(), refused.Load())
	}
	// another project's quota is its own
	if _, err := q.AdmitCreate(ctx, "other", runtime.Limits{}); err != nil {
		t.Errorf("other project: %v", err)
	}
}

// Memory, CPUs and disk add up the live sandboxes' limits; a limit left
// to the backend counts Unset; a release gives its share back, once.
func TestResourcesAddUpAndComeBackAtRelease(t *testing.T) {
	q, _ := newQuotas(t, Config{Defaults: Limits{MemoryBytes: 1 << 30, CPUs: 2, DiskBytes: 3 << 30},
		Unset: runtime.Limits{MemoryBytes: 512 << 20, CPUs: 8, DiskBytes: 1 << 30}})
	ctx := context.Background()
	r1, err := q.AdmitCreate(ctx, "p", runtime.Limits{MemoryBytes: 512 << 20, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	// no CPU limit counts the host's 8 cores, past the quota of 2
	qe := quotaErr(t, must2(q.AdmitCreate(ctx, "p", runtime.Limits{MemoryBytes: 256 << 20})), NameCPUs)
	if qe.Asked != 8 || qe.Used != 1 || qe.Limit != 2 {
		t.Errorf("cpus refusal: %+v", qe)
	}
	// no memory limit counts the backend's 512 MiB: it fits exactly
	r2, err := q.AdmitCreate(ctx, "p", runtime.Limits{CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	qe = quotaErr(t, must2(q.AdmitCreate(ctx, "p", runtime.Limits{MemoryBytes: 16 << 20, CPUs: 0.01})), NameMemory)
	if qe.Used != 1<<30 || qe.Asked != 16<<20 {
		t.Errorf("memory refusal: %+v", qe)
	}
	rep, _ := q.Usage(ctx, "p")
	if u := rep.Usage; u.Sandboxes != 2 || u.MemoryBytes != 1<<30 || u.CPUs != 2 || u.DiskBytes != 2<<30 {
		t.Errorf("usage: %+v", u)
	}
	r1()
	r1() // a second call gives nothing back twice
	rep, _ = q.Usage(ctx, "p")
	if u := rep.Usage; u.Sandboxes != 1 || u.MemoryBytes != 512<<20 || u.CPUs != 1 {
		t.Errorf("usage after one release (twice): %+v", u)
	}
	qe = quotaErr(t, must2(q.AdmitCreate(ctx, "p", runtime.Limits{MemoryBytes: 512 << 20, CPUs: 1, DiskBytes: 2<<30 + 1})), NameDisk)
	if qe.Used != 1<<30 {
		t.Errorf("disk refusal: %+v", qe)
	}
	r2()
	if rep, _ = q.Usage(ctx, "p"); rep.Usage != (Usage{}) {
		t.Errorf("usage after every release: %+v", rep.Usage)
	}
}

func must2(_ func(), err error) error { return err }

// Commands a minute: at most the quota in any 60 seconds; the window
// slides by the second.
func TestExecsPerMinute(t *testing.T) {
	q, c := newQuotas(t, Config{Defaults: Limits{ExecsPerMinute: 5}})
	ctx := context.Background()
	for i := range 5 {
		if err := q.AdmitExec(ctx, "p"); err != nil {
			t.Fatalf("exec %d: %v", i, err)
		}
		c.advance(time.Second)
	}
	qe := quotaErr(t, q.AdmitExec(ctx, "p"), NameExecsPerMinute)
	if qe.Used != 5 || qe.Limit != 5 {
		t.Errorf("refusal: %+v", qe)
	}
	if err := q.AdmitExec(ctx, "other"); err != nil {
		t.Errorf("another project: %v", err)
	}
	c.advance(50 * time.Second) // 55 s after the first: all five still count
	quotaErr(t, q.AdmitExec(ctx, "p"), NameExecsPerMinute)
	c.advance(5 * time.Second) // 60 s after the first: it no longer counts
	if err := q.AdmitExec(ctx, "p"); err != nil {
		t.Errorf("after the first left the window: %v", err)
	}
	quotaErr(t, q.AdmitExec(ctx, "p"), NameExecsPerMinute)
	rep, _ := q.Usage(ctx, "p")
	if rep.Usage.ExecsLastMinute != 5 {
		t.Errorf("execs last minute: %d, want 5", rep.Usage.ExecsLastMinute)
	}
	c.advance(2 * time.Minute)
	if rep, _ = q.Usage(ctx, "p"); rep.Usage.ExecsLastMinute != 0 {
		t.Errorf("two minutes later: %d", rep.Usage.ExecsLastMinute)
	}
}

func i64(v int64) *int64 { return &v }

// A project's settings go over the defaults; the operator sets any, a
// project's admin only lowers (raising one, or lifting its bound with 0,
// is refused and changes nothing), and no other project's admin reaches
// it.
func TestSetQuotasAdminOnlyLowers(t *testing.T) {
	q, c := newQuotas(t, Config{Defaults: Limits{Sandboxes: 10, ExecsPerMinute: 100}})
	op := context.Background()
	admin := tenant.With(op, tenant.Principal{Project: "p", Role: tenant.Admin, KeyID: "k-1"})
	rep, err := q.SetQuotas(admin, "p", Settings{Sandboxes: i64(4)})
	if err != nil || rep.Quotas.Sandboxes != 4 || rep.Quotas.ExecsPerMinute != 100 {
		t.Fatalf("admin lowers: %+v %v", rep, err)
	}
	for name, s := range map[string]Settings{
		"raise":            {Sandboxes: i64(5)},
		"lift":             {Sandboxes: i64(0)},
		"back to default":  {},
		"lift other quota": {Sandboxes: i64(4), ExecsPerMinute: i64(0)},
	} {
		if _, err := q.SetQuotas(admin, "p", s); !errors.Is(err, errdefs.ErrDenied) {
			t.Errorf("admin %s: %v, want denied", name, err)
		}
	}
	other := tenant.With(op, tenant.Principal{Project: "other", Role: tenant.Admin, KeyID: "k-2"})
	if _, err := q.SetQuotas(other, "p", Settings{Sandboxes: i64(1)}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("another project's admin: %v, want not found", err)
	}
	agent := tenant.With(op, tenant.Principal{Project: "p", Role: tenant.Agent, KeyID: "k-3"})
	if _, err := q.SetQuotas(agent, "p", Settings{Sandboxes: i64(1)}); err == nil {
		t.Error("an agent set its project's quotas")
	}
	if rep, _ = q.Usage(op, "p"); rep.Quotas.Sandboxes != 4 {
		t.Errorf("after the refusals: %+v", rep.Quotas)
	}
	if _, err = q.SetQuotas(op, "p", Settings{Sandboxes: i64(0), ExecsPerMinute: i64(-1)}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("negative: %v", err)
	}
	if rep, err = q.SetQuotas(op, "p", Settings{Sandboxes: i64(0)}); err != nil || rep.Quotas.Sandboxes != 0 || *rep.Set.Sandboxes != 0 {
		t.Errorf("operator lifts: %+v %v", rep, err)
	}
	// kept in the store, as the record of project p reads
	rec, _ := c.st.GetProject(op, "p")
	if string(rec.Quotas) != `{"sandboxes":0}` {
		t.Errorf("stored: %s", rec.Quotas)
	}
	if len(c.events) != 2 || c.events[1].Kind != "project.quotas" {
		t.Errorf("recorded: %+v", c.events)
	}
	if _, err := q.Usage(op, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("missing project: %v", err)
	}
}

// A project whose stored quotas this daemon cannot read (a field it does
// not know) admits nothing: a quota is never silently dropped.
func TestUnreadableStoredQuotasFailClosed(t *testing.T) {
	q, c := newQuotas(t, Config{})
	ctx := context.Background()
	if err := c.st.SetProjectQuotas(ctx, "p", []byte(`{"gpus":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.AdmitCreate(ctx, "p", runtime.Limits{}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("create: %v", err)
	}
	if err := q.AdmitExec(ctx, "p"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("exec: %v", err)
	}
	if _, err := q.SetQuotas(ctx, "p", Settings{Sandboxes: i64(3)}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("set over an unreadable one (its before is unknown): %v", err)
	}
}

func TestUnattachedAdmitsNothing(t *testing.T) {
	var none *Quotas
	if _, err := none.AdmitCreate(context.Background(), "p", runtime.Limits{}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("nil: %v", err)
	}
	if err := New(Config{}).AdmitExec(context.Background(), "p"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("unattached: %v", err)
	}
	if err := New(Config{Defaults: Limits{CPUs: -1}}).Attach(&core{}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("negative default: %v", err)
	}
}

// A key's bucket: Burst at once, then PerSecond; keys apart.
func TestKeyRates(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := NewKeyRates(Rate{PerSecond: 2, Burst: 3}, func() time.Time { return now })
	for i := range 3 {
		if ok, _ := k.Allow("k-a"); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	ok, wait := k.Allow("k-a")
	if ok || wait != 500*time.Millisecond {
		t.Errorf("past the burst: %v, wait %s", ok, wait)
	}
	if ok, _ := k.Allow("k-b"); !ok {
		t.Error("another key refused")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := k.Allow("k-a"); !ok {
		t.Error("a token back after 0.5 s at 2/s: refused")
	}
	if ok, _ := k.Allow("k-a"); ok {
		t.Error("and a second one")
	}
	now = now.Add(time.Hour)
	n := 0
	for ok, _ := k.Allow("k-a"); ok; ok, _ = k.Allow("k-a") {
		n++
	}
	if n != 3 {
		t.Errorf("after an hour: %d at once, want the burst 3", n)
	}
	if NewKeyRates(Rate{}, nil) != nil {
		t.Error("no rate: a limiter")
	}
	if ok, _ := (*KeyRates)(nil).Allow("k"); !ok {
		t.Error("nil limiter refused")
	}
}

// Stored output: each command's output is added as it ends; a command of
// a project at its quota is refused; the count is read again from the
// store before a refusal (at most once a second), so output removed
// since lets commands run again.
func TestStoredOutputBytes(t *testing.T) {
	q, c := newQuotas(t, Config{Defaults: Limits{StoredOutputBytes: 100}})
	ctx := context.Background()
	if err := c.st.PutSandbox(ctx, &store.Sandbox{ID: "sb-1", State: "running", Backend: "fake", Template: "host", Created: c.now, Project: "p"}); err != nil {
		t.Fatal(err)
	}
	out := func(id string, n int) {
		t.Helper()
		if err := c.st.PutExec(ctx, &store.Exec{ID: id, SandboxID: "sb-1", Cwd: "/", Started: c.now}); err != nil && !errors.Is(err, errdefs.ErrConflict) {
			t.Fatal(err)
		}
		if err := c.st.PutOutput(ctx, id, "stdout", make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.AdmitExec(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	out("x-1", 60)
	q.AfterExec(ctx, hook.ExecDone{SandboxID: "sb-1", ExecID: "x-1"})
	if err := q.AdmitExec(ctx, "p"); err != nil {
		t.Fatalf("at 60 of 100: %v", err)
	}
	out("x-2", 50)
	q.AfterExec(ctx, hook.ExecDone{SandboxID: "sb-1", ExecID: "x-2"})
	qe := quotaErr(t, q.AdmitExec(ctx, "p"), NameStoredOutput)
	if qe.Used != 110 || qe.Limit != 100 {
		t.Errorf("refusal: %+v", qe)
	}
	rep, _ := q.Usage(ctx, "p")
	if rep.Usage.StoredOutputBytes != 110 {
		t.Errorf("usage: %d", rep.Usage.StoredOutputBytes)
	}
	out("x-2", 10) // its output replaced by less (as a purge would remove it)
	c.advance(2 * time.Second)
	if err := q.AdmitExec(ctx, "p"); err != nil {
		t.Errorf("after the store holds 70: %v", err)
	}
}
