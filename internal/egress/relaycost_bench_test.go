package egress

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time, user and system, of this process and of its
// children that have been waited for (socat).
func cpuTime(b testing.TB) time.Duration {
	var self, kids syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		b.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids); err != nil {
		b.Fatal(err)
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
}

// BenchmarkRelayCost: the CPU and the time of 64 MiB downloaded
// straight over loopback (direct), through a CONNECT tunnel of a proxy
// that leaves the sandbox side's send buffer to the kernel's autotuning
// (before: the relay as it was), through one with the default
// SandboxSendBuffer (after), and through socat (a plain userspace relay,
// one process per transfer). The source, the reader and the proxy are
// this process, so its CPU time (getrusage, plus socat's once it has
// exited) is what the whole transfer cost the machine; the relay's share
// is the difference to direct. Each round runs the four once, in an
// order that rotates, so none always follows socat's process (a transfer
// right after it is slower) and a busy moment of the machine is shared.
// The metrics are the medians: CPU per transfer, its ratio to direct's,
// and throughput as a ratio to direct's; load1 is the machine's load
// average at the end. The ratios move from run to run far more than the
// relay's own CPU does: direct costs less when its two ends happen to
// share a core (pinned to one, about 14 ms; spread, up to 22), so judge
// them over several runs.
//
// Where the relay's share goes (perf, December 2026): almost all in the
// kernel, in the second TCP connection's processing (splice_to_socket,
// the sandbox side's send with its loopback receive, about a quarter of
// the whole transfer's CPU; tcp_splice_read about an eighth) and in the
// sandbox's copy out of its socket, which reads colder bytes than
// direct's; the relay's own code and the Go runtime are a few percent.
// Smaller splices (64-256 KiB), a pipe topped up between pumps, a
// smaller upstream receive buffer, a 64 or 512 KiB sandbox send buffer
// and TCP_NOTSENT_LOWAT over a larger one all measured the same or
// dearer; so did BIG TCP (512 KiB GSO) on the sandbox side's loopback
// (tried in a network namespace made for the experiment): it halves a
// direct transfer's CPU, but made the spliced relay about 1.7x dearer,
// and a copying relay over it only came back to the spliced relay's
// cost on the default loopback.
func BenchmarkRelayCost(b *testing.B) {
	port := sourceServer(b)
	target := "git.example.test:" + itoa(port)
	before := newEnv(b, newResolver("git.example.test", "127.0.0.1"), Config{SandboxSendBuffer: -1})
	after := newEnv(b, newResolver("git.example.test", "127.0.0.1"), Config{})
	before.setPolicy(b, opaquePolicy(port))
	after.setPolicy(b, opaquePolicy(port))
	socat, err := exec.LookPath("socat")
	if err != nil {
		b.Skip("no socat (scripts/setup.sh installs it)")
	}
	buf := make([]byte, 256<<10)
	closes := map[*env]int{}
	// through downloads via e's proxy and waits until its relay has
	// ended (its close event), so the relay's CPU is all counted.
	through := func(e *env) func() time.Duration {
		return func() time.Duration {
			start := time.Now()
			download(b, dialThrough(b, e, target), buf)
			d := time.Since(start)
			closes[e]++
			e.rec.find(b, KindClose, closes[e])
			return d
		}
	}
	kinds := []struct {
		name string
		run  func() time.Duration
	}{
		{"direct", func() time.Duration {
			start := time.Now()
			c, err := net.Dial("tcp", "127.0.0.1:"+itoa(port))
			if err != nil {
				b.Fatal(err)
			}
			download(b, c, buf)
			return time.Since(start)
		}},
		{"before", through(before)},
		{"after", through(after)},
		{"socat", func() time.Duration { return socatOnce(b, socat, port, buf) }},
	}
	cpu := map[string][]time.Duration{}
	wall := map[string][]time.Duration{}
	round := 0
	b.SetBytes(int64(len(kinds)) * benchBytes)
	for b.Loop() {
		for i := range kinds {
			k := kinds[(i+round)%len(kinds)]
			c0 := cpuTime(b)
			wall[k.name] = append(wall[k.name], k.run())
			cpu[k.name] = append(cpu[k.name], cpuTime(b)-c0)
		}
		round++
	}
	median := func(d []time.Duration) time.Duration { d = slices.Clone(d); slices.Sort(d); return d[len(d)/2] }
	for _, k := range kinds {
		c, w := median(cpu[k.name]), median(wall[k.name])
		b.ReportMetric(float64(c.Microseconds())/1000, k.name+"-cpu-ms")
		if k.name != "direct" {
			b.ReportMetric(float64(c)/float64(median(cpu["direct"])), k.name+"-cpu-x")
			b.ReportMetric(float64(median(wall["direct"]))/float64(w), k.name+"-speed-x")
		}
	}
	b.ReportMetric(loadAverage(b), "load1")
	if testing.Verbose() {
		for _, k := range kinds {
			fmt.Printf("%s: cpu %v wall %v\n", k.name, cpu[k.name], wall[k.name])
		}
	}
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
