package egress

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bigTransfer is more than 64 MiB, past any splice, pipe or socket
// buffer size, and not a multiple of a page.
const bigTransfer = 72<<20 + 4093

// stream is the n pseudo-random bytes of seed.
func stream(seed byte, n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{seed, 7}), n)
}

// verifier checks what is written to it against stream(seed, ·), byte
// for byte, and remembers where the first difference was.
type verifier struct {
	want     io.Reader
	n        int64
	mismatch int64 // -1: none
	buf      []byte
}

func newVerifier(seed byte) *verifier {
	return &verifier{want: rand.NewChaCha8([32]byte{seed, 7}), mismatch: -1}
}

func (v *verifier) Write(p []byte) (int, error) {
	if cap(v.buf) < len(p) {
		v.buf = make([]byte, len(p))
	}
	w := v.buf[:len(p)]
	io.ReadFull(v.want, w)
	if v.mismatch < 0 && !bytes.Equal(p, w) {
		for i := range p {
			if p[i] != w[i] {
				v.mismatch = v.n + int64(i)
				break
			}
		}
	}
	v.n += int64(len(p))
	return len(p), nil
}

func (v *verifier) check(t *testing.T, what string, n int64) {
	t.Helper()
	if v.n != n || v.mismatch >= 0 {
		t.Errorf("%s: %d bytes arrived (want %d), first wrong byte at %d (-1: none)", what, v.n, n, v.mismatch)
	}
}

// duplexServer accepts one connection at a time and checks the stream
// it receives (seed 1) while sending its own (seed 2), then half-closes.
// With upFirst it sends only once the client's stream has ended.
func duplexServer(t *testing.T, upFirst bool) (port int, got chan *verifier) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got = make(chan *verifier, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		v := newVerifier(1)
		received := make(chan struct{})
		go func() { io.Copy(v, c); close(received) }()
		if upFirst {
			<-received
		}
		io.Copy(c, stream(2, bigTransfer))
		c.(*net.TCPConn).CloseWrite()
		<-received
		got <- v
	}()
	return ln.Addr().(*net.TCPAddr).Port, got
}

// unixClient serves the proxy on one end of a unix socket pair and
// returns the other, as the gVisor backend hands the daemon its
// sandbox's connections.
func unixClient(t *testing.T, e *env) net.Conn {
	c, _ := unixClientPair(t, e)
	return c
}

// unixClientPair is unixClient that also returns the proxy's end.
func unixClientPair(t *testing.T, e *env) (client, proxySide net.Conn) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	go e.svc.ServeProxyConn(context.Background(), conns[0], e.who)
	return conns[1], conns[0]
}

func sendBuffer(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var serr error
	rc.Control(func(fd uintptr) { n, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF) })
	if serr != nil {
		t.Fatal(serr)
	}
	return n
}

// TestSandboxSendBuffer: the proxy's side of a sandbox's connection
// gets the configured send buffer (which the kernel doubles) once the
// connection is admitted, and keeps the kernel's when told to.
func TestSandboxSendBuffer(t *testing.T) {
	port := echoServer(t)
	for _, tc := range []struct {
		name string
		cfg  int
		want func(kernel int) int
	}{
		{"default", 0, func(int) int { return 2 * DefaultSandboxSendBuffer }},
		{"set", 48 << 10, func(int) int { return 2 * 48 << 10 }},
		{"kernel's", -1, func(kernel int) int { return kernel }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newResolver("git.example.test", "127.0.0.1"), Config{SandboxSendBuffer: tc.cfg})
			e.setPolicy(t, opaquePolicy(port))
			c, mine := unixClientPair(t, e)
			defer c.Close()
			kernel := sendBuffer(t, c) // a socket nobody set
			connectOn(t, c, "git.example.test:"+itoa(port))
			if got, want := sendBuffer(t, mine), tc.want(kernel); got != want {
				t.Errorf("SO_SNDBUF %d, want %d", got, want)
			}
		})
	}
}

// TestTunnelBigTransfersIntact: more than 64 MiB of random bytes each
// way through an opaque tunnel arrive byte for byte, with the client's
// side a TCP connection (native backend) or a unix socket (gVisor's
// hand-off); both half-closes pass through (the upstream sees the end of
// the client's stream while still sending, and the reverse), and the
// close event counts every byte.
func TestTunnelBigTransfersIntact(t *testing.T) {
	for _, side := range []string{"tcp", "unix"} {
		for _, upFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/upFirst=%v", side, upFirst), func(t *testing.T) {
				port, got := duplexServer(t, upFirst)
				e := newEnv(t, newResolver("git.example.test", "127.0.0.1"), Config{})
				e.setPolicy(t, opaquePolicy(port))
				var c net.Conn
				if side == "tcp" {
					c = dialThrough(t, e, "git.example.test:"+itoa(port))
				} else {
					c = unixClient(t, e)
					connectOn(t, c, "git.example.test:"+itoa(port))
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(2 * time.Minute))
				down := newVerifier(2)
				var wg sync.WaitGroup
				wg.Go(func() { io.Copy(down, c) })
				if _, err := io.Copy(c, stream(1, bigTransfer)); err != nil {
					t.Fatal(err)
				}
				c.(interface{ CloseWrite() error }).CloseWrite()
				wg.Wait()
				down.check(t, "down", bigTransfer)
				(<-got).check(t, "up", bigTransfer)
				ev := e.rec.find(t, KindClose, 1)[0]
				if ev.BytesUp != bigTransfer || ev.BytesDown != bigTransfer || ev.Error != "" {
					t.Errorf("close event: up %d down %d (want %d each), error %q", ev.BytesUp, ev.BytesDown, int64(bigTransfer), ev.Error)
				}
			})
		}
	}
}

// connectOn asks for a tunnel to target on c and reads exactly the
// answer, as dialThrough does.
func connectOn(t testing.TB, c net.Conn, target string) {
	t.Helper()
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	answer := make([]byte, len("HTTP/1.1 200 Connection Established\r\n\r\n"))
	if _, err := io.ReadFull(c, answer); err != nil || string(answer[9:12]) != "200" {
		t.Fatalf("CONNECT: %q %v", answer, err)
	}
}
