package native

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// rateNet answers every proxy request at once with an empty 200 and
// holds connections that send nothing; idle counts those, and answered
// and named the requests answered and those that came with their
// command's pid.
type rateNet struct{ idle, answered, named atomic.Int64 }

func (n *rateNet) ProxyConn(c net.Conn, pid int) {
	defer c.Close()
	n.idle.Add(1)
	_, err := http.ReadRequest(bufio.NewReader(c))
	n.idle.Add(-1)
	if err != nil {
		_, _ = io.Copy(io.Discard, c)
		return
	}
	n.answered.Add(1)
	if pid > 0 {
		n.named.Add(1)
	}
	_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
}

func (n *rateNet) DNS(context.Context, []byte, int) ([]byte, error) {
	return nil, errors.New("no DNS here")
}

// BenchmarkProxyHandoff: proxy requests one after another, each on a new
// connection, while another command holds 0 or 2000 idle proxy
// connections: hand-offs per second should not fall as connections
// accumulate (the agent's owner lookup used to read every socket and
// descriptor of the sandbox for each). Run with -benchtime=1x.
func BenchmarkProxyHandoff(b *testing.B) {
	for _, idle := range []int{0, 2000} {
		b.Run("idle="+strconv.Itoa(idle), func(b *testing.B) {
			rn := &rateNet{}
			sb := newSandbox(b, func(s *runtime.Spec) {
				withProbe(b)(s)
				s.Network = rn
				setMaxProxyConns(s, idle+500)
				s.Limits.MemoryBytes = 2 << 30
				s.Limits.NoFile = 8192
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if idle > 0 {
				p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/workspace/probe", "proxy-hold", strconv.Itoa(idle), "10m"}})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Signal(syscall.SIGKILL)
				deadline := time.Now().Add(3 * time.Minute)
				for rn.idle.Load() < int64(idle) {
					if time.Now().After(deadline) {
						b.Fatalf("only %d of %d idle connections reached the host", rn.idle.Load(), idle)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			a0, n0 := rn.answered.Load(), rn.named.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res := run(b, sb, runtime.ExecRequest{Argv: []string{"/workspace/probe", "proxy-rate", "5s"}})
				var pr probeResult
				if err := json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &pr); err != nil || !pr.OK {
					b.Fatalf("proxy-rate: %q %q", res.Stdout, res.Stderr)
				}
				b.ReportMetric(float64(pr.N), "handoffs/s")
			}
			if a := rn.answered.Load() - a0; a > 0 {
				b.ReportMetric(100*float64(rn.named.Load()-n0)/float64(a), "%named")
			}
		})
	}
}
