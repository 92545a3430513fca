package sandbox

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/runtime"
)

func TestCheckCreateNamesTheField(t *testing.T) {
	many := map[string]string{}
	for i := range reqcheck.MaxLabels + 1 {
		many[strings.Repeat("k", i%50+1)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	cases := map[string]CreateRequest{
		"limits.memory_bytes": {Limits: runtime.Limits{MemoryBytes: -1}},
		"limits.tmp_bytes":    {Limits: runtime.Limits{TmpBytes: -1}},
		"limits.cpus":         {Limits: runtime.Limits{CPUs: math.Inf(1)}},
		"limits.lifetime":     {Limits: runtime.Limits{Lifetime: -time.Second}},
		"labels":              {Labels: many},
		"labels: key":         {Labels: map[string]string{strings.Repeat("k", 64): "v"}},
		"labels.big":          {Labels: map[string]string{"big": strings.Repeat("v", reqcheck.MaxLabelValueBytes+1)}},
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
		if err := CheckExec(req); err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}
