package hostside

import (
	"context"
	"errors"
	"fmt"
)

// Rollback is a stack of undo steps: a step that takes something pushes
// the undo that gives it back. Undo runs them last-pushed first, each
// once, every one even after another failed, and returns their errors
// (each named by its step) joined; Release drops them, for a Create that
// succeeded. The zero value is an empty stack; it is not safe for
// concurrent use (one Create owns it).
type Rollback struct {
	undos []undo
}

type undo struct {
	name string
	fn   func() error
}

// Push adds undo, named name, on top of the stack.
func (r *Rollback) Push(name string, fn func() error) {
	r.undos = append(r.undos, undo{name, fn})
}

// Undo runs every undo step, last-pushed first, and empties the stack.
func (r *Rollback) Undo() error {
	var errs []error
	for i := len(r.undos) - 1; i >= 0; i-- {
		u := r.undos[i]
		if err := u.fn(); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", u.name, err))
		}
	}
	r.undos = nil
	return errors.Join(errs...)
}

// Release drops every undo step without running it: what they would give
// back now belongs to the sandbox.
func (r *Rollback) Release() { r.undos = nil }

// Fail undoes the stack after err, which it returns with the undo's
// errors, if any, joined to it (so errors.Is still finds err's kind).
func (r *Rollback) Fail(err error) error {
	if uerr := r.Undo(); uerr != nil {
		return errors.Join(err, uerr)
	}
	return err
}

// Step is one named step of a Create. Run pushes onto rb the undo of
// whatever it takes (the state dir's step pushes the sandbox's whole
// teardown, which gives back everything Base holds).
type Step struct {
	Name string
	Run  func(ctx context.Context, rb *Rollback) error
}

// RunSteps runs steps in order with one Rollback. When a step fails, or
// after does, it undoes the stack and returns that error with the undo's
// errors joined (Rollback.Fail); when every step succeeded it releases
// the stack and returns nil. after, if not nil, runs after each step
// that succeeded, with its name (traces time the steps with it; tests
// inject a late failure).
func RunSteps(ctx context.Context, steps []Step, after func(step string) error) error {
	var rb Rollback
	for _, st := range steps {
		err := st.Run(ctx, &rb)
		if err == nil && after != nil {
			err = after(st.Name)
		}
		if err != nil {
			return rb.Fail(err)
		}
	}
	rb.Release()
	return nil
}
