package manager

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// Every pair of states: the legal moves happen, every other is refused
// with a conflict that names the sandbox, and leaves the state as it was.
func TestStateTransitions(t *testing.T) {
	all := []sandbox.State{sandbox.Running, sandbox.Paused, sandbox.Resetting, sandbox.Finishing, sandbox.Stopped}
	ok := map[[2]sandbox.State]bool{
		{sandbox.Running, sandbox.Paused}: true, {sandbox.Running, sandbox.Resetting}: true, {sandbox.Running, sandbox.Finishing}: true, {sandbox.Running, sandbox.Stopped}: true,
		{sandbox.Paused, sandbox.Running}: true, {sandbox.Paused, sandbox.Resetting}: true, {sandbox.Paused, sandbox.Stopped}: true,
		{sandbox.Resetting, sandbox.Running}: true, {sandbox.Resetting, sandbox.Stopped}: true,
		{sandbox.Finishing, sandbox.Running}: true, {sandbox.Finishing, sandbox.Stopped}: true,
	}
	for _, from := range all {
		for _, to := range all {
			ls := &live{state: from, rec: &store.Sandbox{ID: "sb-1"}}
			err := ls.transition(to)
			if ok[[2]sandbox.State{from, to}] {
				if err != nil || ls.state != to {
					t.Errorf("%s -> %s: %v (state %s), want allowed", from, to, err, ls.state)
				}
				continue
			}
			if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "sb-1") {
				t.Errorf("%s -> %s: %v, want a conflict naming the sandbox", from, to, err)
			}
			if ls.state != from {
				t.Errorf("%s -> %s refused but the state became %s", from, to, ls.state)
			}
		}
	}
	// the reasons people read
	ls := &live{state: sandbox.Paused, rec: &store.Sandbox{ID: "sb-2"}}
	if err := ls.transition(sandbox.Finishing); err == nil || !strings.Contains(err.Error(), "paused: resume it first") {
		t.Errorf("finish a paused sandbox: %v", err)
	}
	ls.state = sandbox.Resetting
	if err := ls.transition(sandbox.Resetting); err == nil || !strings.Contains(err.Error(), "being reset") {
		t.Errorf("reset twice: %v", err)
	}
	if s := sandbox.State(42).String(); s != "State(42)" {
		t.Errorf("unknown state prints %q", s)
	}
}
