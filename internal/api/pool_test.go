package api

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/pool"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/wire"
)

// newPoolDaemon is a native daemon with a warm pool of host sandboxes.
func newPoolDaemon(t *testing.T, min, max int) *daemon {
	t.Helper()
	return newDaemonWith(t, func(c *stack.Config) {
		c.Policy = allowAll
		c.Pools = []pool.Spec{{Template: "host", Min: min, Max: max}}
	})
}

// waitPoolReady waits until the daemon's one pool has at least n ready.
func (d *daemon) waitPoolReady(t testing.TB, n int) wire.Pool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var l wire.PoolList
		if code := d.do("GET", "/v1/pools", nil, &l); code != 200 || len(l.Pools) != 1 {
			t.Fatalf("pools: %d %+v", code, l)
		}
		if l.Pools[0].Ready >= n {
			return l.Pools[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool never had %d ready: %+v", n, l.Pools[0])
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// On the native backend: a create through the API claims a ready
// sandbox, with its memory limit, env and labels applied at the claim;
// the pool refills; shutdown leaves no state dir, cgroup or mount (the
// harness's census).
func TestPoolNativeClaim(t *testing.T) {
	d := newPoolDaemon(t, 1, 1)
	if p := d.waitPoolReady(t, 1); p.Backend != "native" {
		t.Fatalf("pool: %+v", p)
	}
	var sb sandbox.Sandbox
	req := sandbox.CreateRequest{Env: []string{"POOL_VAR=warm-42"}, Labels: map[string]string{"k": "v"}, Limits: runtime.Limits{MemoryBytes: 96 << 20}}
	if code := d.do("POST", "/v1/sandboxes", req, &sb); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if sb.Limits.MemoryBytes != 96<<20 || sb.Labels["k"] != "v" {
		t.Errorf("claimed sandbox: limits %+v labels %v", sb.Limits, sb.Labels)
	}
	_, events, _ := d.exec(sb.ID, wire.ExecRequest{Argv: []string{"sh", "-c", `echo "$POOL_VAR"; cat /proc/self/cgroup`}})
	out, _, exit := collect(events)
	if exit == nil || exit.Status == nil || exit.Status.Code != 0 || !strings.HasPrefix(out, "warm-42\n") {
		t.Fatalf("exec: %q %+v", out, exit)
	}
	if p := d.waitPoolReady(t, 1); p.Claimed != 1 || p.Created != 2 {
		t.Errorf("after the claim: %+v", p)
	}
	var shown sandbox.Sandbox
	d.do("GET", "/v1/sandboxes/"+sb.ID, nil, &shown)
	if shown.Limits.MemoryBytes != 96<<20 {
		t.Errorf("record's limits: %+v", shown.Limits)
	}
	if code := d.do("DELETE", "/v1/sandboxes/"+sb.ID, nil, nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
}

// TestBenchPool measures, interleaved in one run, an API create that
// claims from a warm pool against one on a daemon without a pool, and
// create + exec /bin/true + destroy on each (targets: claim p50 <= 3 ms,
// create + exec + destroy p50 <= 10 ms). The pool is given time to
// refill between rounds (not timed): what is measured is a claim.
func TestBenchPool(t *testing.T) {
	if os.Getenv("AIRLOCK_BENCH") == "" {
		t.Skip("benchmark: run with AIRLOCK_BENCH=1")
	}
	dp, dn := newPoolDaemon(t, 2, 2), newDaemon(t)
	var claim, plain, claimCycle, plainCycle []time.Duration
	var parts, plainParts [3][]time.Duration // each cycle's create, exec, destroy
	create := func(d *daemon) (string, time.Duration) {
		var sb sandbox.Sandbox
		start := time.Now()
		if code := d.do("POST", "/v1/sandboxes", nil, &sb); code != 201 {
			t.Fatalf("create: %d", code)
		}
		return sb.ID, time.Since(start)
	}
	cycle := func(d *daemon) time.Duration {
		start := time.Now()
		id, c := create(d)
		t1 := time.Now()
		_, events, _ := d.exec(id, wire.ExecRequest{Argv: []string{"/bin/true"}})
		t2 := time.Now()
		pp := &parts
		if d == dn {
			pp = &plainParts
		}
		pp[0], pp[1] = append(pp[0], c), append(pp[1], t2.Sub(t1))
		defer func() { pp[2] = append(pp[2], time.Since(t2)) }()
		if _, _, exit := collect(events); exit == nil || exit.Status == nil || exit.Status.Code != 0 {
			t.Fatalf("exec: %+v", events)
		}
		if code := d.do("DELETE", "/v1/sandboxes/"+id, nil, nil); code != 204 {
			t.Fatalf("delete: %d", code)
		}
		return time.Since(start)
	}
	for range 40 {
		dp.waitPoolReady(t, 2)
		id, dur := create(dp)
		claim = append(claim, dur)
		dp.do("DELETE", "/v1/sandboxes/"+id, nil, nil)
		id, dur = create(dn)
		plain = append(plain, dur)
		dn.do("DELETE", "/v1/sandboxes/"+id, nil, nil)
		dp.waitPoolReady(t, 2)
		claimCycle = append(claimCycle, cycle(dp))
		plainCycle = append(plainCycle, cycle(dn))
	}
	var l wire.PoolList
	dp.do("GET", "/v1/pools", nil, &l)
	if p := l.Pools[0]; p.Misses != 0 || p.Claimed != 80 {
		t.Errorf("not every pooled create claimed: %+v", p)
	}
	t.Logf("BENCH api create p50: from the pool %.2f ms (target <= 3), without a pool %.2f ms; create+exec true+destroy p50: from the pool %.2f ms (target <= 10), without %.2f ms",
		medianMS(claim), medianMS(plain), medianMS(claimCycle), medianMS(plainCycle))
	t.Logf("BENCH the cycle's parts p50: from the pool create %.2f ms, exec %.2f ms, destroy %.2f ms; without create %.2f ms, exec %.2f ms, destroy %.2f ms",
		medianMS(parts[0]), medianMS(parts[1]), medianMS(parts[2]), medianMS(plainParts[0]), medianMS(plainParts[1]), medianMS(plainParts[2]))
}
