package hook

import (
	"context"
	"sync"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// The surface a quota module (internal/quotas) attaches through: the
// core asks it to admit each new sandbox before the backend starts
// anything, and each command before its policy. It decides on what it
// holds itself, so an admission and its count are one step (a burst of
// creates cannot all pass a check before any is counted).

// Admitter is a module that may refuse a create or an exec of a project.
// Any number may attach; the core asks them in module order.
type Admitter interface {
	// AdmitCreate reserves what a new sandbox of project, with the limits
	// it asked for (a zero field: its backend's default), holds while it
	// lives; the reservation is made before the backend starts anything
	// and a warm pool's sandbox claimed for the create counts as one
	// started. An error refuses the create: nothing was started. release
	// gives the reservation back; the core calls it once, when the create
	// fails, or when the sandbox has left the live set and its teardown
	// has ended. It must not block (it may run under the core's locks'
	// callers, never under the locks themselves).
	AdmitCreate(ctx context.Context, project string, limits runtime.Limits) (release func(), err error)
	// AdmitExec counts one command of a live sandbox of project, once the
	// core found the sandbox able to run it and before its policy: an
	// error refuses it (it is not run, and it is not recorded: a flood of
	// refused commands writes nothing).
	AdmitExec(ctx context.Context, project string) error
}

// AdmitCreate asks every Admitter, in module order, to admit a create; a
// refusal gives back what the ones before it reserved. release (never
// nil when err is nil) gives back every reservation; calling it again
// does nothing.
func (s *Set) AdmitCreate(ctx context.Context, project string, limits runtime.Limits) (release func(), err error) {
	var rels []func()
	all := func() {
		for _, r := range rels {
			r()
		}
	}
	for _, h := range s.Admit {
		r, err := h.Hook.AdmitCreate(ctx, project, limits)
		if err != nil {
			all()
			return nil, err
		}
		rels = append(rels, r)
	}
	return sync.OnceFunc(all), nil
}

// AdmitExec asks every Admitter, in module order, to admit one command;
// the first refusal is the answer.
func (s *Set) AdmitExec(ctx context.Context, project string) error {
	for _, h := range s.Admit {
		if err := h.Hook.AdmitExec(ctx, project); err != nil {
			return err
		}
	}
	return nil
}
