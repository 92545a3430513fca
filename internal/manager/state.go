package manager

import (
	"fmt"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// legal lists, per state, the states it may move to. Stopped may follow
// any state (a sandbox may be destroyed, or expire, at any time) and is
// final.
var legal = map[sandbox.State][]sandbox.State{
	sandbox.Running:   {sandbox.Paused, sandbox.Resetting, sandbox.Finishing, sandbox.Stopped},
	sandbox.Paused:    {sandbox.Running, sandbox.Resetting, sandbox.Stopped},
	sandbox.Resetting: {sandbox.Running, sandbox.Stopped},
	sandbox.Finishing: {sandbox.Running, sandbox.Stopped},
	sandbox.Stopped:   nil,
}

// transition moves ls to state to, or says why it may not (an
// ErrConflict naming the sandbox and its state); m.mu held.
func (ls *live) transition(to sandbox.State) error {
	for _, ok := range legal[ls.state] {
		if ok == to {
			ls.state = to
			return nil
		}
	}
	return fmt.Errorf("sandbox %s is %s: %w", ls.rec.ID, stateWhy(ls.state, to), errdefs.ErrConflict)
}

// stateWhy is the clear reason a sandbox in state from cannot go to to.
func stateWhy(from, to sandbox.State) string {
	switch {
	case from == sandbox.Resetting:
		return "being reset"
	case from == sandbox.Finishing:
		return "being finished with its task"
	case from == to:
		return "already " + from.String()
	case from == sandbox.Paused:
		return "paused: resume it first"
	}
	return fmt.Sprintf("%s (it cannot become %s)", from, to)
}
