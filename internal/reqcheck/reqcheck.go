// Package reqcheck bounds what a request carries before anything acts on
// it, the same for every door (the HTTP API, E2B, the modules): counts of
// seconds and milliseconds checked before they are multiplied, a
// sandbox's time to live under the daemon's maximum lifetime, labels,
// strings without NUL bytes, absolute paths, K=V environments. Each
// error names the request's field and is ErrInvalid.
//
// It is pure: no state, no I/O, no clock.
package reqcheck

import (
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// MaxDuration bounds every duration a request carries, whatever its
// field's own bound: far past any sandbox's use, far below where a
// time.Duration (±292 years) or a time.Time addition wraps.
const MaxDuration = 100 * 365 * 24 * time.Hour

// Bounds on a sandbox's labels (and an E2B sandbox's metadata): they are
// stored with the sandbox and shown in every listing.
const (
	MaxLabels          = 64
	MaxLabelKeyBytes   = 63
	MaxLabelValueBytes = 1024
)

// Seconds converts a request's count of seconds, field, to a Duration.
// It refuses a negative count and one over max (MaxDuration when max is
// 0 or more), naming field, with ErrInvalid. The count is checked before
// it is multiplied: a count that would wrap a Duration (such as
// 9223372037) is refused, never turned into a negative or small one.
func Seconds(field string, n int64, max time.Duration) (time.Duration, error) {
	return count(field, "seconds", n, time.Second, max)
}

// Millis is Seconds for a count of milliseconds.
func Millis(field string, n int64, max time.Duration) (time.Duration, error) {
	return count(field, "milliseconds", n, time.Millisecond, max)
}

func count(field, unit string, n int64, per, max time.Duration) (time.Duration, error) {
	if max <= 0 || max > MaxDuration {
		max = MaxDuration
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

// Labels bounds labels: at most MaxLabels, keys of 1 to MaxLabelKeyBytes
// bytes, values of at most MaxLabelValueBytes, all UTF-8 without control
// characters.
func Labels(labels map[string]string) error {
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

// NoNUL refuses a NUL byte in a string a request carries (argv, env,
// cwd, paths: the kernel would cut it there, so what runs would not be
// what was asked for and recorded), naming field.
func NoNUL(field, v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%s: contains a NUL byte: %w", field, errdefs.ErrInvalid)
	}
	return nil
}

// AbsPath returns p's lexically clean form ("/tmp/../workspace/x" is
// "/workspace/x"), or ErrInvalid when p is not absolute or holds a NUL
// byte: what a path is judged as is what is used.
func AbsPath(p string) (string, error) {
	if err := NoNUL("path", p); err != nil {
		return "", err
	}
	if !path.IsAbs(p) {
		return "", fmt.Errorf("path %q must be absolute: %w", p, errdefs.ErrInvalid)
	}
	return path.Clean(p), nil
}

// Env refuses an environment entry that is not K=V with a K, or holds a
// NUL byte, naming it (env[i]).
func Env(env []string) error {
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
