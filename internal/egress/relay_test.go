package egress

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
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

// countingConn counts what the client reads.
type countingConn struct {
	net.Conn
	n int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n += int64(n)
	return n, err
}

// TestForwardBigBodiesIntact: plain HTTP responses on one keep-alive
// connection, a Content-Length body of more than 64 MiB (which goes
// socket to socket), a chunked one, the head of the big one and a small
// one, arrive byte for byte and in order; the response events count
// exactly the bytes the client read.
func TestForwardBigBodiesIntact(t *testing.T) {
	up := startUpstream(t, nil, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", strconv.Itoa(bigTransfer))
			io.Copy(w, stream(4, bigTransfer))
		case "/chunked":
			src := stream(5, 300<<10)
			for {
				if _, err := io.CopyN(w, src, 40<<10); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		case "/small":
			w.Header().Set("Content-Length", "1000")
			io.Copy(w, stream(6, 1000))
		}
	})
	e := newEnv(t, newResolver("api.example.test", "127.0.0.1"), Config{})
	e.setPolicy(t, Policy{Rules: []Rule{
		{ID: "api", Action: Allow, Hosts: []string{"api.example.test"}, Ports: []int{up.port}},
		loopbackRule(up.port),
	}})
	raw, err := net.Dial("tcp", e.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(2 * time.Minute))
	c := &countingConn{Conn: raw}
	br := bufio.NewReader(c)
	base := "http://api.example.test:" + itoa(up.port)
	for _, tc := range []struct {
		method, path string
		seed         byte
		n            int64
	}{
		{"GET", "/big", 4, bigTransfer},
		{"GET", "/chunked", 5, 300 << 10},
		{"HEAD", "/big", 0, 0},
		{"GET", "/small", 6, 1000},
	} {
		last := tc.path == "/small"
		fmt.Fprintf(c, "%s %s%s HTTP/1.1\r\nHost: api.example.test:%d\r\n", tc.method, base, tc.path, up.port)
		if last {
			io.WriteString(c, "Connection: close\r\n")
		}
		io.WriteString(c, "\r\n")
		resp, err := http.ReadResponse(br, &http.Request{Method: tc.method})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		v := newVerifier(tc.seed)
		io.Copy(v, resp.Body)
		resp.Body.Close()
		if tc.n > 0 {
			v.check(t, tc.method+" "+tc.path, tc.n)
		} else if v.n != 0 || resp.ContentLength != bigTransfer {
			t.Errorf("HEAD: %d body bytes, Content-Length %d", v.n, resp.ContentLength)
		}
	}
	io.Copy(io.Discard, br) // the proxy closes after the last
	var down int64
	for _, ev := range e.rec.find(t, KindResponse, 4) {
		down += ev.BytesDown
		if ev.Status != 200 || ev.Error != "" {
			t.Errorf("response event: %+v", ev)
		}
	}
	if down != c.n {
		t.Errorf("response events count %d bytes down, the client read %d", down, c.n)
	}
	if got := e.dial.count(); got != 1 {
		t.Errorf("dialed %d times for four keep-alive requests, want 1", got)
	}
}
