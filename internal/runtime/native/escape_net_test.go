package native

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The sandbox's network namespace has only loopback: no interface, no
// route, nothing of the host's.
func TestEscapeNetInterfaces(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, withProbe(t))
	pr := mustProbe(t, sb, "read", "/proc/net/dev")
	if !pr.OK {
		t.Fatalf("read /proc/net/dev: %s", pr)
	}
	var ifaces []string
	for _, l := range strings.Split(pr.Detail, "\n")[2:] {
		if name, _, ok := strings.Cut(l, ":"); ok {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	if len(ifaces) != 1 || ifaces[0] != "lo" {
		t.Errorf("interfaces inside: want only lo, got %q", ifaces)
	}
	// no IPv4 route at all (the header line only)
	if pr := mustProbe(t, sb, "read", "/proc/net/route"); pr.OK && strings.Count(strings.TrimSpace(pr.Detail), "\n") > 0 {
		t.Errorf("routes inside: %q", pr.Detail)
	}
}

// A TCP service on the host's loopback is not the sandbox's loopback.
func TestEscapeNetHostLoopback(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go serveSecret(ln, &accepted, "host loopback secret")
	addr := ln.Addr().String()
	c, err := net.DialTimeout("tcp4", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("the host cannot reach its own listener: %v", err)
	}
	c.Close()
	waitCount(t, &accepted, 1)

	sb := escSandbox(t, withProbe(t))
	pr := mustProbe(t, sb, "tcp-connect", addr)
	if pr.OK || strings.Contains(pr.Detail, "secret") {
		t.Errorf("ESCAPE: host loopback service reached from inside: %s", pr)
	}
	assertDenied(t, pr, "ECONNREFUSED")
	time.Sleep(100 * time.Millisecond)
	if n := accepted.Load(); n != 1 {
		t.Errorf("ESCAPE: the host listener accepted %d connections from the sandbox", n-1)
	}
}

// A fake upstream host in a network namespace of the test's own, reachable
// from the host through a veth pair, is unreachable from the sandbox by
// TCP, UDP, ICMP and raw sockets: there is no route out.
func TestEscapeNetFakeUpstream(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	up := newFakeUpstream(t)

	// Prove the upstream is real: the host reaches it.
	c, err := net.DialTimeout("tcp4", up.tcpAddr, 2*time.Second)
	if err != nil {
		t.Fatalf("the host cannot reach the fake upstream %s: %v", up.tcpAddr, err)
	}
	got, _ := io.ReadAll(c)
	c.Close()
	if string(got) != "fake upstream secret" {
		t.Fatalf("fake upstream answered %q", got)
	}
	waitCount(t, &up.accepted, 1)
	uc, err := net.Dial("udp4", up.udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = uc.Write([]byte("host"))
	uc.Close()
	waitCount(t, &up.datagrams, 1)

	sb := escSandbox(t, withProbe(t))
	unreachable := []string{"ENETUNREACH", "EHOSTUNREACH"}
	pr := mustProbe(t, sb, "tcp-connect", up.tcpAddr)
	if strings.Contains(pr.Detail, "secret") {
		t.Errorf("ESCAPE: read from the upstream: %s", pr)
	}
	assertDenied(t, pr, unreachable...)
	assertDenied(t, mustProbe(t, sb, "udp-send", up.udpAddr), unreachable...)
	// unprivileged ICMP (ping sockets): not allowed in the sandbox's
	// namespace, and there is no route anyway
	assertDenied(t, mustProbe(t, sb, "ping", up.ip), append(unreachable, "EACCES", "EPERM")...)
	for _, c := range []string{"socket-raw", "socket-raw6", "socket-raw-tcp", "socket-packet", "socket-inet-packet"} {
		assertDenied(t, mustProbe(t, sb, c), errPerm...)
	}
	// Through the tools too (curl may be absent; bash's /dev/tcp is not).
	r := sh(t, sb, `bash -c 'exec 3<>/dev/tcp/`+up.ip+`/`+up.tcpPort+` && cat <&3' 2>&1; true`)
	if strings.Contains(r.Stdout, "secret") {
		t.Errorf("ESCAPE: bash /dev/tcp reached the upstream: %q", r.Stdout)
	}

	time.Sleep(200 * time.Millisecond)
	if n := up.accepted.Load(); n != 1 {
		t.Errorf("ESCAPE: the upstream accepted %d TCP connections from the sandbox", n-1)
	}
	if n := up.datagrams.Load(); n != 1 {
		t.Errorf("ESCAPE: the upstream received %d datagrams from the sandbox", n-1)
	}
}

type fakeUpstream struct {
	ip                string // the upstream's address, 10.213.x.2
	tcpAddr, udpAddr  string
	tcpPort           string
	accepted          atomic.Int64
	datagrams         atomic.Int64
	netns, vethHostNm string
}

// newFakeUpstream creates a network namespace with a veth pair to the
// host (10.213.x.1/30 on the host, 10.213.x.2/30 inside) and serves TCP
// and UDP there. Everything is removed when the test ends.
func newFakeUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	ipBin, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("fake upstream needs iproute2's `ip`: " + err.Error())
	}
	ipCmd := func(args ...string) error {
		out, err := exec.Command(ipBin, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	// a /30 no interface of the host uses
	addrs, _ := exec.Command(ipBin, "-4", "-o", "addr").Output()
	var b [1]byte
	x := -1
	for i := 0; i < 32; i++ {
		_, _ = rand.Read(b[:])
		if !bytes.Contains(addrs, []byte("10.213."+strconv.Itoa(int(b[0]))+".")) {
			x = int(b[0])
			break
		}
	}
	if x < 0 {
		t.Skip("no free 10.213.x.0/30 subnet")
	}
	id := randHex(t, 3)
	up := &fakeUpstream{
		ip:         "10.213." + strconv.Itoa(x) + ".2",
		netns:      "airlock-esc-" + id,
		vethHostNm: "aesc" + id + "h",
	}
	peer := "aesc" + id + "n"
	hostIP := "10.213." + strconv.Itoa(x) + ".1/30"
	t.Cleanup(func() {
		_ = ipCmd("link", "del", up.vethHostNm)
		_ = ipCmd("netns", "del", up.netns)
	})
	for _, args := range [][]string{
		{"netns", "add", up.netns},
		{"link", "add", up.vethHostNm, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", up.netns},
		{"addr", "add", hostIP, "dev", up.vethHostNm},
		{"link", "set", up.vethHostNm, "up"},
		{"-n", up.netns, "addr", "add", up.ip + "/30", "dev", peer},
		{"-n", up.netns, "link", "set", peer, "up"},
		{"-n", up.netns, "link", "set", "lo", "up"},
	} {
		if err := ipCmd(args...); err != nil {
			t.Fatal(err)
		}
	}

	// Sockets are bound to the namespace they are created in: create them
	// on a thread that entered the upstream's namespace. The thread stays
	// locked and dies with its goroutine, so no other goroutine ever runs
	// in that namespace.
	type socks struct {
		ln  net.Listener
		pc  net.PacketConn
		err error
	}
	ch := make(chan socks, 1)
	go func() {
		goruntime.LockOSThread()
		var s socks
		defer func() { ch <- s }()
		fd, err := unix.Open("/run/netns/"+up.netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			s.err = err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			s.err = fmt.Errorf("setns: %w", err)
			return
		}
		if s.ln, s.err = net.Listen("tcp4", up.ip+":0"); s.err != nil {
			return
		}
		s.pc, s.err = net.ListenPacket("udp4", up.ip+":0")
	}()
	s := <-ch
	if s.err != nil {
		t.Fatalf("fake upstream: %v", s.err)
	}
	t.Cleanup(func() { s.ln.Close(); s.pc.Close() })
	up.tcpAddr = s.ln.Addr().String()
	_, up.tcpPort, _ = net.SplitHostPort(up.tcpAddr)
	up.udpAddr = s.pc.LocalAddr().String()
	go serveSecret(s.ln, &up.accepted, "fake upstream secret")
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := s.pc.ReadFrom(buf); err != nil {
				return
			}
			up.datagrams.Add(1)
		}
	}()
	if _, err := os.Stat("/run/netns/" + up.netns); err != nil {
		t.Fatal(err)
	}
	return up
}

func serveSecret(ln net.Listener, n *atomic.Int64, secret string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		n.Add(1)
		_, _ = c.Write([]byte(secret))
		c.Close()
	}
}

func waitCount(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); n.Load() < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("counter at %d, want %d", n.Load(), want)
		}
	}
}
