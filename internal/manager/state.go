package manager

import (
	"fmt"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// State is where a live sandbox is in its life. It is held by the live
// record (m.mu) and changed only through transition, so that every rule
// about what may follow what is in this one file.
type State int

// The states of a sandbox. Running, Paused and Stopped are what the store
// records (see record); Resetting and Finishing are the daemon's own and
// are recorded as running.
const (
	Running   State = iota
	Paused          // frozen (Pause); nothing runs until Resume
	Resetting       // being started over from its template (Reset)
	Finishing       // its task is being finished: only the task's tests run
	Stopped         // destroyed, expired, lost or failed; no longer live
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Paused:
		return "paused"
	case Resetting:
		return "resetting"
	case Finishing:
		return "finishing"
	case Stopped:
		return "stopped"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// legal lists, per state, the states it may move to. Stopped may follow
// any state (a sandbox may be destroyed, or expire, at any time) and is
// final.
var legal = map[State][]State{
	Running:   {Paused, Resetting, Finishing, Stopped},
	Paused:    {Running, Resetting, Stopped},
	Resetting: {Running, Stopped},
	Finishing: {Running, Stopped},
	Stopped:   nil,
}

// transition moves ls to state to, or says why it may not (an
// ErrConflict naming the sandbox and its state); m.mu held.
func (ls *live) transition(to State) error {
	for _, ok := range legal[ls.state] {
		if ok == to {
			ls.state = to
			return nil
		}
	}
	return fmt.Errorf("sandbox %s is %s: %w", ls.rec.ID, stateWhy(ls.state, to), errdefs.ErrConflict)
}

// stateWhy is the clear reason a sandbox in state from cannot go to to.
func stateWhy(from, to State) string {
	switch {
	case from == Resetting:
		return "being reset"
	case from == Finishing:
		return "being finished with its task"
	case from == to:
		return "already " + from.String()
	case from == Paused:
		return "paused: resume it first"
	}
	return fmt.Sprintf("%s (it cannot become %s)", from, to)
}

// FinishingError is what a command or a write is told while its
// sandbox's task is being finished (the core's, and the file API's).
func FinishingError(taskID string) error {
	return fmt.Errorf("task %s is being finished: nothing new runs or writes in its sandbox until it is done: %w", taskID, errdefs.ErrConflict)
}
