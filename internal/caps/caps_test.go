package caps

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Each limit past its cap is refused as invalid, naming its field; a
// zero cap bounds nothing.
func TestCheck(t *testing.T) {
	c := Caps{Limits: runtime.Limits{MemoryBytes: 1 << 30, Pids: 512, CPUs: 2, DiskBytes: 1 << 30, TmpBytes: 1 << 20, NoFile: 1024, Ptys: 8}}
	if err := c.Check(c.Limits); err != nil {
		t.Errorf("at the caps: %v", err)
	}
	for field, l := range map[string]runtime.Limits{
		"memory_bytes": {MemoryBytes: 1<<30 + 1}, "pids": {Pids: 513}, "cpus": {CPUs: 2.5}, "disk_bytes": {DiskBytes: 1<<30 + 1},
		"tmp_bytes": {TmpBytes: 1<<20 + 1}, "nofile": {NoFile: 1025}, "ptys": {Ptys: 9},
	} {
		if err := c.Check(l); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "limits."+field) {
			t.Errorf("%s past its cap: %v", field, err)
		}
	}
	if err := (Caps{}).Check(runtime.Limits{MemoryBytes: 1 << 40, Pids: 1 << 20}); err != nil {
		t.Errorf("no caps: %v", err)
	}
}

// What does not fit beside what is held is refused, naming the host
// table; as many sandboxes as the cap allows exist, not one more.
func TestAdmit(t *testing.T) {
	b := HostBudget{Pids: 1000, Ptys: 40}
	if !b.Set() || (HostBudget{}).Set() {
		t.Error("Set")
	}
	if err := b.Admit(runtime.HostCost{Pids: 680, Ptys: 24}, runtime.HostCost{Pids: 320, Ptys: 16}); err != nil {
		t.Errorf("exactly full: %v", err)
	}
	if err := b.Admit(runtime.HostCost{Pids: 681}, runtime.HostCost{Pids: 320}); !errors.Is(err, errdefs.ErrLimitExceeded) || !strings.Contains(err.Error(), "kernel.pid_max") {
		t.Errorf("tasks beyond: %v", err)
	}
	if err := b.Admit(runtime.HostCost{Ptys: 32}, runtime.HostCost{Ptys: 16}); !errors.Is(err, errdefs.ErrLimitExceeded) || !strings.Contains(err.Error(), "kernel.pty.max") {
		t.Errorf("terminals beyond: %v", err)
	}
	if err := (HostBudget{}).Admit(runtime.HostCost{Pids: 1 << 40}, runtime.HostCost{Pids: 1 << 40}); err != nil {
		t.Errorf("no budget: %v", err)
	}
	c := Caps{Sandboxes: 2}
	if err := c.AdmitSandbox(1); err != nil {
		t.Errorf("the second: %v", err)
	}
	if err := c.AdmitSandbox(2); !errors.Is(err, errdefs.ErrLimitExceeded) || !strings.Contains(err.Error(), "--max-sandboxes") {
		t.Errorf("the third: %v", err)
	}
	if err := (Caps{}).AdmitSandbox(1 << 20); err != nil {
		t.Errorf("no cap: %v", err)
	}
}

// Limits that no daemon could honour are refused whatever the caps,
// each naming its field; a lifetime is bounded by the daemon's maximum
// (0: reqcheck.MaxDuration).
func TestCheckLimits(t *testing.T) {
	for field, l := range map[string]runtime.Limits{
		"memory_bytes": {MemoryBytes: -1}, "pids": {Pids: -1}, "disk_bytes": {DiskBytes: -1}, "tmp_bytes": {TmpBytes: -1},
		"inodes": {Inodes: -1}, "cpus": {CPUs: math.NaN()}, "nofile": {NoFile: math.MaxInt32 + 1}, "lifetime": {Lifetime: 2 * time.Hour},
	} {
		if err := CheckLimits(l, time.Hour); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "limits."+field) {
			t.Errorf("%s: %v, want invalid naming it", field, err)
		}
	}
	if err := CheckLimits(runtime.Limits{Lifetime: 2 * time.Hour, CPUs: 1.5}, 0); err != nil {
		t.Errorf("no maximum lifetime: %v", err)
	}
	if err := CheckLimits(runtime.Limits{CPUs: math.Inf(1)}, 0); err == nil {
		t.Error("infinite cpus admitted")
	}
}
