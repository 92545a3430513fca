package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/usage"
)

// fakeUsage is a usage module whose figures the test sets.
type fakeUsage struct {
	use     runtime.Usage
	disk    runtime.DiskUsage
	diskErr error
}

func (f fakeUsage) Sample(context.Context, string) (usage.Sample, error) {
	return usage.Sample{Time: time.Now(), Usage: f.use, Limits: runtime.Limits{MemoryBytes: 1 << 30}}, nil
}
func (f fakeUsage) Disk(context.Context, string) (runtime.DiskUsage, error) { return f.disk, f.diskErr }
func (fakeUsage) Live(string) bool                                          { return true }

// The door's metric carries the backend's page cache and disk as E2B
// names them; a figure the backend cannot read is an absent field,
// never a 0, and a real 0 is still said.
func TestMetricFigures(t *testing.T) {
	disk := runtime.DiskUsage{TotalBytes: 1 << 30, UsedBytes: 12 << 20, AvailBytes: 900 << 20}
	for name, tc := range map[string]struct {
		u    fakeUsage
		want string // the figures after memTotal
	}{
		"all":             {fakeUsage{use: runtime.Usage{MemoryBytes: 64 << 20, PageCacheBytes: 16 << 20}, disk: disk}, `"memCache":16777216,"diskUsed":12582912,"diskTotal":1073741824`},
		"an empty cache":  {fakeUsage{use: runtime.Usage{MemoryBytes: 64 << 20}, disk: disk}, `"memCache":0,"diskUsed":12582912,"diskTotal":1073741824`},
		"no page cache":   {fakeUsage{use: runtime.Usage{MemoryBytes: 64 << 20, PageCacheBytes: runtime.UnknownBytes}, disk: disk}, `"diskUsed":12582912,"diskTotal":1073741824`},
		"no disk":         {fakeUsage{use: runtime.Usage{MemoryBytes: 64 << 20, PageCacheBytes: 1}, diskErr: fmt.Errorf("no disk here: %w", errdefs.ErrUnsupported)}, `"memCache":1`},
		"neither of them": {fakeUsage{use: runtime.Usage{PageCacheBytes: runtime.UnknownBytes}, diskErr: errdefs.ErrUnsupported}, ``},
	} {
		s := &Server{usage: tc.u}
		m, err := s.sample(context.Background(), "sb")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(m)
		_, tail, _ := strings.Cut(string(b), `"memTotal":1073741824`)
		if strings.Trim(tail, ",}") != tc.want {
			t.Errorf("%s: %s, want the figures %s", name, b, tc.want)
		}
	}
}

// A disk the backend has but could not read fails the call, saying
// why, rather than answering without it.
func TestMetricDiskError(t *testing.T) {
	broken := errors.New("statfs /workspace: the agent's answer has no figures")
	s := &Server{usage: fakeUsage{diskErr: broken}}
	if m, err := s.sample(context.Background(), "sb"); !errors.Is(err, broken) {
		t.Errorf("sample = %+v %v, want the disk's error", m, err)
	}
}
