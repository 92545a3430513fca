package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/testroot"
)

// TestPrivateRangeInTestNetns puts a fake internal service in a network
// namespace this test creates, on a private address it picks (one no
// route of the host uses), and checks that an allowed name resolving
// there is refused until that exact address is allowed, and then reached
// over a real interface. No other address is ever dialed.
func TestPrivateRangeInTestNetns(t *testing.T) {
	testroot.Need(t, "to create a network namespace and a veth pair")
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2 (ip)")
	}
	hostAddr, nsAddr := pickFreeSubnet(t)
	ns := fmt.Sprintf("airlock-egress-%d", os.Getpid())
	hostIf, nsIf := fmt.Sprintf("aleh%d", os.Getpid()%100000), fmt.Sprintf("alen%d", os.Getpid()%100000)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip("link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	t.Cleanup(func() { exec.Command("ip", "link", "del", hostIf).Run() })
	ip("link", "set", nsIf, "netns", ns)
	ip("addr", "add", hostAddr.String()+"/30", "dev", hostIf)
	ip("link", "set", hostIf, "up")
	ip("-n", ns, "addr", "add", nsAddr.String()+"/30", "dev", nsIf)
	ip("-n", ns, "link", "set", nsIf, "up")

	ln := listenInNetns(t, ns, netip.AddrPortFrom(nsAddr, 8080).String())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "internal service")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	e := newEnv(t, newResolver("internal.example.test", nsAddr.String()), Config{})
	e.dial.allowDial(nsAddr)
	name := Rule{ID: "internal", Action: Allow, Category: Internal, Hosts: []string{"internal.example.test"}, Ports: []int{8080}}
	get := func() (*http.Response, string) {
		resp, _, _ := e.send(t, "GET http://internal.example.test:8080/ HTTP/1.1\r\nHost: internal.example.test:8080\r\nConnection: close\r\n\r\n")
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	e.setPolicy(t, Policy{Grant: []Category{Internal}, Rules: []Rule{name,
		{ID: "too-wide", Action: Allow, Category: Internal, CIDRs: []string{"0.0.0.0/0"}, Ports: []int{8080}}}})
	if resp, _ := get(); resp.StatusCode != 403 || ruleOf(resp) != "guard-private" {
		t.Errorf("private address without its range: %d %s", resp.StatusCode, ruleOf(resp))
	}
	if e.dial.count() != 0 {
		t.Fatalf("dialed before the range was allowed")
	}
	e.setPolicy(t, Policy{Grant: []Category{Internal}, Rules: []Rule{name,
		{ID: "svc", Action: Allow, Category: Internal, CIDRs: []string{nsAddr.String() + "/32"}, Ports: []int{8080}}}})
	resp, body := get()
	if resp.StatusCode != 200 || body != "internal service" {
		t.Errorf("with the exact range: %d %q", resp.StatusCode, body)
	}
	if ev := e.rec.find(t, KindResponse, 1)[0]; ev.Addr != nsAddr || ev.Status != 200 {
		t.Errorf("response event: %+v", ev)
	}
}

// pickFreeSubnet returns two addresses of a private /30 that no address
// or route of the host overlaps.
func pickFreeSubnet(t *testing.T) (netip.Addr, netip.Addr) {
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		t.Skipf("ip route: %v", err)
	}
	var used []netip.Prefix
	for _, f := range strings.Fields(string(out)) {
		if p, err := netip.ParsePrefix(f); err == nil {
			used = append(used, p)
		} else if a, err := netip.ParseAddr(f); err == nil {
			used = append(used, netip.PrefixFrom(a, 32))
		}
	}
	for _, cand := range []string{"10.254.213.0/30", "10.253.77.0/30", "172.31.254.248/30", "192.168.254.248/30"} {
		p := netip.MustParsePrefix(cand)
		free := true
		for _, u := range used {
			if u.Overlaps(p) && u.Bits() > 0 {
				free = false
			}
		}
		if free {
			a := p.Addr().Next()
			return a, a.Next()
		}
	}
	t.Skip("no free private /30 for the test namespace")
	return netip.Addr{}, netip.Addr{}
}

// listenInNetns opens a listener inside the named namespace from a thread
// that never returns to the Go scheduler's pool (it exits with its
// goroutine, locked).
func listenInNetns(t *testing.T, ns, addr string) net.Listener {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: err}
			return
		}
		ln, err := net.Listen("tcp", addr)
		ch <- result{ln, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("listen in %s: %v", ns, r.err)
	}
	t.Cleanup(func() { r.ln.Close() })
	return r.ln
}
