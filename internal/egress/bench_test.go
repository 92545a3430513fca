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
// straight over loopback, taking turns in the same run: the medians of
// each and their ratio (target: proxy >= 0.8x direct). Taking turns keeps
// a busy moment of the machine from landing on one side only.
//
// The peer, measured the same way against its own direct transfers: socat,
// a plain TCP relay with no policy at all, one process per transfer (what
// any userspace hop costs on this machine). It has a sub-benchmark of its
// own because a direct transfer right after socat's process is slower,
// which would flatter the proxy's ratio.
func BenchmarkTunnelThroughput(b *testing.B) {
	port := sourceServer(b)
	e := newEnv(b, newResolver("git.example.test", "127.0.0.1"), Config{})
	e.setPolicy(b, opaquePolicy(port))
	target := "git.example.test:" + itoa(port)
	buf := make([]byte, 256<<10)
	direct := func() time.Duration {
		start := time.Now()
		c, err := net.Dial("tcp", "127.0.0.1:"+itoa(port))
		if err != nil {
			b.Fatal(err)
		}
		download(b, c, buf)
		return time.Since(start)
	}
	compare := func(b *testing.B, name string, via func() time.Duration) {
		var d, v []time.Duration
		b.SetBytes(2 * benchBytes)
		for b.Loop() {
			d = append(d, direct())
			v = append(v, via())
		}
		median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
		rate := func(d time.Duration) float64 { return float64(benchBytes) / d.Seconds() / 1e9 }
		b.ReportMetric(rate(median(d)), "direct-GB/s")
		b.ReportMetric(rate(median(v)), name+"-GB/s")
		b.ReportMetric(rate(median(v))/rate(median(d)), "ratio")
	}
	b.Run("proxy", func(b *testing.B) {
		compare(b, "proxy", func() time.Duration {
			start := time.Now()
			download(b, dialThrough(b, e, target), buf)
			return time.Since(start)
		})
	})
	b.Run("socat", func(b *testing.B) {
		socat, err := exec.LookPath("socat")
		if err != nil {
			b.Skip("no socat (scripts/setup.sh installs it)")
		}
		compare(b, "socat", func() time.Duration { return socatOnce(b, socat, port, buf) })
	})
}

// socatOnce relays one transfer through a socat that serves a single
// connection (with a buffer as large as the benchmark's reads) and
// returns how long the transfer took from its dial. socat has exited
// before it returns, so none of its work overlaps the next transfers.
func socatOnce(b *testing.B, socat string, port int, buf []byte) time.Duration {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // socat binds it again (reuseaddr); nothing else here takes ports
	cmd := exec.Command(socat, "-b", itoa(256<<10), "TCP-LISTEN:"+addr[strings.LastIndexByte(addr, ':')+1:]+",bind=127.0.0.1,reuseaddr", "TCP:127.0.0.1:"+itoa(port))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	// Refused until socat listens; the first connection is the transfer.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Microsecond) {
		start := time.Now()
		c, err := net.Dial("tcp", addr)
		if err == nil {
			download(b, c, buf)
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
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
