package egress

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// byteQuota is a project's egress bytes a day as the quotas module keeps
// it: refuses once used reaches limit.
type byteQuota struct {
	mu    sync.Mutex
	limit int64
	used  int64
	ids   map[string]int64
}

func (q *byteQuota) AdmitEgress(id string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.used >= q.limit {
		return "project p: quota egress_bytes_per_day: used up"
	}
	return ""
}

func (q *byteQuota) EgressMoved(id string, n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.used += n
	if q.ids == nil {
		q.ids = map[string]int64{}
	}
	q.ids[id] += n
}

func (q *byteQuota) total() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used
}

// The exfiltration-by-volume attack: a sandbox allowed to reach a host
// keeps moving data through it. Once its project's bytes reach the
// quota, the next request is refused before anything is dialled, the
// refusal is the decision on record (rule quota, naming the quota), and
// every byte the allowed exchanges moved was counted.
func TestEgressQuotaRefusesOnceTheBytesAreUsed(t *testing.T) {
	body := strings.Repeat("x", 4096)
	up := startUpstream(t, nil, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	q := &byteQuota{limit: 10000}
	e := newEnv(t, newResolver("api.example.test", "127.0.0.1"), Config{Quota: q})
	e.setPolicy(t, Policy{Rules: []Rule{
		{ID: "api", Action: Allow, Hosts: []string{"api.example.test"}, Ports: []int{up.port}},
		loopbackRule(up.port),
	}})
	c := e.client(nil)
	url := "http://api.example.test:" + itoa(up.port) + "/data"
	ok, refused := 0, 0
	for range 10 {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			refused++
			if ruleOf(resp) != RuleQuota {
				t.Errorf("refusal rule %q, want %q", ruleOf(resp), RuleQuota)
			}
		default:
			t.Fatalf("status %d", resp.StatusCode)
		}
		if refused > 0 {
			break
		}
	}
	if ok != 3 || refused != 1 {
		t.Fatalf("%d requests passed and %d were refused, want 3 (10000 bytes at ~4.2 KB each) then a refusal", ok, refused)
	}
	if got := len(up.requests()); got != 3 {
		t.Errorf("the upstream saw %d requests, want 3: the refused one must not go out", got)
	}
	var sum int64
	for _, res := range e.rec.find(t, KindResponse, 3) {
		sum += res.BytesUp + res.BytesDown
	}
	if got := q.total(); got != sum || q.ids["sb1"] != sum {
		t.Errorf("the quota was told %d bytes (%v), the record holds %d", got, q.ids, sum)
	}
	var denied []Event
	for _, ev := range e.rec.all() {
		if ev.Kind == KindRequest && ev.Decision == "deny" {
			denied = append(denied, ev)
		}
	}
	if len(denied) != 1 || denied[0].Rule != RuleQuota || !strings.Contains(denied[0].Reason, "egress_bytes_per_day") {
		t.Errorf("refusals on record: %+v", denied)
	}
	dials := e.dial.count()
	resp, _ := e.connect(t, "api.example.test:"+itoa(up.port))
	if resp.StatusCode != http.StatusTooManyRequests || ruleOf(resp) != RuleQuota {
		t.Errorf("CONNECT past the quota: %d rule %q", resp.StatusCode, ruleOf(resp))
	}
	if e.dial.count() != dials {
		t.Error("a CONNECT past the quota dialled the upstream")
	}
}

// A tunnel's bytes are counted when it ends, both ways, as its close
// event records them.
func TestEgressQuotaCountsATunnelsBytes(t *testing.T) {
	up := startUpstream(t, nil, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("y", 2000)) })
	q := &byteQuota{limit: 1 << 30}
	e := newEnv(t, newResolver("raw.example.test", "127.0.0.1"), Config{Quota: q})
	e.setPolicy(t, Policy{Rules: []Rule{
		{ID: "raw", Action: Allow, Hosts: []string{"raw.example.test"}, Ports: []int{up.port}, Opaque: true},
		loopbackRule(up.port),
	}})
	resp, c := e.connect(t, "raw.example.test:"+itoa(up.port))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: raw.example.test\r\nConnection: close\r\n\r\n")
	got, _ := io.ReadAll(c)
	c.Close()
	if !strings.Contains(string(got), strings.Repeat("y", 2000)) {
		t.Fatalf("through the tunnel: %q", got)
	}
	end := e.rec.find(t, KindClose, 1)[0]
	deadline := time.Now().Add(5 * time.Second)
	for q.total() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := q.total(); n != end.BytesUp+end.BytesDown || n < 2000 {
		t.Errorf("the quota was told %d bytes, the close event holds %d up and %d down", n, end.BytesUp, end.BytesDown)
	}
}

// The long-tunnel attack: one tunnel that never ends carries data past
// the quota. Its bytes are read from the kernel while it is open, and it
// is cut once the quota refuses more, its close event naming the quota.
func TestEgressQuotaCutsAnOpenTunnel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	q := &byteQuota{limit: 1 << 20}
	e := newEnv(t, newResolver("echo.example.test", "127.0.0.1"), Config{Quota: q, QuotaPoll: 20 * time.Millisecond})
	e.setPolicy(t, Policy{Rules: []Rule{
		{ID: "echo", Action: Allow, Hosts: []string{"echo.example.test"}, Ports: []int{port}, Opaque: true},
		loopbackRule(port),
	}})
	resp, c := e.connect(t, "echo.example.test:"+itoa(port))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go io.Copy(io.Discard, c)
	chunk := make([]byte, 64<<10)
	var sent int64
	const most = 256 << 20
	for sent < most {
		n, err := c.Write(chunk)
		sent += int64(n)
		if err != nil {
			break
		}
	}
	if sent >= most {
		t.Fatalf("the tunnel carried %d bytes against a quota of %d and was not cut", sent, q.limit)
	}
	end := e.rec.find(t, KindClose, 1)[0]
	if end.Decision != "deny" || end.Rule != RuleQuota || !strings.Contains(end.Reason, "egress_bytes_per_day") {
		t.Errorf("close event of the cut tunnel: %+v", end)
	}
	deadline := time.Now().Add(5 * time.Second)
	for q.total() < end.BytesUp+end.BytesDown && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := q.total(); got < q.limit || got < end.BytesUp+end.BytesDown {
		t.Errorf("the quota was told %d bytes; the limit is %d, the close event holds %d", got, q.limit, end.BytesUp+end.BytesDown)
	}
	t.Logf("cut after %d bytes written (quota %d, poll 20ms)", sent, q.limit)
}

// A brokered tunnel kept alive is one connection of many requests: each
// is asked of the quota and counted as it ends, so the tunnel cannot
// carry requests past the quota.
func TestEgressQuotaBindsABrokeredTunnelsRequests(t *testing.T) {
	q := &byteQuota{limit: 3000}
	b := newBrokerEnvCfg(t, true, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("b", 2000)) }, Config{Quota: q})
	c := b.client(b.sandboxCA)
	defer c.Transport.(*http.Transport).CloseIdleConnections()
	url := "https://api.secret.example.test:" + itoa(b.up.port) + "/data"
	var codes []int
	for range 4 {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode != 200 {
			if ruleOf(resp) != RuleQuota {
				t.Errorf("refusal rule %q", ruleOf(resp))
			}
			break
		}
	}
	if len(codes) != 3 || codes[2] != http.StatusTooManyRequests {
		t.Fatalf("answers %v, want two 200s and a 429 (3000 bytes at ~2.1 KB a request)", codes)
	}
	if n := b.dial.count(); n != 1 {
		t.Errorf("%d upstream dials: the requests did not share one tunnel", n)
	}
	if got := len(b.up.requests()); got != 2 {
		t.Errorf("the upstream saw %d requests, want 2", got)
	}
	c.Transport.(*http.Transport).CloseIdleConnections()
	end := b.rec.find(t, KindClose, 1)[0]
	deadline := time.Now().Add(5 * time.Second)
	for q.total() < end.BytesUp+end.BytesDown && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := q.total(); got != end.BytesUp+end.BytesDown {
		t.Errorf("the quota was told %d bytes, the tunnel's close event holds %d (each exchange once)", got, end.BytesUp+end.BytesDown)
	}
}
