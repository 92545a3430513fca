package testroot

import (
	"fmt"
	"strings"
	"testing"
)

// recorder stands in for a test: it records whether it was skipped or
// failed, and with what, and stops the helper as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.skipped, r.msg = true, fmt.Sprint(args...)
	panic(r)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	panic(r)
}

func run(fn func(*recorder)) (r *recorder) {
	r = &recorder{}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	fn(r)
	return r
}

// Not root: a skip that says why, on a developer's machine; a failure
// under CI, never a skip.
func TestNeedFailsUnderCI(t *testing.T) {
	for _, c := range []struct {
		euid                  int
		ci                    string
		wantSkip, wantFailure bool
	}{
		{euid: 1000, wantSkip: true},
		{euid: 1000, ci: "true", wantFailure: true},
		{euid: 0},
		{euid: 0, ci: "true"},
	} {
		r := run(func(r *recorder) { need(r, c.euid, c.ci, "to mount a tmpfs") })
		if r.skipped != c.wantSkip || r.failed != c.wantFailure {
			t.Errorf("euid %d CI=%q: skipped %v failed %v, want %v %v", c.euid, c.ci, r.skipped, r.failed, c.wantSkip, c.wantFailure)
		}
		if (c.wantSkip || c.wantFailure) && !strings.Contains(r.msg, "needs root to mount a tmpfs") {
			t.Errorf("euid %d CI=%q: %q does not say why", c.euid, c.ci, r.msg)
		}
	}
	if r := run(func(r *recorder) { unavailable(r, "1", "runsc is not installed") }); !r.failed || r.skipped {
		t.Errorf("a missing prerequisite under CI: skipped %v failed %v, want a failure", r.skipped, r.failed)
	}
}
