package sandboxnet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/quotas"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// projectQuota refuses the projects in full and keeps what each moved.
type projectQuota struct {
	mu    sync.Mutex
	full  map[string]bool
	moved map[string]int64
}

func (q *projectQuota) AdmitEgress(_ context.Context, p string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.full[p] {
		return fmt.Errorf("project %s: quota egress_bytes_per_day", p)
	}
	return nil
}

func (q *projectQuota) EgressMoved(p string, n int64) {
	q.mu.Lock()
	q.moved[p] += n
	q.mu.Unlock()
}

// A sandbox's egress bytes are its project's: the service's quota asks
// and counts by the sandbox's project, and a sandbox whose project is not
// known (not live) is refused rather than counted nowhere.
func TestEgressQuotaIsTheSandboxsProjects(t *testing.T) {
	q := &projectQuota{full: map[string]bool{}, moved: map[string]int64{}}
	e := onFake(t, Config{Egress: &egress.Config{}, Quota: q}, allowPlain)
	sb, err := e.m.Create(context.Background(), sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	eq := egressQuota{n: e.n, q: q}
	if why := eq.AdmitEgress(sb.ID); why != "" {
		t.Fatalf("refused under the quota: %s", why)
	}
	eq.EgressMoved(sb.ID, 42)
	if q.moved["default"] != 42 || len(q.moved) != 1 {
		t.Errorf("moved: %v, want 42 bytes of project default", q.moved)
	}
	q.full["default"] = true
	if why := eq.AdmitEgress(sb.ID); !strings.Contains(why, "egress_bytes_per_day") {
		t.Errorf("a full project's sandbox: %q", why)
	}
	if why := eq.AdmitEgress("sb-not-live"); why == "" {
		t.Error("a sandbox that is not live was admitted")
	}
	eq.EgressMoved("sb-not-live", 7)
	if len(q.moved) != 1 {
		t.Errorf("bytes of no project were counted: %v", q.moved)
	}
}

// The whole path, on loopback: a project's egress quota in the quotas
// module, the sandbox's tunnels through its network. A tunnel that moves
// past the quota runs to its end; the next CONNECT is refused (429) and
// the refusal is on the audit record, naming the quota.
func TestEgressQuotaRefusesTheProjectsNextConnection(t *testing.T) {
	ctx := context.Background()
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
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	dest := ln.Addr().String()
	_, port, _ := net.SplitHostPort(dest)
	pol := "egress:\n  rules:\n    - {id: lo, action: allow, cidrs: [127.0.0.1/32], ports: [" + port + "], opaque: true}\n"
	q := quotas.New(quotas.Config{Defaults: quotas.Limits{EgressBytesPerDay: 1000}})
	e := onFake(t, Config{Egress: &egress.Config{}, Quota: q}, pol, q)
	sb, err := e.m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	connect := func() (*http.Response, net.Conn) {
		in, out := net.Pipe()
		go e.be.net(t, sb.ID).ProxyConn(out, 0)
		_ = in.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(in, "CONNECT "+dest+" HTTP/1.1\r\nHost: "+dest+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(in), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp, in
	}
	resp, c := connect()
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT under the quota: %d", resp.StatusCode)
	}
	payload := strings.Repeat("z", 800) // 800 up and 800 down: past 1000
	go io.WriteString(c, payload)
	if _, err := io.ReadFull(c, make([]byte, len(payload))); err != nil {
		t.Fatalf("the tunnel past the quota was cut before its end: %v", err)
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rep, err := q.Usage(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		if rep.Usage.EgressBytesLastDay >= 1600 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("egress bytes counted: %d, want 1600", rep.Usage.EgressBytesLastDay)
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, _ = connect()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("CONNECT past the quota: %d", resp.StatusCode)
	}
	var refused bool
	for _, ev := range e.events(t, sb.ID, "egress.connect") {
		p := string(ev.Payload)
		refused = refused || (strings.Contains(p, `"rule":"quota"`) && strings.Contains(p, "egress_bytes_per_day"))
	}
	if !refused {
		t.Error("no egress.connect refusal naming the quota on the audit record")
	}
}
