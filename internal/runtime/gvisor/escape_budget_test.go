package gvisor

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/conformance"
)

// heldProbe runs the probe with args and returns its result while it still
// holds what it took (killed when the test ends).
func heldProbe(t *testing.T, sb runtime.Sandbox, args ...string) probeResult {
	t.Helper()
	line, err := conformance.StartHeld(sb, append([]string{"/workspace/probe"}, args...), t.Cleanup)
	var pr probeResult
	if err == nil {
		err = json.Unmarshal([]byte(line), &pr)
	}
	if err != nil {
		t.Fatalf("probe %q: %v", args, err)
	}
	return pr
}

// Per-user kernel budgets (issue 16): under gVisor, inotify, signals and
// message queues are gVisor's kernel's, which keeps their counts in its
// own memory, so a command that takes every inotify instance and watch,
// queues every signal and makes every message queue it can must leave
// host root's own untouched. (Unlike the native backend, the in-sandbox
// bounds are gVisor's: only the host's side is asserted here.)
func TestEscapeHostBudgets(t *testing.T) {
	sb := newSandbox(t, withProbe(t))
	for _, c := range [][]string{
		{"inotify-instances", "4096", "120"},
		{"inotify-watches", "6080", "32", "120"},
		{"sigqueue-rt", strconv.Itoa(1 << 18), "120"},
		{"mqueue-fill", "256", "120"},
	} {
		pr := heldProbe(t, sb, c...)
		t.Logf("sandbox: %+v; host SigQ %s", pr, conformance.HostSigQ())
		if err := conformance.HostInotify(t.TempDir()); err != nil {
			t.Errorf("ESCAPE: after %s (%d) in a sandbox, host root: %v", pr.Case, pr.N, err)
		}
		if err := conformance.HostSignals(); err != nil {
			t.Errorf("ESCAPE: after %s (%d) in a sandbox, host root: %v", pr.Case, pr.N, err)
		}
		if err := conformance.HostMqueue(); err != nil {
			t.Errorf("ESCAPE: after %s (%d) in a sandbox, host root: %v", pr.Case, pr.N, err)
		}
	}
}
