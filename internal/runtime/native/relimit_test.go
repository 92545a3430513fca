package native

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// A warm pool's sandbox is made with the default memory and given the
// request's limit at its claim (Relimit): a command then cannot allocate
// past the new limit, the sandbox says so in its Info, and a limit fixed
// at create (pids, disk) is refused, leaving the sandbox as it was.
func TestEscapeRelimitMemory(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, withProbe(t))
	s := impl(t, sb)
	if err := s.Relimit(context.Background(), runtime.Limits{Pids: 64}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("relimit of pids: %v, want unsupported", err)
	}
	if err := s.Relimit(context.Background(), runtime.Limits{MemoryBytes: 64 << 20, CPUs: 0.5}); err != nil {
		t.Fatal(err)
	}
	if lim := sb.Info().Limits; lim.MemoryBytes != 64<<20 || lim.CPUs != 0.5 || lim.Pids != DefaultPids {
		t.Errorf("limits after relimit: %+v", lim)
	}
	res := run(t, sb, runtime.ExecRequest{Argv: []string{"/workspace/probe", "alloc", "400", "plain"}, Timeout: 20 * time.Second})
	if strings.Contains(res.Stdout, `"ok":true`) {
		t.Fatalf("ESCAPE: allocated 400MiB after a relimit to 64MiB: %s", res.Stdout)
	}
	if res.Status.Limit != runtime.LimitMemory {
		t.Errorf("want limit memory, got %+v (stdout %q)", res.Status, res.Stdout)
	}
	if r := sh(t, sb, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("sandbox after the OOM kill: %+v", r)
	}
}

// A lifetime given at the claim counts from then: the sandbox is gone
// after it.
func TestRelimitLifetime(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, nil)
	if err := impl(t, sb).Relimit(context.Background(), runtime.Limits{Lifetime: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sb.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the sandbox outlived the lifetime given by Relimit")
	}
}
