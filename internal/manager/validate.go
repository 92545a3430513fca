package manager

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// MaxRequestDuration bounds every duration a request carries, whatever
// its field's own bound: far past any sandbox's use, far below where a
// time.Duration (±292 years) or a time.Time addition wraps.
const MaxRequestDuration = 100 * 365 * 24 * time.Hour

// Bounds on a sandbox's labels (and an E2B sandbox's metadata): they are
// stored with the sandbox and shown in every listing.
const (
	MaxLabels          = 64
	MaxLabelKeyBytes   = 63
	MaxLabelValueBytes = 1024
)

// Seconds converts a request's count of seconds, field, to a Duration.
// It refuses a negative count and one over max (MaxRequestDuration when
// max is 0 or more), naming field, with ErrInvalid. The count is checked
// before it is multiplied: a count that would wrap a Duration (such as
// 9223372037) is refused, never turned into a negative or small one.
func Seconds(field string, n int64, max time.Duration) (time.Duration, error) {
	return count(field, "seconds", n, time.Second, max)
}

// Millis is Seconds for a count of milliseconds.
func Millis(field string, n int64, max time.Duration) (time.Duration, error) {
	return count(field, "milliseconds", n, time.Millisecond, max)
}

func count(field, unit string, n int64, per, max time.Duration) (time.Duration, error) {
	if max <= 0 || max > MaxRequestDuration {
		max = MaxRequestDuration
	}
	if n < 0 {
		return 0, fmt.Errorf("%s: %d %s: must not be negative: %w", field, n, unit, errdefs.ErrInvalid)
	}
	if n > int64(max/per) {
		return 0, fmt.Errorf("%s: %d %s: at most %d: %w", field, n, unit, int64(max/per), errdefs.ErrInvalid)
	}
	return time.Duration(n) * per, nil
}

// Lifetime is the time to live of a sandbox asked for with ttlSeconds
// under a daemon whose maximum lifetime is max (0: unbounded): 0 asks
// for max. With max set, it is always in (0, max]; without, 0 means no
// TTL. A count that is negative, wraps or is over max is ErrInvalid
// naming ttl_seconds.
func Lifetime(ttlSeconds int64, max time.Duration) (time.Duration, error) {
	ttl, err := Seconds("ttl_seconds", ttlSeconds, 0)
	if err != nil {
		return 0, err
	}
	if max <= 0 {
		return ttl, nil
	}
	if ttl == 0 {
		return max, nil
	}
	if ttl > max {
		return 0, fmt.Errorf("ttl_seconds: a time to live of %s is over this daemon's maximum sandbox lifetime of %s: %w", ttl, max, errdefs.ErrInvalid)
	}
	return ttl, nil
}

// CheckCreate validates what a create request carries that needs no
// state (time to live, limits, labels, environment) and returns the
// sandbox's time to live under maxLifetime (see Lifetime). Create calls
// it; every door's decoder is fuzzed through it.
func CheckCreate(req CreateRequest, maxLifetime time.Duration) (time.Duration, error) {
	ttl, err := Lifetime(req.TTLSeconds, maxLifetime)
	if err != nil {
		return 0, err
	}
	if err := CheckLimits(req.Limits, maxLifetime); err != nil {
		return 0, err
	}
	if err := CheckLabels(req.Labels); err != nil {
		return 0, err
	}
	if err := validEnv(req.Env); err != nil {
		return 0, err
	}
	return ttl, nil
}

// CheckLimits refuses negative limits, a CPU count that is not a finite
// number, and a limits.lifetime that is negative or past maxLifetime (0:
// MaxRequestDuration), each naming its field. Upper bounds per daemon
// are Caps'.
func CheckLimits(l runtime.Limits, maxLifetime time.Duration) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"memory_bytes", l.MemoryBytes}, {"pids", l.Pids}, {"disk_bytes", l.DiskBytes}, {"tmp_bytes", l.TmpBytes}, {"inodes", l.Inodes}} {
		if f.v < 0 {
			return fmt.Errorf("limits.%s: %d must not be negative: %w", f.name, f.v, errdefs.ErrInvalid)
		}
	}
	if l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) {
		return fmt.Errorf("limits.cpus: %v: want a number of CPUs, 0 or more: %w", l.CPUs, errdefs.ErrInvalid)
	}
	if l.NoFile > math.MaxInt32 {
		return fmt.Errorf("limits.nofile: %d: at most %d: %w", l.NoFile, math.MaxInt32, errdefs.ErrInvalid)
	}
	max := maxLifetime
	if max <= 0 || max > MaxRequestDuration {
		max = MaxRequestDuration
	}
	if l.Lifetime < 0 || l.Lifetime > max {
		return fmt.Errorf("limits.lifetime: %d nanoseconds: want 0 to %d: %w", int64(l.Lifetime), int64(max), errdefs.ErrInvalid)
	}
	return nil
}

// CheckLabels bounds labels: at most MaxLabels, keys of 1 to
// MaxLabelKeyBytes bytes, values of at most MaxLabelValueBytes, all
// UTF-8 without control characters.
func CheckLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("labels: %d: at most %d: %w", len(labels), MaxLabels, errdefs.ErrInvalid)
	}
	for k, v := range labels {
		if k == "" || len(k) > MaxLabelKeyBytes || !printable(k) {
			return fmt.Errorf("labels: key %q: 1 to %d bytes of printable UTF-8: %w", clip(k), MaxLabelKeyBytes, errdefs.ErrInvalid)
		}
		if len(v) > MaxLabelValueBytes || !printable(v) {
			return fmt.Errorf("labels.%s: a value of at most %d bytes of printable UTF-8: %w", k, MaxLabelValueBytes, errdefs.ErrInvalid)
		}
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// CheckNoNUL refuses a NUL byte in a string a request carries (argv, env,
// cwd, paths: the kernel would cut it there, so what runs would not be
// what was asked for and recorded), naming field.
func CheckNoNUL(field, v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%s: contains a NUL byte: %w", field, errdefs.ErrInvalid)
	}
	return nil
}

// checkExec validates an exec request before anything is recorded or
// asked of the policy: strings the kernel would cut at a NUL, and
// durations and sizes in range (callers converting a request's counts
// use Seconds and Millis first, so a wrapped value never arrives here).
func checkExec(req ExecRequest) error {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return fmt.Errorf("argv must name a command: %w", errdefs.ErrInvalid)
	}
	for i, a := range req.Argv {
		if err := CheckNoNUL(fmt.Sprintf("argv[%d]", i), a); err != nil {
			return err
		}
	}
	if err := CheckNoNUL("cwd", req.Cwd); err != nil {
		return err
	}
	if err := validEnv(req.Env); err != nil {
		return err
	}
	switch {
	case req.Timeout < 0 || req.Timeout > MaxRequestDuration:
		return fmt.Errorf("timeout_ms: want 0 to %d: %w", int64(MaxRequestDuration/time.Millisecond), errdefs.ErrInvalid)
	case req.OutputLimit < 0:
		return fmt.Errorf("output_limit: %d must not be negative: %w", req.OutputLimit, errdefs.ErrInvalid)
	case req.ApprovalWait < 0 || req.ApprovalWait > MaxApprovalWait:
		return fmt.Errorf("approval_wait_seconds: want 0 to %d: %w", int64(MaxApprovalWait/time.Second), errdefs.ErrInvalid)
	}
	return nil
}

// MaxLifetime is the daemon's bound on a sandbox's life (0: none), for
// the doors that check a request before they hand it over.
func (m *Manager) MaxLifetime() time.Duration { return m.cfg.MaxLifetime }

func envNames(env []string) []string {
	var names []string
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			names = append(names, k)
		}
	}
	return names
}

func validEnv(env []string) error {
	for i, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("env[%d]: contains a NUL byte: %w", i, errdefs.ErrInvalid)
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("env[%d] %q: use K=V: %w", i, kv, errdefs.ErrInvalid)
		}
	}
	return nil
}
