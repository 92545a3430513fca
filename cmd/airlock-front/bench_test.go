package main

import (
	"os/exec"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/benchpeer"
)

var median = benchpeer.Median

// BenchmarkPolicyCheckVsStaticGo runs `airlock policy check -- ls` (the
// binary users get, as a process) and the peer, a minimal static Go
// binary that prints nothing, alternately in the same run, and reports
// both medians and their ratio (issue 20's target: airlock <= 1.5x the
// peer). The core (the full program the front carries) answering the
// same check runs in the same loop: what the front saves.
func BenchmarkPolicyCheckVsStaticGo(b *testing.B) {
	peerBin := benchpeer.StaticNothing(b, b.TempDir())
	check := func(bin string) {
		out, err := exec.Command(bin, "policy", "check", "--", "ls").CombinedOutput()
		if err != nil {
			b.Fatalf("%s policy check: %v %s", bin, err, out)
		}
	}
	nothing := func() {
		if out, err := exec.Command(peerBin).CombinedOutput(); err != nil || len(out) != 0 {
			b.Fatalf("peer: %v %q", err, out)
		}
	}
	for i := 0; i < 3; i++ { // page cache
		check(frontBin)
		check(coreBin)
		nothing()
	}
	var ours, core, peer []time.Duration
	timed := func(into *[]time.Duration, f func()) {
		start := time.Now()
		f()
		*into = append(*into, time.Since(start))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		timed(&ours, func() { check(frontBin) })
		timed(&peer, nothing)
		timed(&core, func() { check(coreBin) })
	}
	b.StopTimer()
	mo, mp, mc := median(ours), median(peer), median(core)
	b.ReportMetric(float64(mo)/1e6, "check-median-ms")
	b.ReportMetric(float64(mp)/1e6, "static-go-median-ms")
	b.ReportMetric(float64(mc)/1e6, "core-check-median-ms")
	b.ReportMetric(float64(mo)/float64(mp), "ratio")
}
