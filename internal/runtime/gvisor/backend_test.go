package gvisor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// A sandbox says which boundary it runs behind.
func TestInfo(t *testing.T) {
	sb := newSandbox(t, nil)
	info := sb.Info()
	if info.Backend != "gvisor" || !strings.Contains(info.Isolation.Boundary, "gVisor") || info.Isolation.LandlockABI != 0 {
		t.Errorf("info: %+v", info)
	}
	if info.Limits.MemoryBytes != DefaultMemory || info.Limits.Pids != DefaultPids || info.Limits.TmpBytes != 0 {
		t.Errorf("limits: %+v", info.Limits)
	}
	if r := sh(t, sb, "hostname; id -u"); r.Stdout != "airlock\n1000\n" {
		t.Errorf("hostname and uid: %q %q", r.Stdout, r.Stderr)
	}
}

// What this backend cannot do is a clear error, never a silent downgrade:
// a missing runsc (with how to install it), the kvm platform, a platform
// the runsc lacks, a separate /tmp limit.
func TestRefusals(t *testing.T) {
	needGVisor(t)
	cfg := testConfig()
	cfg.Runsc = "/nonexistent/runsc"
	_, err := New(cfg)
	if !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "apt-get install -y runsc") || !strings.Contains(err.Error(), "go install gvisor.dev/gvisor/runsc") {
		t.Errorf("missing runsc: %v", err)
	}
	cfg = testConfig()
	cfg.Platform = "kvm"
	if _, err := New(cfg); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("kvm platform: %v", err)
	}
	cfg.Platform = "no-such-platform"
	if _, err := New(cfg); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("unknown platform: %v", err)
	}
	b := newTestBackend(t)
	spec := hostSpec(t)
	spec.Limits.TmpBytes = 64 << 20
	if sb, err := b.Create(context.Background(), spec); !errors.Is(err, errdefs.ErrUnsupported) {
		if sb != nil {
			_ = sb.Destroy(context.Background())
		}
		t.Errorf("a /tmp limit: %v", err)
	}
	var _ runtime.Backend = b
}
