package native

import (
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// What a daemon reserves for a sandbox is what the backend lets it take:
// the pids cgroup's maximum and the devpts maximum, defaults included.
func TestHostCostIsWhatTheSandboxMayTake(t *testing.T) {
	var b Backend
	for _, tc := range []struct {
		l    runtime.Limits
		want runtime.HostCost
	}{
		{runtime.Limits{}, runtime.HostCost{Pids: DefaultPids + agentPidsReserve, Ptys: DefaultPtys}},
		{runtime.Limits{Pids: 1000, Ptys: 3}, runtime.HostCost{Pids: 1000 + agentPidsReserve, Ptys: 3}},
	} {
		if got, err := b.HostCost(tc.l); err != nil || got != tc.want {
			t.Errorf("HostCost(%+v) = %+v, %v; want %+v", tc.l, got, err, tc.want)
		}
	}
	if _, err := b.HostCost(runtime.Limits{Ptys: MaxPtys + 1}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("a pty limit above %d: %v, want invalid", MaxPtys, err)
	}
}
