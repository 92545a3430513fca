// Package testroot is the one way a test says that it needs root, or
// anything else the machine may lack: it skips with the reason on a
// developer's machine, and fails under CI (the environment variable CI
// set), whose machines are root and have every prerequisite, so that a
// skip there can never hide lost coverage.
package testroot

import (
	"os"
	"testing"
)

// Need skips (or, under CI, fails) t unless the process is root; why
// says what root is needed for ("to mount a tmpfs").
func Need(t testing.TB, why string) {
	t.Helper()
	need(t, os.Geteuid(), os.Getenv("CI"), why)
}

func need(t testing.TB, euid int, ci, why string) {
	t.Helper()
	if euid != 0 {
		unavailable(t, ci, "needs root "+why)
	}
}

// Unavailable skips (or, under CI, fails) t because of a missing
// prerequisite, named by reason.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	unavailable(t, os.Getenv("CI"), reason)
}

func unavailable(t testing.TB, ci, reason string) {
	t.Helper()
	if ci != "" {
		t.Fatalf("%s, but CI is set (CI machines have it): a skip would hide lost coverage", reason)
	}
	t.Skip(reason)
}
