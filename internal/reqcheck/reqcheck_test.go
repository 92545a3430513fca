package reqcheck

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// An attacker picks counts that wrap a Duration when multiplied: to a
// negative one (9223372037 s) or to a small positive one (18446744074 s
// is 0.29 s after wrapping). Each is refused, naming the field.
func TestWrappingCountsAreRefused(t *testing.T) {
	for _, n := range []int64{9223372037, 18446744074, math.MaxInt64, -1, math.MinInt64} {
		if d, err := Seconds("ttl_seconds", n, 0); err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "ttl_seconds") {
			t.Errorf("Seconds(%d) = %s, %v: want an invalid error naming ttl_seconds", n, d, err)
		}
		if d, err := Lifetime(n, 24*time.Hour); err == nil {
			t.Errorf("Lifetime(%d) = %s: accepted", n, d)
		}
		if d, err := Lifetime(n, 0); err == nil {
			t.Errorf("Lifetime(%d) without a maximum = %s: accepted", n, d)
		}
	}
	for _, n := range []int64{9223372036855, 18446744073710, math.MaxInt64} {
		if d, err := Millis("timeout_ms", n, 0); err == nil || !strings.Contains(err.Error(), "timeout_ms") {
			t.Errorf("Millis(%d) = %s, %v", n, d, err)
		}
	}
	if d, err := Seconds("approval_wait_seconds", 3601, time.Hour); err == nil {
		t.Errorf("a count over its field's bound: %s", d)
	}
	if d, err := Lifetime(0, time.Hour); err != nil || d != time.Hour {
		t.Errorf("no ttl under a maximum: %s %v", d, err)
	}
	if d, err := Lifetime(60, time.Hour); err != nil || d != time.Minute {
		t.Errorf("a ttl of 60: %s %v", d, err)
	}
}

func TestLabels(t *testing.T) {
	ok := map[string]string{"team": "infra", "k": ""}
	if err := Labels(ok); err != nil {
		t.Errorf("fine labels: %v", err)
	}
	long := strings.Repeat("k", 200)
	for name, l := range map[string]map[string]string{
		"empty key":   {"": "v"},
		"long key":    {long: "v"},
		"control key": {"a\x01": "v"},
		"bad utf-8":   {"k": "\xff"},
		"del":         {"k": "a\x7fb"},
		"long value":  {"k": strings.Repeat("v", MaxLabelValueBytes+1)},
	} {
		err := Labels(l)
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
		if name == "long key" && (err == nil || strings.Contains(err.Error(), long) || !strings.Contains(err.Error(), "...")) {
			t.Errorf("a long key is not clipped in the error: %v", err)
		}
	}
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	if err := Labels(many); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("too many labels: %v", err)
	}
}

func TestNoNULAndEnv(t *testing.T) {
	if err := NoNUL("cwd", "/workspace"); err != nil {
		t.Error(err)
	}
	if err := NoNUL("cwd", "/work\x00space"); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "cwd") {
		t.Errorf("NUL: %v", err)
	}
	if err := Env([]string{"A=1", "B=", "C=x=y"}); err != nil {
		t.Errorf("fine env: %v", err)
	}
	for _, env := range [][]string{{"A=1", "noequals"}, {"=v"}, {"A=\x00"}} {
		if err := Env(env); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "env[") {
			t.Errorf("%q: %v", env, err)
		}
	}
}

func TestLifetimeOverMax(t *testing.T) {
	if _, err := Lifetime(7200, time.Hour); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("over the maximum: %v", err)
	}
	if d, err := Lifetime(0, 0); err != nil || d != 0 {
		t.Errorf("no ttl, no maximum: %s %v", d, err)
	}
	if d, err := Millis("timeout_ms", 1500, 0); err != nil || d != 1500*time.Millisecond {
		t.Errorf("Millis: %s %v", d, err)
	}
}

func TestAbsPath(t *testing.T) {
	if p, err := AbsPath("/tmp/../workspace/./x/"); err != nil || p != "/workspace/x" {
		t.Errorf("clean: %q %v", p, err)
	}
	for _, bad := range []string{"workspace/x", "", "/work\x00space"} {
		if _, err := AbsPath(bad); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
