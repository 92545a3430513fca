package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/wire"
	"golang.org/x/sys/unix"
)

// The audit-flood attacks (issue 16 item 3, issue 17 item 6): code in a
// sandbox makes the daemon write events as fast as it can ask, to fill
// the log disk that every sandbox's record needs.

var probeOnce struct {
	sync.Once
	bin []byte
	err error
}

// probeBinary is the escape suite's hostile probe, built once.
func probeBinary(t *testing.T) []byte {
	t.Helper()
	probeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "airlock-probe-")
		if err != nil {
			probeOnce.err = err
			return
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "probe")
		cmd := exec.Command("go", "build", "-o", bin, "../runtime/native/testdata/probe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			probeOnce.err = fmt.Errorf("build the probe: %v: %s", err, out)
			return
		}
		probeOnce.bin, probeOnce.err = os.ReadFile(bin)
	})
	if probeOnce.err != nil {
		t.Fatal(probeOnce.err)
	}
	return probeOnce.bin
}

type probeResult struct {
	Case   string
	OK     bool
	Detail string
	N      int64
}

// runProbe puts the probe in the sandbox and runs one case.
func (e *egressEnv) runProbe(id string, args ...string) probeResult {
	e.t.Helper()
	if code := e.do("PUT", "/v1/sandboxes/"+id+"/files?path=/tmp/probe&mode=0755", string(probeBinary(e.t)), nil); code != 200 {
		e.t.Fatalf("upload the probe: %d", code)
	}
	code, evs, eb := e.exec(id, wire.ExecRequest{Argv: append([]string{"/tmp/probe"}, args...)})
	out, errOut, _ := collect(evs)
	var r probeResult
	if code != 200 || json.Unmarshal([]byte(out), &r) != nil {
		e.t.Fatalf("probe %v: %d %+v %q %q", args, code, eb, out, errOut)
	}
	return r
}

// daemonCPU is this process's CPU time so far: the daemon's, in these
// tests (the sandbox's own is in its cgroup).
func daemonCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type dnsFlood struct {
	Rcodes  map[string]int
	Seconds float64
}

func (r probeResult) flood(t *testing.T) dnsFlood {
	t.Helper()
	var f dnsFlood
	if err := json.Unmarshal([]byte(r.Detail), &f); err != nil {
		t.Fatalf("probe detail %q: %v", r.Detail, err)
	}
	return f
}

// summary is the part of an egress.refused.summary payload the tests read.
type summary struct {
	Of    string `json:"of"`
	Count int64  `json:"count"`
	Rule  string `json:"rule"`
	Final bool   `json:"final"`
}

// dnsAccounted is how many DNS queries of a sandbox the record accounts
// for: one event each, or counted in summaries.
func dnsAccounted(t *testing.T, evs []audit.Event) (individual, counted int64) {
	t.Helper()
	for _, ev := range evs {
		switch ev.Kind {
		case string(egress.KindDNS):
			individual++
		case string(egress.KindRefusedSummary):
			var s summary
			if err := json.Unmarshal(ev.Payload, &s); err != nil {
				t.Fatal(err)
			}
			if s.Of == string(egress.KindDNS) {
				counted += s.Count
			}
		}
	}
	return
}

// A sandbox fires DNS queries for a name it may not reach in a tight loop
// at its own 127.0.0.1:53 filter, with the daemon's default limits. Each
// query used to be a permanent chained event (~1,600 a second); now the
// record holds a handful of events while the flood runs, and once the
// sandbox is gone its summaries account for every query, exactly.
func TestDNSFloodFromASandboxIsBoundedAndCounted(t *testing.T) {
	const n = 3000
	e := egressDaemon(t, egressTestPolicy)
	id := e.sandbox()
	before := daemonCPU()
	r := e.runProbe(id, "dns-flood", "exfil.example.test", fmt.Sprint(n))
	f := r.flood(t)
	t.Logf("the daemon's CPU (this test process) during the flood: %s", daemonCPU()-before)
	if r.N != n {
		t.Fatalf("the probe sent %d queries, want %d: %+v", r.N, n, f)
	}
	if f.Rcodes["none"] != 0 {
		t.Errorf("%d of %d queries unanswered: %+v", f.Rcodes["none"], n, f)
	}
	t.Logf("%d queries in %.2fs: answers by rcode %v", n, f.Seconds, f.Rcodes)
	during := e.egressEvents(id)
	// The first refusal of each kind (NXDOMAIN, over the rate), and a
	// summary per kind for each 10 s window the flood spanned.
	if bound := 2 + 2*int(f.Seconds/10+1); len(during) > bound {
		t.Errorf("%d egress events for %d queries, want at most %d", len(during), n, bound)
	}
	if code := e.do("DELETE", "/v1/sandboxes/"+id, nil, nil); code != 204 {
		t.Fatalf("destroy: %d", code)
	}
	ind, counted := dnsAccounted(t, e.egressEvents(id))
	if ind+counted != n {
		t.Errorf("the record accounts for %d queries (%d one by one, %d in summaries), want exactly %d", ind+counted, ind, counted, n)
	}
}

// The same through the proxy: a shell loop of curl to a host the sandbox
// may not reach, with a connection rate of 20/s in bursts of 20. Every
// connection is answered (403 or 429, none queued), the record holds a
// handful of events, and its summaries account for every connection.
func TestProxyFloodFromASandboxIsBoundedAndCounted(t *testing.T) {
	const n = 200
	e := egressDaemonWith(t, "", egressTestPolicy, floodOpts{limits: egress.Limits{ConnRate: 20, ConnBurst: 20}})
	id := e.sandbox()
	_, out, _ := e.sh(id, fmt.Sprintf(`i=0; while [ $i -lt %d ]; do curl -s -o /dev/null --max-time 10 -w '%%{http_code}\n' http://denied.example.test/; i=$((i+1)); done`, n), nil)
	codes := map[string]int{}
	for _, c := range strings.Fields(out) {
		codes[c]++
	}
	if codes["403"]+codes["429"] != n || codes["429"] == 0 {
		t.Fatalf("answers to %d connections: %v", n, codes)
	}
	if during := e.egressEvents(id); len(during) > 6 {
		t.Errorf("%d egress events for %d connections, want at most 6", len(during), n)
	}
	if code := e.do("DELETE", "/v1/sandboxes/"+id, nil, nil); code != 204 {
		t.Fatalf("destroy: %d", code)
	}
	var accounted int64
	for _, ev := range e.egressEvents(id) {
		switch ev.Kind {
		case string(egress.KindRequest), string(egress.KindConnect):
			accounted++
		case string(egress.KindRefusedSummary):
			var s summary
			if err := json.Unmarshal(ev.Payload, &s); err != nil {
				t.Fatal(err)
			}
			accounted += s.Count
		}
	}
	if accounted != n {
		t.Errorf("the record accounts for %d connections, want exactly %d (answers %v)", accounted, n, codes)
	}
}

// A sandbox that uses up its audit budget loses its egress (DNS and the
// proxy), once on the record and visible in its details and egress
// policy; another sandbox's egress goes on working.
func TestAuditBudgetExhaustionCutsOnlyThatSandbox(t *testing.T) {
	const budget = 40
	e := egressDaemonWith(t, "", egressTestPolicy, floodOpts{limits: egress.Limits{DNSRate: -1, BudgetEvents: budget}})
	plain := e.plain.Listener.Addr().(*net.TCPAddr).Port
	attacker, other := e.sandbox(), e.sandbox()
	r := e.runProbe(attacker, "dns-flood", "plain.example.test", "500")
	f := r.flood(t)
	if f.Rcodes["0"] > budget || f.Rcodes["0"] == 0 || f.Rcodes["none"] != 0 {
		t.Errorf("answers to 500 allowed queries with a budget of %d events: %v", budget, f.Rcodes)
	}
	curl := fmt.Sprintf(`curl -sS -o /dev/null -w '%%{http_code}' --max-time 10 http://plain.example.test:%d/x`, plain)
	if _, out, _ := e.sh(attacker, curl, nil); out == "200" {
		t.Errorf("the cut sandbox still reaches the upstream: %q", out)
	}
	if _, out, _ := e.sh(other, curl, nil); out != "200" {
		t.Errorf("the other sandbox's egress after the first one's cut: %q", out)
	}
	var sb sandbox.Sandbox
	if code := e.do("GET", "/v1/sandboxes/"+attacker, nil, &sb); code != 200 || sb.Egress == nil || sb.Egress.Cut == nil || !strings.Contains(sb.Egress.Cut.Reason, "audit budget") {
		t.Errorf("the cut sandbox's details: %d %+v", code, sb.Egress)
	}
	var pol struct{ Usage *egress.Usage }
	if code := e.do("GET", "/v1/sandboxes/"+attacker+"/egress", nil, &pol); code != 200 || pol.Usage == nil || pol.Usage.Cut == nil {
		t.Errorf("the cut sandbox's egress: %d %+v", code, pol.Usage)
	}
	var osb sandbox.Sandbox
	if code := e.do("GET", "/v1/sandboxes/"+other, nil, &osb); code != 200 || osb.Egress == nil || osb.Egress.Cut != nil {
		t.Errorf("the other sandbox's details: %d %+v", code, osb.Egress)
	}
	cuts := 0
	for _, ev := range e.egressEvents(attacker) {
		if ev.Kind == string(egress.KindBudget) {
			cuts++
		}
	}
	if cuts != 1 {
		t.Errorf("%d %s events, want 1", cuts, egress.KindBudget)
	}
}

// The log disk fills up: the daemon fails closed, a sandbox destroyed
// meanwhile is still on the record (the reserve), and once space is back
// the daemon takes work again without a restart, with the outage on the
// record and the chain whole.
func TestFullLogDiskRecoversWithoutRestart(t *testing.T) {
	db := tmpfsDir(t, 16<<20)
	e := egressDaemonWith(t, db, egressTestPolicy, floodOpts{reserve: 1 << 20, retry: 100 * time.Millisecond})
	gone, stays := e.sandbox(), e.sandbox()
	fill(t, db)
	for i := 0; e.log.Err() == nil; i++ {
		if i == 30 {
			t.Fatal("the audit log never failed on a full disk")
		}
		e.sh(stays, "head -c 3000000 /dev/urandom | base64", nil)
	}
	if code := e.do("GET", "/v1/health", nil, nil); code != 503 {
		t.Errorf("health on a full log disk: %d", code)
	}
	if code := e.do("DELETE", "/v1/sandboxes/"+gone, nil, nil); code != 204 {
		t.Errorf("destroy on a full log disk: %d", code)
	}
	stopped := false
	for _, ev := range e.events("sandbox=" + gone) {
		stopped = stopped || ev.Kind == "sandbox.stop"
	}
	if !stopped {
		t.Error("the destroy on a full log disk is not on the record")
	}
	if code, _, _ := e.exec(stays, wire.ExecRequest{Argv: []string{"true"}}); code != 429 {
		t.Errorf("exec with the disk still full: %d", code)
	}

	os.Remove(filepath.Join(db, "filler"))
	for deadline := time.Now().Add(15 * time.Second); e.do("GET", "/v1/health", nil, nil) != 200; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not recover once space was back: %v", e.log.Err())
		}
	}
	if code, evs, _ := e.exec(stays, wire.ExecRequest{Argv: []string{"echo", "after"}}); code != 200 {
		t.Errorf("exec after recovery: %d", code)
	} else if out, _, _ := collect(evs); out != "after\n" {
		t.Errorf("exec after recovery: %q", out)
	}
	var kinds []string
	for _, ev := range e.events("") {
		if strings.HasPrefix(ev.Kind, "audit.") || ev.Kind == "sandbox.stop" {
			kinds = append(kinds, ev.Kind)
		}
	}
	if got := strings.Join(kinds, " "); !strings.Contains(got, "audit.outage sandbox.stop audit.recovered") {
		t.Errorf("the outage on the record: %s", got)
	}
	var rep audit.Report
	if code := e.do("GET", "/v1/audit/verify", nil, &rep); code != 200 || !rep.OK() {
		t.Errorf("verify after the outage: %d %+v", code, rep)
	}

	// Full again, and the daemon stops: its sandboxes' ends and its own
	// stop are still recorded (the reserve was taken back).
	fill(t, db)
	for i := 0; e.log.Err() == nil; i++ {
		if i == 30 {
			t.Fatal("the audit log never failed on a full disk again")
		}
		e.sh(stays, "head -c 3000000 /dev/urandom | base64", nil)
	}
	if err := e.m.Shutdown(context.Background()); err != nil {
		t.Errorf("shutdown on a full log disk: %v", err)
	}
	if err := e.m.Record(context.Background(), audit.Entry{Kind: "daemon.stop"}); err != nil {
		t.Errorf("the daemon's stop on a full log disk: %v", err)
	}
	evs, err := e.log.Query(context.Background(), store.AuditFilter{AfterSeq: rep.Head})
	if err != nil {
		t.Fatal(err)
	}
	kinds = nil
	for _, ev := range evs {
		if ev.Kind == "sandbox.stop" && ev.SandboxID != stays {
			continue
		}
		if strings.HasPrefix(ev.Kind, "audit.") || ev.Kind == "sandbox.stop" || ev.Kind == "daemon.stop" {
			kinds = append(kinds, ev.Kind)
		}
	}
	if got := strings.Join(kinds, " "); got != "audit.outage sandbox.stop daemon.stop" {
		t.Errorf("shutdown on a full disk, on the record: %q, want the outage, the sandbox's stop and the daemon's", got)
	}
}
