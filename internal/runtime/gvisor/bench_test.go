package gvisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// Benchmarks of the gVisor backend against its peers, in one run: the
// native backend, and plain `runsc do /bin/true` with the same runsc,
// platform and network. Each reports its median (median-ms); the issue's
// target is a gVisor create no slower than 1.2x runsc do.
//
//	go test -run '^$' -bench . -benchtime 20x ./internal/runtime/gvisor/

func medianMS(ds []time.Duration) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// backends are the two airlock backends, each with a spec that runs on it.
func benchBackends(b *testing.B) map[string]runtime.Backend {
	g := newTestBackend(b)
	n, err := native.New(native.Config{StateDir: filepath.Join(testRoot, "native"), CgroupParent: cgroupParent + "-native"})
	if err != nil {
		b.Fatalf("native backend: %v", err)
	}
	return map[string]runtime.Backend{"gvisor": g, "native": n}
}

// BenchmarkCreateReady: create a sandbox until it is ready for exec;
// destroy is outside the timed region. runsc-do is `runsc do /bin/true`
// from start to exit.
func BenchmarkCreateReady(b *testing.B) {
	bes := benchBackends(b)
	spec := hostSpec(b)
	ctx := context.Background()
	for _, name := range []string{"gvisor", "native"} {
		be := bes[name]
		b.Run(name, func(b *testing.B) {
			var ds []time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				sb, err := be.Create(ctx, spec)
				ds = append(ds, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = sb.Destroy(ctx)
				b.StartTimer()
			}
			b.ReportMetric(medianMS(ds), "median-ms")
		})
	}
	b.Run("runsc-do", func(b *testing.B) {
		g := bes["gvisor"].(*Backend)
		root := filepath.Join(testRoot, "runsc-do")
		if err := os.MkdirAll(root, 0o700); err != nil {
			b.Fatal(err)
		}
		var ds []time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			out, err := exec.Command(g.runsc, "--root", root, "--network=none", "--ignore-cgroups", "--platform="+g.platform, "do", "/bin/true").CombinedOutput()
			ds = append(ds, time.Since(start))
			if err != nil {
				b.Fatalf("runsc do: %v: %s", err, out)
			}
		}
		b.ReportMetric(medianMS(ds), "median-ms")
	})
}

// execMedian runs argv b.N times in one sandbox of be, timing request to
// exit status.
func execMedian(b *testing.B, be runtime.Backend, argv []string) {
	ctx := context.Background()
	sb, err := be.Create(ctx, hostSpec(b))
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Destroy(ctx)
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: argv})
		if err != nil {
			b.Fatal(err)
		}
		st, err := p.Wait(ctx)
		ds = append(ds, time.Since(start))
		if err != nil || st.Code != 0 {
			b.Fatal(err, st.Code)
		}
	}
	b.ReportMetric(medianMS(ds), "median-ms")
}

// BenchmarkExecTrue: exec /bin/true in a running sandbox, request to exit
// status.
func BenchmarkExecTrue(b *testing.B) {
	bes := benchBackends(b)
	for _, name := range []string{"gvisor", "native"} {
		b.Run(name, func(b *testing.B) { execMedian(b, bes[name], []string{"/bin/true"}) })
	}
}

// BenchmarkSyscallHeavy: 400,000 one-byte reads and writes, where gVisor
// pays for every syscall.
func BenchmarkSyscallHeavy(b *testing.B) {
	bes := benchBackends(b)
	for _, name := range []string{"gvisor", "native"} {
		b.Run(name, func(b *testing.B) {
			execMedian(b, bes[name], []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=200000", "status=none"})
		})
	}
}
