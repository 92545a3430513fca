package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// countDNS returns the DNS queries the record accounts for: the ones
// recorded one by one and the ones counted into summaries.
func countDNS(evs []Event) (individual, summarised int64, summaries int) {
	for _, e := range evs {
		switch {
		case e.Kind == KindDNS:
			individual++
		case e.Kind == KindRefusedSummary && e.Of == KindDNS:
			summarised += e.Count
			summaries++
		}
	}
	return
}

func rcodeOf(t *testing.T, reply []byte) dnsmessage.RCode {
	t.Helper()
	var p dnsmessage.Parser
	h, err := p.Start(reply)
	if err != nil {
		t.Fatal(err)
	}
	return h.RCode
}

// The audit-flood attack: a sandbox asks for a name it may not reach, in a
// tight loop. Each query used to be one permanent event (~1,600/s). Now
// refusals of one kind are one event and a counted summary per window,
// the rate bounds the work done at all, and every query is accounted for
// exactly.
func TestDNSFloodOfDeniedNameIsCountedNotRecorded(t *testing.T) {
	const n = 5000
	e := newEnv(t, newResolver(), Config{Limits: Limits{DNSRate: 50, DNSBurst: 100, RefusalWindow: time.Hour}})
	e.setPolicy(t, Policy{})
	refused, nx := 0, 0
	for range n {
		reply, err := e.svc.AnswerDNS(context.Background(), dnsQuery(t, "exfil.example.test", "A"), e.who)
		if err != nil {
			t.Fatal(err)
		}
		switch rcodeOf(t, reply) {
		case dnsmessage.RCodeRefused:
			refused++
		case dnsmessage.RCodeNameError:
			nx++
		}
	}
	if refused+nx != n || refused < n-200 {
		t.Errorf("answers: %d NXDOMAIN, %d REFUSED of %d queries: want at most the burst and the rate's worth answered", nx, refused, n)
	}
	if got := len(e.rec.all()); got > 2 {
		t.Errorf("%d events before the window ended, want at most 2 (the first refusal of each kind)", got)
	}
	e.svc.RemoveSandbox(e.who.SandboxID) // ends the windows
	evs := e.rec.all()
	ind, sum, summaries := countDNS(evs)
	if ind+sum != n {
		t.Errorf("the record accounts for %d queries (%d one by one, %d in summaries), want exactly %d", ind+sum, ind, sum, n)
	}
	if len(evs) > 4 || summaries == 0 {
		t.Errorf("%d events for %d queries (%d summaries): %s", len(evs), n, summaries, e.rec.json(t))
	}
	for _, ev := range evs {
		if ev.Kind == KindRefusedSummary && (!ev.Final || ev.First.IsZero() || ev.Last.Before(ev.First)) {
			t.Errorf("summary: %+v", ev)
		}
	}
}

// A summary is written when its window ends, without waiting for the
// sandbox to go.
func TestRefusalSummaryAtWindowEnd(t *testing.T) {
	e := newEnv(t, newResolver(), Config{Limits: Limits{RefusalWindow: 200 * time.Millisecond}})
	e.setPolicy(t, Policy{})
	for range 30 {
		askDNS(t, e, "denied.example.test", "A")
	}
	s := e.rec.find(t, KindRefusedSummary, 1)[0]
	if s.Count != 29 || s.Of != KindDNS || s.Host != "denied.example.test" || s.Final || s.Rule != RuleDefaultDeny {
		t.Errorf("summary: %+v", s)
	}
	askDNS(t, e, "denied.example.test", "A") // a new window: recorded again
	if ind, _, _ := countDNS(e.rec.all()); ind != 2 {
		t.Errorf("%d DNS events, want 2", ind)
	}
}

// A sandbox that asks for a new name every time cannot make one event per
// query: the names past maxRefusalKinds share one count, and the rate
// bounds the rest.
func TestDNSFloodOfDistinctNamesIsBounded(t *testing.T) {
	const n = 3000
	e := newEnv(t, newResolver(), Config{Limits: Limits{DNSRate: -1, RefusalWindow: time.Hour}})
	e.setPolicy(t, Policy{})
	for i := range n {
		askDNS(t, e, "x"+itoa(i)+".example.test", "A")
	}
	if got := len(e.rec.all()); got > maxRefusalKinds {
		t.Errorf("%d events for %d distinct denied names, want at most %d", got, n, maxRefusalKinds)
	}
	e.svc.RemoveSandbox(e.who.SandboxID)
	if ind, sum, _ := countDNS(e.rec.all()); ind+sum != n {
		t.Errorf("the record accounts for %d queries, want %d", ind+sum, n)
	}
}

// A sandbox that uses up its audit budget loses its egress, once on the
// record and with the reason; another sandbox's egress goes on.
func TestAuditBudgetCutsOnlyThatSandbox(t *testing.T) {
	res := newResolver("ok.example.test", "93.184.216.34")
	e := newEnv(t, res, Config{Limits: Limits{DNSRate: -1, BudgetEvents: 40, RefusalWindow: time.Hour}})
	pol := Policy{Rules: []Rule{{ID: "ok", Action: "allow", Hosts: []string{"ok.example.test"}}}}
	e.setPolicy(t, pol)
	other := Source{SandboxID: "sb2"}
	if err := e.svc.SetPolicy(other.SandboxID, pol); err != nil {
		t.Fatal(err)
	}
	answered := 0
	for range 200 {
		if rc, _ := askDNS(t, e, "ok.example.test", "A"); rc == "RCodeSuccess" {
			answered++
		}
	}
	if answered != 40 {
		t.Errorf("%d queries answered, want the budget's 40", answered)
	}
	u, _ := e.svc.Usage(e.who.SandboxID)
	if u.Cut == nil || !strings.Contains(u.Cut.Reason, "audit budget") || u.Events != 40 {
		t.Errorf("usage after the budget: %+v", u)
	}
	if rc, addrs := askDNSAs(t, e, other, "ok.example.test", "A"); rc != "RCodeSuccess" || len(addrs) != 1 {
		t.Errorf("the other sandbox's DNS: %s %v", rc, addrs)
	}
	// Its proxy connections are refused too.
	c, err := net.Dial("tcp", e.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("CONNECT ok.example.test:443 HTTP/1.1\r\nHost: ok.example.test:443\r\n\r\n"))
	buf := make([]byte, 512)
	k, _ := c.Read(buf)
	if !strings.Contains(string(buf[:k]), "429") || !strings.Contains(string(buf[:k]), RuleBudget) {
		t.Errorf("a connection after the cut: %q", buf[:k])
	}
	cuts := 0
	for _, ev := range e.rec.all() {
		if ev.Kind == KindBudget {
			cuts++
			if ev.SandboxID != e.who.SandboxID || !strings.Contains(ev.Reason, "audit budget") {
				t.Errorf("cut event: %+v", ev)
			}
		}
	}
	if cuts != 1 {
		t.Errorf("%d cut events, want 1", cuts)
	}
	e.svc.RemoveSandbox(e.who.SandboxID)
	var refusedDNS int64
	for _, ev := range e.rec.all() {
		if ev.Kind == KindRefusedSummary && ev.Of == KindDNS && ev.Rule == RuleBudget {
			refusedDNS += ev.Count
		}
	}
	if refusedDNS != 160 {
		t.Errorf("%d DNS budget refusals counted, want 160", refusedDNS)
	}
}

// Proxy connections over the rate are refused at once (429), not queued.
func TestProxyConnectionRate(t *testing.T) {
	e := newEnv(t, newResolver(), Config{Limits: Limits{ConnRate: 1, ConnBurst: 5, RefusalWindow: time.Hour}})
	e.setPolicy(t, Policy{})
	codes := map[int]int{}
	for range 30 {
		resp, c, _ := e.send(t, "GET http://denied.example.test/ HTTP/1.1\r\nHost: denied.example.test\r\n\r\n")
		codes[resp.StatusCode]++
		c.Close()
	}
	if codes[http.StatusTooManyRequests] < 24 || codes[http.StatusForbidden] > 6 {
		t.Errorf("answers to 30 connections at a rate of 1/s with bursts of 5: %v", codes)
	}
}

// FlushRefusals writes a sandbox's open counts at once (a bundle is taken
// from the record), and the counting goes on after it.
func TestFlushRefusalsWritesOpenCounts(t *testing.T) {
	e := newEnv(t, newResolver(), Config{Limits: Limits{RefusalWindow: time.Hour}})
	e.setPolicy(t, Policy{})
	for range 5 {
		askDNS(t, e, "denied.example.test", "A")
	}
	e.svc.FlushRefusals(context.Background(), e.who.SandboxID)
	ind, sum, summaries := countDNS(e.rec.all())
	if ind != 1 || sum != 4 || summaries != 1 {
		t.Errorf("after a flush: %d recorded, %d counted in %d summaries", ind, sum, summaries)
	}
	askDNS(t, e, "denied.example.test", "A")
	e.svc.RemoveSandbox(e.who.SandboxID)
	if ind, sum, _ := countDNS(e.rec.all()); ind+sum != 6 {
		t.Errorf("the record accounts for %d queries, want 6", ind+sum)
	}
}

// A keep-alive connection's requests are decisions too: the one past the
// budget is refused (429, rule audit-budget) and nothing more reaches the
// upstream, and the connection is cut.
func TestAuditBudgetRefusesRequestsOnAnOpenConnection(t *testing.T) {
	up := startUpstream(t, nil, nil)
	e := newEnv(t, newResolver("api.example.test", "127.0.0.1"), Config{Limits: Limits{BudgetEvents: 4}})
	e.setPolicy(t, Policy{Rules: []Rule{{ID: "api", Action: Allow, Hosts: []string{"api.example.test"}, Ports: []int{up.port}}, loopbackRule(up.port)}})
	c := e.client(nil)
	var codes []int
	for range 6 {
		resp, err := c.Get("http://api.example.test:" + itoa(up.port) + "/x")
		if err != nil {
			codes = append(codes, 0)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && ruleOf(resp) != RuleBudget {
			t.Errorf("refusal rule %q", ruleOf(resp))
		}
	}
	// Each request is two events (request, response): two fit in 4.
	if fmt.Sprint(codes) != "[200 200 429 429 429 429]" {
		t.Errorf("answers: %v", codes)
	}
	if n := len(up.requests()); n != 2 {
		t.Errorf("the upstream saw %d requests, want 2", n)
	}
}
