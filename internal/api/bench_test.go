package api

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/wire"
)

func medianMS(ds []time.Duration) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// TestBenchAPI measures create and exec through the API, client ->
// daemon -> sandbox -> result over the unix socket (targets: create
// median <= 30 ms, exec /bin/true median <= 5 ms). It is a test, not a
// Benchmark, because the daemon harness needs a *testing.T; `make bench`
// runs it with AIRLOCK_BENCH=1.
func TestBenchAPI(t *testing.T) {
	if os.Getenv("AIRLOCK_BENCH") == "" {
		t.Skip("benchmark: run with AIRLOCK_BENCH=1")
	}
	d := newDaemon(t)
	var creates, execs []time.Duration
	for i := 0; i < 50; i++ {
		var sb sandbox.Sandbox
		start := time.Now()
		if code := d.do("POST", "/v1/sandboxes", nil, &sb); code != 201 {
			t.Fatalf("create: %d", code)
		}
		creates = append(creates, time.Since(start))
		d.do("DELETE", "/v1/sandboxes/"+sb.ID, nil, nil)
	}
	var sb sandbox.Sandbox
	d.do("POST", "/v1/sandboxes", nil, &sb)
	for i := 0; i < 300; i++ {
		start := time.Now()
		_, events, _ := d.exec(sb.ID, wire.ExecRequest{Argv: []string{"/bin/true"}})
		execs = append(execs, time.Since(start))
		if _, _, exit := collect(events); exit == nil || exit.Status == nil || exit.Status.Code != 0 {
			t.Fatalf("exec: %+v", events)
		}
	}
	t.Logf("BENCH api create median %.2f ms (target <= 30); api exec /bin/true median %.2f ms (target <= 5)", medianMS(creates), medianMS(execs))
}

// TestConcurrentSandboxes: 100 sandboxes at once, 20 execs each, through
// the API: no error, and nothing left behind.
func TestConcurrentSandboxes(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	d := newDaemon(t)
	be := d.be
	before, err := be.Census()
	if err != nil {
		t.Fatal(err)
	}
	const n, per = 100, 20
	var wg sync.WaitGroup
	errs := make(chan error, n*per)
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var raw json.RawMessage
			var sb sandbox.Sandbox
			if code := d.do("POST", "/v1/sandboxes", nil, &raw); code != 201 || json.Unmarshal(raw, &sb) != nil {
				errs <- fmt.Errorf("create %d: status %d %s", i, code, raw)
				return
			}
			for j := 0; j < per; j++ {
				code, events, e := d.exec(sb.ID, wire.ExecRequest{Argv: []string{"/bin/echo", fmt.Sprint(i, j)}})
				out, _, exit := collect(events)
				if code != 200 || exit == nil || exit.Status == nil || exit.Status.Code != 0 || out != fmt.Sprintf("%d %d\n", i, j) {
					b, _ := json.Marshal(e)
					evs, _ := json.Marshal(events)
					errs <- fmt.Errorf("exec %d/%d: %d %q %s events %s", i, j, code, out, b, evs)
				}
			}
			if code := d.do("DELETE", "/v1/sandboxes/"+sb.ID, nil, nil); code != 204 {
				errs <- fmt.Errorf("delete %d: %d", i, code)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	nerr := 0
	for err := range errs {
		nerr++
		if nerr <= 10 {
			t.Error(err)
		}
	}
	after, _ := be.Census()
	t.Logf("%d sandboxes x %d execs in %s, %d errors; census before %+v after %+v", n, per, time.Since(start), nerr, before, after)
	// Processes is host-wide (other test packages run in parallel); the
	// other counts are this backend's own.
	if after.StateDirs != before.StateDirs || after.Cgroups != before.Cgroups || after.Mounts != before.Mounts {
		t.Errorf("census changed: before %+v after %+v", before, after)
	}
}

// TestBenchAuditExec compares exec /bin/true through the API with the
// full audit record (events, redaction, API-call events) and without it,
// in one run (target: with <= 1.2x without). AIRLOCK_BENCH=1.
func TestBenchAuditExec(t *testing.T) {
	if os.Getenv("AIRLOCK_BENCH") == "" {
		t.Skip("benchmark: run with AIRLOCK_BENCH=1")
	}
	plain := newDaemon(t)
	audited, _ := auditDaemon(t)
	ids := [2]string{plain.sandbox(), audited.sandbox()}
	var times [2][]time.Duration
	for i := 0; i < 1000; i++ {
		for j, d := range []*daemon{plain, audited} {
			start := time.Now()
			_, events, _ := d.exec(ids[j], wire.ExecRequest{Argv: []string{"/bin/true"}})
			times[j] = append(times[j], time.Since(start))
			if _, _, exit := collect(events); exit == nil || exit.Status == nil || exit.Status.Code != 0 {
				t.Fatalf("exec: %+v", events)
			}
		}
	}
	a, b := medianMS(times[0]), medianMS(times[1])
	t.Logf("BENCH api exec /bin/true median: without audit %.2f ms, with audit %.2f ms = %.2fx (target <= 1.2x)", a, b, b/a)
}
