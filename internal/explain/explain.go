// Package explain is the policy explain module: what a running
// sandbox's effective policy is, and what it would decide of a command
// line (grants and overrides included), running and recording nothing.
// The core keeps the policy gate every exec passes; this only answers.
package explain

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
)

// Explain is the module. Attach it to the manager (Config.Modules)
// before any call: unattached, every call is refused as unsupported.
type Explain struct{ c hook.Core }

// New returns the module, not yet attached.
func New() *Explain { return &Explain{} }

// Name is the module's name.
func (*Explain) Name() string { return "explain" }

// Attach keeps the core's handle.
func (e *Explain) Attach(c hook.Core) error {
	e.c = c
	return nil
}

// Policy is a live sandbox's effective policy (not to be modified); a
// stopped one is a conflict, an unknown one not found.
func (e *Explain) Policy(ctx context.Context, id string) (*policy.Policy, error) {
	if e.c == nil {
		return nil, fmt.Errorf("the policy explain module is not attached to a sandbox core: %w", errdefs.ErrUnsupported)
	}
	li, ok := e.c.Live(id)
	if !ok {
		if _, err := e.c.State(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	return li.Policy, nil
}

// Check is what sandbox id's policy would decide for argv in cwd (""
// : policy.DefaultCwd), lifted as an exec would be (a lift's error
// fails it closed).
func (e *Explain) Check(ctx context.Context, id string, argv []string, cwd string) (*policy.Decision, error) {
	pol, err := e.Policy(ctx, id)
	if err != nil {
		return nil, err
	}
	if cwd == "" {
		cwd = policy.DefaultCwd
	}
	d := pol.Decide(pol.AnalyzeArgv(argv, cwd))
	if err := e.c.Lift(ctx, id, d); err != nil {
		return nil, err
	}
	return d, nil
}
