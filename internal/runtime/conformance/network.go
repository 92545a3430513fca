package conformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
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

// capNet holds every proxy connection open until the sandbox closes it
// and counts the most held at once and the refusals it is told of.
type capNet struct {
	mu             sync.Mutex
	open, most     int
	refused        int
	refusedReasons []string
}

func (n *capNet) ProxyConn(c net.Conn, pid int) {
	defer c.Close()
	n.mu.Lock()
	n.open++
	n.most = max(n.most, n.open)
	n.mu.Unlock()
	_, _ = io.Copy(io.Discard, c)
	n.mu.Lock()
	n.open--
	n.mu.Unlock()
}

func (n *capNet) DNS(context.Context, []byte, int) ([]byte, error) {
	return nil, fmt.Errorf("no DNS here")
}

func (n *capNet) ProxyRefused(pid int, reason string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refused++
	if len(n.refusedReasons) < 4 {
		n.refusedReasons = append(n.refusedReasons, reason)
	}
}

// proxyCapScript opens 60 idle proxy connections from one shell and
// counts those answered with a 503, reading again the ones that have not
// answered until $1 have been refused or 45 s have passed (a loaded or
// emulated machine, such as the cgroup v2 test VM, answers late). A read
// that times out keeps what it read of a line (bash saves partial input),
// so a status line that arrives in pieces is joined, not lost.
const proxyCapScript = `n=0; r=0; fds=""; declare -A part
for i in $(seq 60); do exec {fd}<>/dev/tcp/127.0.0.1/3128 || break; fds="$fds $fd"; n=$((n+1)); done
end=$((SECONDS+45))
while [ "$r" -lt "$1" ] && [ "$SECONDS" -lt "$end" ]; do
  left=""
  for fd in $fds; do
    line=""
    if IFS= read -t 0.1 -r line <&$fd; then
      case "${part[$fd]}$line" in "HTTP/1.1 503"*) r=$((r+1));; esac
    else part[$fd]="${part[$fd]}$line"; left="$left $fd"; fi
  done
  fds=$left
done
echo "opened=$n refused=$r"`

// testProxyConnCap: a sandbox holds at most Spec.MaxProxyConns proxy
// connections open; the rest are refused with a 503, reported to the
// Network for the record, and the sandbox goes on working.
func testProxyConnCap(t *testing.T, f Factory) {
	const capConns = 20
	n := &capNet{}
	sb := create(t, f, func(s *runtime.Spec) { s.Network = n; s.MaxProxyConns = capConns })
	want := strconv.Itoa(60 - capConns)
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"bash", "-c", proxyCapScript, "bash", want}, Timeout: 70 * time.Second})
	var opened, refused int
	if _, err := fmt.Sscanf(strings.TrimSpace(r.out), "opened=%d refused=%d", &opened, &refused); err != nil || opened != 60 {
		t.Fatalf("the flood did not run: %q %q (%v)", r.out, r.err, err)
	}
	n.mu.Lock()
	most, reported, reasons := n.most, n.refused, n.refusedReasons
	n.mu.Unlock()
	if most > capConns {
		t.Errorf("the host served %d proxy connections at once, beyond the cap of %d", most, capConns)
	}
	if refused < opened-capConns {
		t.Errorf("%d of %d connections were refused with a 503, want at least %d", refused, opened, opened-capConns)
	}
	if reported < opened-capConns || len(reasons) == 0 || !strings.Contains(reasons[0], "open proxy connections") {
		t.Errorf("%d refusals reported (%q), want at least %d that say why", reported, reasons, opened-capConns)
	}
	if r := shell(t, sb, "echo alive"); strings.TrimSpace(r.out) != "alive" {
		t.Errorf("exec after the flood: %q", r.out)
	}
}
