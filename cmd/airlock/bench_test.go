package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkRunVsBwrap runs `airlock run -- /bin/true` and the peer
// `bwrap --unshare-all --die-with-parent` (read-only /usr, /bin/true)
// alternately in the same run, and reports both medians and their ratio
// (target: airlock <= 1.5x bwrap).
func BenchmarkRunVsBwrap(b *testing.B) {
	if binSkip != "" {
		b.Skip(binSkip)
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap not installed (apt-get install bubblewrap)")
	}
	d := b.TempDir()
	_ = os.Chmod(filepath.Dir(d), 0o711)
	_ = os.Chmod(d, 0o711)
	e := &env{state: d + "/state", data: d + "/data", cgroupName: "airlock-bench"}
	// warm both (template build, exe copy, page cache)
	for i := 0; i < 3; i++ {
		_ = e.cmd("run", "--", "/bin/true").Run()
	}
	bwrapArgs := []string{"--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--proc", "/proc", "--dev", "/dev", "/bin/true"}
	var ours, peer []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if out, err := e.cmd("run", "--", "/bin/true").CombinedOutput(); err != nil {
			b.Fatalf("airlock run: %v %s", err, out)
		}
		ours = append(ours, time.Since(start))
		start = time.Now()
		if out, err := exec.Command(bwrap, bwrapArgs...).CombinedOutput(); err != nil {
			b.Fatalf("bwrap: %v %s", err, out)
		}
		peer = append(peer, time.Since(start))
	}
	b.StopTimer()
	_ = e.cmd("reap").Run() // and the (empty) cgroup parent with it
	mo, mp := median(ours), median(peer)
	b.ReportMetric(float64(mo)/1e6, "airlock-median-ms")
	b.ReportMetric(float64(mp)/1e6, "bwrap-median-ms")
	b.ReportMetric(float64(mo)/float64(mp), "ratio")
}
