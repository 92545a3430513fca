package gvisor

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// sinkNet's proxy answers GET /N with N bytes of one repeated chunk: the
// host's side costs a write per chunk and nothing else, so what a
// download costs beyond it is the sandbox's side of the connection. Its
// send buffer is the egress proxy's (egress.DefaultSandboxSendBuffer).
type sinkNet struct {
	chunk  []byte
	sndbuf int
}

func (n sinkNet) ProxyConn(c net.Conn, pid int) {
	defer c.Close()
	if sb, ok := c.(interface{ SetWriteBuffer(int) error }); ok && n.sndbuf > 0 {
		_ = sb.SetWriteBuffer(n.sndbuf)
	}
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		size, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/"))
		if err != nil || size < 0 {
			fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size); err != nil {
			return
		}
		for size > 0 {
			w, err := c.Write(n.chunk[:min(size, len(n.chunk))])
			if err != nil {
				return
			}
			size -= w
		}
	}
}

func (sinkNet) DNS(context.Context, []byte, int) ([]byte, error) {
	return nil, fmt.Errorf("no DNS here")
}

// hostCPU is this process's CPU time, user and system.
func hostCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProxyDownload: curl in the sandbox downloads 64 MiB through
// the sandbox's proxy, on gVisor (the agent relays the connection
// between the sandbox's TCP socket and a unix socket to the host) and,
// as its peer in the same run, on the native backend (the connection
// itself is handed to the host). Per transfer: the wall time, the CPU of
// the sandbox's cgroup (curl, and on gVisor the sentry's netstack and
// the agent's relay) and that of this process (the host's side); each
// round also runs a 1-byte download, whose cost (mostly curl's start)
// the -64MiB- metrics take off. The backends and sizes take turns;
// the metrics are medians, with the load average at the end.
func BenchmarkProxyDownload(b *testing.B) {
	const size = 64 << 20
	bes := benchBackends(b)
	names := []string{"gvisor", "native"}
	type target struct {
		sb runtime.Sandbox
		cg *cgroups.Group
	}
	ts := map[string]target{}
	for _, name := range names {
		spec := hostSpec(b)
		spec.Network = sinkNet{chunk: make([]byte, 256<<10), sndbuf: 128 << 10}
		sb, err := bes[name].Create(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = sb.Destroy(context.Background()) })
		cg, ok := sb.(interface{ Cgroup() *cgroups.Group })
		if !ok {
			b.Fatalf("%s: no cgroup to measure", name)
		}
		ts[name] = target{sb, cg.Cgroup()}
	}
	curl := func(n int) []string {
		return []string{"curl", "-sS", "--fail", "--max-time", "60", "-o", "/dev/null", "-w", "%{size_download}",
			"-x", "http://" + runtime.ProxyAddr, "http://up.example.test/" + strconv.Itoa(n)}
	}
	usage := func(g *cgroups.Group) time.Duration {
		st, err := g.Stats()
		if err != nil {
			b.Fatal(err)
		}
		return time.Duration(st.CPUUsageNS)
	}
	type kind struct {
		name string
		n    int
	}
	var kinds []kind
	for _, name := range names {
		kinds = append(kinds, kind{name, size}, kind{name, 1})
	}
	wall, sbCPU, host := map[kind][]time.Duration{}, map[kind][]time.Duration{}, map[kind][]time.Duration{}
	round := 0
	for b.Loop() {
		for i := range kinds {
			k := kinds[(i+round)%len(kinds)]
			t := ts[k.name]
			c0, h0, start := usage(t.cg), hostCPU(b), time.Now()
			r := run(b, t.sb, runtime.ExecRequest{Argv: curl(k.n)})
			wall[k] = append(wall[k], time.Since(start))
			sbCPU[k] = append(sbCPU[k], usage(t.cg)-c0)
			host[k] = append(host[k], hostCPU(b)-h0)
			if r.Status.Code != 0 || r.Stdout != strconv.Itoa(k.n) {
				b.Fatalf("%s: curl exit %d, %q bytes: %s", k.name, r.Status.Code, r.Stdout, r.Stderr)
			}
		}
		round++
	}
	median := func(d []time.Duration) float64 {
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	for _, name := range names {
		big, one := kind{name, size}, kind{name, 1}
		b.ReportMetric(median(wall[big])-median(wall[one]), name+"-64MiB-wall-ms")
		b.ReportMetric(median(sbCPU[big])-median(sbCPU[one]), name+"-64MiB-sandbox-cpu-ms")
		b.ReportMetric(median(host[big])-median(host[one]), name+"-64MiB-host-cpu-ms")
		b.ReportMetric(median(sbCPU[one]), name+"-1B-sandbox-cpu-ms")
	}
	b.ReportMetric(loadAverage(b), "load1")
}

// loadAverage is the machine's one-minute load average.
func loadAverage(b testing.TB) float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	f, err := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	return f
}
