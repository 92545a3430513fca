package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/wire"
)

// The tenancy load test (issue 22): 20 projects of 5 agent keys each run
// native sandboxes and execs over TCP at once. Every list a key reads
// holds only its project's sandboxes, every other project's sandbox it
// names answers 404, and nothing fails; the exec latency's p50 and p99
// are reported. It runs for AIRLOCK_LOAD_SECONDS (120) under
// AIRLOCK_LOAD=1 (it loads the machine for that long).
func TestLoadManyProjects(t *testing.T) {
	if os.Getenv("AIRLOCK_LOAD") != "1" {
		t.Skip("a two-minute load test: set AIRLOCK_LOAD=1")
	}
	dur := 120 * time.Second
	if s, err := strconv.Atoi(os.Getenv("AIRLOCK_LOAD_SECONDS")); err == nil && s > 0 {
		dur = time.Duration(s) * time.Second
	}
	d := newDaemon(t)
	ctx := context.Background()
	const projects, perProject = 20, 5
	type worker struct{ project, key string }
	var workers []worker
	for p := range projects {
		name := fmt.Sprintf("load-%02d", p)
		if _, err := d.mods.Projects.Create(ctx, name); err != nil {
			t.Fatal(err)
		}
		for k := range perProject {
			_, key, err := d.keys.Make(ctx, apikeys.Request{Name: fmt.Sprintf("%s-%d", name, k), Project: name, Role: tenant.Agent})
			if err != nil {
				t.Fatal(err)
			}
			workers = append(workers, worker{name, key})
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(d.m, d.mods, Health{OK: true}).TCP()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}, Timeout: time.Minute}

	var (
		mu        sync.Mutex
		owner     = map[string]string{} // sandbox -> project
		ids       []string
		latencies []time.Duration
		leaks     atomic.Int64
		failures  atomic.Int64
	)
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 20 {
			t.Errorf(format, args...)
		}
	}
	do := func(key, method, path string, body any) (int, []byte) {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, b := do(w.key, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{})
			var sb wire.Sandbox
			if code != 201 || json.Unmarshal(b, &sb) != nil {
				fail("worker %d: create: %d %s", i, code, b)
				return
			}
			mu.Lock()
			owner[sb.ID], ids = w.project, append(ids, sb.ID)
			mu.Unlock()
			defer do(w.key, "DELETE", "/v1/sandboxes/"+sb.ID, nil)
			for n := 0; time.Now().Before(deadline); n++ {
				start := time.Now()
				code, b := do(w.key, "POST", "/v1/sandboxes/"+sb.ID+"/exec", wire.ExecRequest{Argv: []string{"true"}})
				took := time.Since(start)
				if code != 200 || !exitedZero(b) {
					fail("worker %d: exec: %d %s", i, code, b)
					continue
				}
				mu.Lock()
				latencies = append(latencies, took)
				mu.Unlock()
				if n%5 == 0 {
					checkVisibility(w.key, w.project, do, &mu, owner, ids, &leaks, fail)
				}
			}
		}()
	}
	wg.Wait()
	slices.Sort(latencies)
	if len(latencies) == 0 {
		t.Fatal("no exec ran")
	}
	p := func(q float64) time.Duration { return latencies[int(q*float64(len(latencies)-1))] }
	t.Logf("%d projects x %d agent keys for %s: %d execs, exec latency p50 %s p99 %s max %s; cross-project answers %d, failures %d",
		projects, perProject, dur, len(latencies), p(0.5), p(0.99), latencies[len(latencies)-1], leaks.Load(), failures.Load())
	if leaks.Load() != 0 || failures.Load() != 0 {
		t.Fatalf("%d cross-project answers, %d failures", leaks.Load(), failures.Load())
	}
}

// checkVisibility lists the key's sandboxes (only its project's) and
// names another project's (404).
func checkVisibility(key, project string, do func(string, string, string, any) (int, []byte), mu *sync.Mutex, owner map[string]string, ids []string, leaks *atomic.Int64, fail func(string, ...any)) {
	code, b := do(key, "GET", "/v1/sandboxes", nil)
	var l wire.SandboxList
	if code != 200 || json.Unmarshal(b, &l) != nil {
		fail("list: %d %s", code, b)
		return
	}
	for _, sb := range l.Sandboxes {
		if sb.Project != project {
			leaks.Add(1)
		}
	}
	mu.Lock()
	other := ids[rand.IntN(len(ids))]
	otherProject := owner[other]
	mu.Unlock()
	if otherProject == project {
		return
	}
	if code, _ := do(key, "GET", "/v1/sandboxes/"+other, nil); code != http.StatusNotFound {
		leaks.Add(1)
	}
}

// exitedZero says whether an exec's NDJSON stream ended with exit 0.
func exitedZero(b []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var evs []wire.Event
	for sc.Scan() {
		var ev wire.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			evs = append(evs, ev)
		}
	}
	_, _, exit := collect(evs)
	return exit != nil && exit.Type == "exit" && exit.Status != nil && exit.Status.Code == 0
}
