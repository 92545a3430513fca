package native

import (
	"bufio"
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// medianMS reports the median of ds in milliseconds.
func medianMS(ds []time.Duration) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// BenchmarkCreateReady: create a sandbox until it is ready for exec
// (target median <= 15 ms). Destroy is outside the timed region.
func BenchmarkCreateReady(b *testing.B) {
	be := newTestBackend(b)
	spec := hostSpec(b)
	ctx := context.Background()
	var ds []time.Duration
	b.ResetTimer()
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
}

// BenchmarkExecTrue: exec /bin/true in a running sandbox, request to exit
// status (target median <= 2 ms).
func BenchmarkExecTrue(b *testing.B) {
	be := newTestBackend(b)
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
		p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/bin/true"}})
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

func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func pssOf(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkIdleMemory: host memory per idle sandbox (target <= 10 MiB),
// three ways over 20 idle sandboxes: the drop in MemAvailable (kernel
// objects, page tables, tmpfs and agent memory all count, but the kernel's
// estimate is noisy), the memory charged to each sandbox's cgroup, and the
// agent's proportional set size. Run it with -benchtime 1x.
func BenchmarkIdleMemory(b *testing.B) {
	be := newTestBackend(b)
	spec := hostSpec(b)
	ctx := context.Background()
	const n = 20
	var perSandbox, pss, cgMiB float64
	for i := 0; i < b.N; i++ {
		// warm: the exe copy and the template are in the page cache
		if sb, err := be.Create(ctx, spec); err == nil {
			_ = sb.Destroy(ctx)
		}
		time.Sleep(200 * time.Millisecond)
		before := memAvailable()
		var sbs []runtime.Sandbox
		for j := 0; j < n; j++ {
			sb, err := be.Create(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			sbs = append(sbs, sb)
		}
		time.Sleep(500 * time.Millisecond) // let them go idle
		after := memAvailable()
		var p, cg int64
		for _, sb := range sbs {
			p += pssOf(sb.(*sandbox).InitPID())
			if st, err := sb.(*sandbox).Cgroup().Stats(); err == nil {
				cg += int64(st.MemoryCurrent)
			}
		}
		for _, sb := range sbs {
			_ = sb.Destroy(ctx)
		}
		perSandbox = float64(before-after) / n / (1 << 20)
		pss = float64(p) / n / (1 << 20)
		cgMiB = float64(cg) / n / (1 << 20)
	}
	b.ReportMetric(perSandbox, "memavail-drop-MiB/sandbox")
	b.ReportMetric(pss, "agent-pss-MiB")
	b.ReportMetric(cgMiB, "cgroup-MiB/sandbox")
}
