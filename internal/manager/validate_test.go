package manager

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
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
	if d, err := Seconds("approval_wait_seconds", 3601, MaxApprovalWait); err == nil {
		t.Errorf("a wait over its field's bound: %s", d)
	}
	if d, err := Lifetime(0, time.Hour); err != nil || d != time.Hour {
		t.Errorf("no ttl under a maximum: %s %v", d, err)
	}
	if d, err := Lifetime(60, time.Hour); err != nil || d != time.Minute {
		t.Errorf("a ttl of 60: %s %v", d, err)
	}
}

func TestCheckCreateNamesTheField(t *testing.T) {
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[strings.Repeat("k", i%50+1)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	cases := map[string]CreateRequest{
		"limits.memory_bytes": {Limits: runtime.Limits{MemoryBytes: -1}},
		"limits.tmp_bytes":    {Limits: runtime.Limits{TmpBytes: -1}},
		"limits.cpus":         {Limits: runtime.Limits{CPUs: math.Inf(1)}},
		"limits.lifetime":     {Limits: runtime.Limits{Lifetime: -time.Second}},
		"labels":              {Labels: many},
		"labels: key":         {Labels: map[string]string{strings.Repeat("k", 64): "v"}},
		"labels.big":          {Labels: map[string]string{"big": strings.Repeat("v", MaxLabelValueBytes+1)}},
		"labels.nul":          {Labels: map[string]string{"nul": "a\x00b"}},
		"env[0]":              {Env: []string{"A=b\x00c"}},
	}
	for field, req := range cases {
		if _, err := CheckCreate(req, time.Hour); err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
	if _, err := CheckCreate(CreateRequest{Limits: runtime.Limits{Lifetime: 2 * time.Hour}}, time.Hour); err == nil {
		t.Error("limits.lifetime past the maximum lifetime was accepted")
	}
}

func TestCheckExecNamesTheNUL(t *testing.T) {
	for field, req := range map[string]ExecRequest{
		"argv[1]": {Argv: []string{"echo", "a\x00b"}},
		"cwd":     {Argv: []string{"true"}, Cwd: "/work\x00space"},
		"env[0]":  {Argv: []string{"true"}, Env: []string{"A=\x00"}},
	} {
		if err := checkExec(req); err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}
