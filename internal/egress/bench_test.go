package egress

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// sourceServer sends as many bytes as each client asks for (an 8-byte
// count), or echoes single bytes when asked for 0.
func sourceServer(b testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	chunk := make([]byte, 256<<10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var hdr [8]byte
				if _, err := io.ReadFull(c, hdr[:]); err != nil {
					return
				}
				n := binary.BigEndian.Uint64(hdr[:])
				if n == 0 {
					io.Copy(c, c)
					return
				}
				for n > 0 {
					w := min(n, uint64(len(chunk)))
					if _, err := c.Write(chunk[:w]); err != nil {
						return
					}
					n -= w
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func dialThrough(b testing.TB, e *env, target string) net.Conn {
	c, err := net.Dial("tcp", e.proxy)
	if err != nil {
		b.Fatal(err)
	}
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	// Read exactly the 39-byte answer, so no tunnel byte is buffered.
	answer := make([]byte, len("HTTP/1.1 200 Connection Established\r\n\r\n"))
	if _, err := io.ReadFull(c, answer); err != nil || string(answer[9:12]) != "200" {
		b.Fatalf("CONNECT: %q %v", answer, err)
	}
	return c
}

const benchBytes = 64 << 20

func download(b *testing.B, c net.Conn, buf []byte) {
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], benchBytes)
	c.Write(hdr[:])
	got := 0
	for got < benchBytes {
		n, err := c.Read(buf)
		got += n
		if err != nil {
			break
		}
	}
	if got != benchBytes {
		b.Fatalf("got %d bytes", got)
	}
	c.Close()
}

// BenchmarkTunnelThroughput: 64 MiB through a CONNECT tunnel (relayed with
// splice between the two TCP connections) against the same transfer
// straight over loopback, and through socat, a plain TCP relay with no
// policy at all (the peer: what any userspace hop costs on this machine),
// in turn in the same run: the medians of each and their ratios to direct
// (target: proxy >= 0.8x direct). Taking turns keeps a busy moment of the
// machine from landing on one side only.
func BenchmarkTunnelThroughput(b *testing.B) {
	port := sourceServer(b)
	e := newEnv(b, newResolver("git.example.test", "127.0.0.1"), Config{})
	e.setPolicy(b, opaquePolicy(port))
	target := "git.example.test:" + itoa(port)
	relay := socatRelay(b, port)
	buf := make([]byte, 256<<10)
	var direct, proxy, socat []time.Duration
	dial := func(addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	b.SetBytes(2 * benchBytes)
	for b.Loop() {
		start := time.Now()
		download(b, dial("127.0.0.1:"+itoa(port)), buf)
		direct = append(direct, time.Since(start))
		start = time.Now()
		download(b, dialThrough(b, e, target), buf)
		proxy = append(proxy, time.Since(start))
		if relay != "" {
			b.StopTimer() // the peer's transfers are not the benchmark's time
			start = time.Now()
			download(b, dial(relay), buf)
			socat = append(socat, time.Since(start))
			b.StartTimer()
		}
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	rate := func(d time.Duration) float64 { return float64(benchBytes) / d.Seconds() / 1e9 }
	dm, pm := median(direct), median(proxy)
	b.ReportMetric(rate(dm), "direct-GB/s")
	b.ReportMetric(rate(pm), "proxy-GB/s")
	b.ReportMetric(rate(pm)/rate(dm), "ratio")
	if relay != "" {
		sm := median(socat)
		b.ReportMetric(rate(sm), "socat-GB/s")
		b.ReportMetric(rate(sm)/rate(dm), "socat-ratio")
	}
}

// socatRelay starts socat relaying a loopback port to port, with a
// buffer as large as the benchmark's reads, and returns its address; ""
// (and a log line) without socat. Each connection is relayed by a child
// that socat forks for it.
func socatRelay(b *testing.B, port int) string {
	path, err := exec.LookPath("socat")
	if err != nil {
		b.Log("no socat: the benchmark runs without its peer (scripts/setup.sh installs it)")
		return ""
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // socat binds it again (reuseaddr); nothing else here takes ports
	cmd := exec.Command(path, "-b", itoa(256<<10), "TCP-LISTEN:"+addr[strings.LastIndexByte(addr, ':')+1:]+",bind=127.0.0.1,reuseaddr,fork", "TCP:127.0.0.1:"+itoa(port))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			b.Fatalf("socat did not listen on %s: %v", addr, err)
		}
	}
}

func reportLatency(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkConnectLatency: time to a working connection (first byte
// echoed) with CONNECT through the proxy (decision, resolution, record,
// dial, 200) against a direct dial.
func BenchmarkConnectLatency(b *testing.B) {
	port := sourceServer(b)
	e := newEnv(b, newResolver("git.example.test", "127.0.0.1"), Config{})
	e.setPolicy(b, opaquePolicy(port))
	target := "git.example.test:" + itoa(port)
	ping := func(b *testing.B, c net.Conn) {
		var msg [9]byte // a count of 0 (echo mode) and one byte
		c.Write(msg[:])
		if _, err := io.ReadFull(c, msg[:1]); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.Run("direct", func(b *testing.B) {
		var d []time.Duration
		for b.Loop() {
			start := time.Now()
			c, err := net.Dial("tcp", "127.0.0.1:"+itoa(port))
			if err != nil {
				b.Fatal(err)
			}
			ping(b, c)
			d = append(d, time.Since(start))
		}
		reportLatency(b, d)
	})
	b.Run("proxy", func(b *testing.B) {
		var d []time.Duration
		for b.Loop() {
			start := time.Now()
			ping(b, dialThrough(b, e, target))
			d = append(d, time.Since(start))
		}
		reportLatency(b, d)
	})
}

// BenchmarkConnectTLSLatency: a TLS handshake and one request, direct and
// through a tunnel whose ClientHello the proxy reads for its SNI.
func BenchmarkConnectTLSLatency(b *testing.B) {
	ca := newTestCA(b)
	cert := ca.cert(b, "api.example.test")
	up := startUpstream(b, &cert, func(w http.ResponseWriter, r *http.Request) {})
	e := newEnv(b, newResolver("api.example.test", "127.0.0.1"), Config{})
	e.setPolicy(b, Policy{Rules: []Rule{{ID: "api", Action: Allow, Hosts: []string{"api.example.test"}, Ports: []int{up.port}}, loopbackRule(up.port)}})
	cfg := &tls.Config{ServerName: "api.example.test", RootCAs: ca.pool}
	round := func(b *testing.B, c net.Conn) {
		tc := tls.Client(c, cfg)
		io.WriteString(tc, "GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err)
		}
		tc.Close()
	}
	b.Run("direct", func(b *testing.B) {
		var d []time.Duration
		for b.Loop() {
			start := time.Now()
			c, err := net.Dial("tcp", "127.0.0.1:"+itoa(up.port))
			if err != nil {
				b.Fatal(err)
			}
			round(b, c)
			d = append(d, time.Since(start))
		}
		reportLatency(b, d)
	})
	b.Run("proxy", func(b *testing.B) {
		var d []time.Duration
		for b.Loop() {
			start := time.Now()
			round(b, dialThrough(b, e, "api.example.test:"+itoa(up.port)))
			d = append(d, time.Since(start))
		}
		reportLatency(b, d)
	})
}
