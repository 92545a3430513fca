// Package benchpeer is what the process benchmarks share (tests only):
// the median of timings, and the peer most of them measure against, a
// minimal static Go binary that does nothing (what any Go program pays
// to start).
package benchpeer

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Median is the median of ds (ds is not changed).
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// StaticNothing builds, in dir, a static Go binary that does nothing and
// returns its path.
func StaticNothing(tb testing.TB, dir string) string {
	tb.Helper()
	src := filepath.Join(dir, "nothing.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, "nothing")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, src)
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build the static Go peer: %v\n%s", err, out)
	}
	return bin
}
