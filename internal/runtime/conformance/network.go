package conformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// recNet is a runtime.Network that answers every proxy request itself
// ("hello from the host") and every DNS query with NXDOMAIN, and records
// which command made each.
type recNet struct {
	mu      sync.Mutex
	conns   []int
	queries []int
	names   []string
}

func (n *recNet) ProxyConn(c net.Conn, pid int) {
	defer c.Close()
	n.mu.Lock()
	n.conns = append(n.conns, pid)
	n.mu.Unlock()
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	body := "hello from the host for " + req.URL.Host
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}

func (n *recNet) DNS(ctx context.Context, q []byte, pid int) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil {
		return nil, err
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return nil, fmt.Errorf("one question expected")
	}
	n.mu.Lock()
	n.queries = append(n.queries, pid)
	n.names = append(n.names, qs[0].Name.String())
	n.mu.Unlock()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RCode: dnsmessage.RCodeNameError, RecursionAvailable: true})
	_ = b.StartQuestions()
	_ = b.Question(qs[0])
	return b.Finish()
}

// testNetwork: with Spec.Network, the sandbox's proxy and DNS server hand
// their connections and queries to it, naming the command that made
// them; without, there is nothing listening.
func testNetwork(t *testing.T, f Factory) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed on the host (scripts/setup.sh installs it)")
	}
	n := &recNet{}
	sb := create(t, f, func(s *runtime.Spec) { s.Network = n })
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := sb.Exec(ctx, runtime.ExecRequest{
		Argv:   []string{"/bin/sh", "-c", "curl -sS --max-time 20 -x http://" + runtime.ProxyAddr + " http://upstream.example.test/x; echo; getent hosts lookup.example.test; echo dns=$?"},
		Stdout: &o, Stderr: &e,
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := o.String()
	if !strings.HasPrefix(out, "hello from the host for upstream.example.test\n") || !strings.HasSuffix(out, "dns=2\n") || st.Code != 0 {
		t.Fatalf("through the sandbox's network: %d %q %q", st.Code, out, e.String())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.conns) != 1 || n.conns[0] != p.PID() {
		t.Errorf("proxy connections by command pid %v, want one by %d", n.conns, p.PID())
	}
	if len(n.queries) == 0 || n.queries[0] != p.PID() || !strings.HasPrefix(n.names[0], "lookup.example.test.") {
		t.Errorf("dns queries %v by %v, want lookup.example.test by %d", n.names, n.queries, p.PID())
	}

	// Without a Network nothing listens: the proxy port is closed.
	plain := create(t, f, nil)
	r := shell(t, plain, "curl -sS --max-time 5 -x http://"+runtime.ProxyAddr+" http://upstream.example.test/ 2>&1; echo rc=$?")
	if !strings.Contains(r.out, "rc=7") {
		t.Errorf("a sandbox without network: %q", r.out)
	}
}
