package hook

import (
	"context"
	"fmt"
	"slices"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// Named is an ability with its module's name (a refusal names it; an
// ExecHook's kept state is filed under it).
type Named[H any] struct {
	Name string
	Hook H
}

// Set is the modules' abilities, each list in module order, as Attach
// sorted them. The singletons (Holder, Bundler, Network) are nil when no
// module has them.
type Set struct {
	Create    []Named[CreateHook]
	Exec      []Named[ExecHook]
	AfterExec []Named[AfterExecHook]
	Stop      []Named[StopHook]
	Templates []Named[TemplateSource]
	Secrets   []Named[SecretSource]
	Brokers   []Named[BrokerSource]
	TaskEnd   []Named[TaskEndHook]
	Lifts     []Named[PolicyLift]
	Admit     []Named[Admitter]
	Defaults  []Named[Defaulter]
	Holder    *Named[Holder]
	Bundler   TaskBundler
	// Network is the network module's egress service (NetworkModule);
	// nil: sandboxes have no network.
	Network Network
	// Pool is the warm pool module (nil: every Create starts a sandbox).
	Pool WarmPool
}

// Attach attaches mods in order, each with the handle c, and files
// their abilities in s as it goes (a module's Attach sees those of the
// modules before it). A module without a name of its own, an Attach
// error or a second Holder, TaskBundler, Network or WarmPool fails it.
func (s *Set) Attach(mods []Module, c Core) error {
	seen := map[string]bool{}
	for _, mod := range mods {
		name := mod.Name()
		if name == "" || seen[name] {
			return fmt.Errorf("module %q: a module needs a name of its own: %w", name, errdefs.ErrInvalid)
		}
		seen[name] = true
		if err := mod.Attach(c); err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
		s.add(name, mod)
		if err := s.addSingletons(name, mod); err != nil {
			return err
		}
	}
	return nil
}

// add files mod's abilities that any number of modules may have.
func (s *Set) add(name string, mod Module) {
	if h, ok := mod.(CreateHook); ok {
		s.Create = append(s.Create, Named[CreateHook]{name, h})
	}
	if h, ok := mod.(ExecHook); ok {
		s.Exec = append(s.Exec, Named[ExecHook]{name, h})
	}
	if h, ok := mod.(AfterExecHook); ok {
		s.AfterExec = append(s.AfterExec, Named[AfterExecHook]{name, h})
	}
	if h, ok := mod.(StopHook); ok {
		s.Stop = append(s.Stop, Named[StopHook]{name, h})
	}
	if h, ok := mod.(TemplateSource); ok {
		s.Templates = append(s.Templates, Named[TemplateSource]{name, h})
	}
	if h, ok := mod.(SecretSource); ok {
		s.Secrets = append(s.Secrets, Named[SecretSource]{name, h})
	}
	if h, ok := mod.(BrokerSource); ok {
		s.Brokers = append(s.Brokers, Named[BrokerSource]{name, h})
	}
	if h, ok := mod.(TaskEndHook); ok {
		s.TaskEnd = append(s.TaskEnd, Named[TaskEndHook]{name, h})
	}
	if h, ok := mod.(PolicyLift); ok {
		s.Lifts = append(s.Lifts, Named[PolicyLift]{name, h})
	}
	if h, ok := mod.(Admitter); ok {
		s.Admit = append(s.Admit, Named[Admitter]{name, h})
	}
	if h, ok := mod.(Defaulter); ok {
		s.Defaults = append(s.Defaults, Named[Defaulter]{name, h})
	}
}

// addSingletons takes mod's Network (a NetworkModule that runs one),
// Holder and TaskBundler: at most one module may have each.
func (s *Set) addSingletons(name string, mod Module) error {
	if nm, ok := mod.(NetworkModule); ok {
		if n := nm.Network(); n != nil {
			if s.Network != nil {
				return fmt.Errorf("module %s: a second network module (sandboxes have one network): %w", name, errdefs.ErrInvalid)
			}
			s.Network = n
		}
	}
	if h, ok := mod.(Holder); ok {
		if s.Holder != nil {
			return fmt.Errorf("module %s: a second approvals holder (%s holds commands already): %w", name, s.Holder.Name, errdefs.ErrInvalid)
		}
		s.Holder = &Named[Holder]{name, h}
	}
	if b, ok := mod.(TaskBundler); ok {
		if s.Bundler != nil {
			return fmt.Errorf("module %s: a second bundle writer (a task has one bundle): %w", name, errdefs.ErrInvalid)
		}
		s.Bundler = b
	}
	if p, ok := mod.(WarmPool); ok {
		if s.Pool != nil {
			return fmt.Errorf("module %s: a second warm pool (a create takes from one): %w", name, errdefs.ErrInvalid)
		}
		s.Pool = p
	}
	return nil
}

// Lift lets the PolicyLifts relax d for sandbox id, in module order; the
// first error stops it (the call fails closed).
func (s *Set) Lift(ctx context.Context, id string, d *policy.Decision) error {
	for _, h := range s.Lifts {
		if err := h.Hook.Lift(ctx, id, d); err != nil {
			return err
		}
	}
	return nil
}

// SecretEnv is what the SecretSources give a command of sb, in module
// order (see SecretSource.SecretEnv).
func (s *Set) SecretEnv(ctx context.Context, sb SandboxRef) ([]string, []map[string]any, error) {
	var env []string
	var uses []map[string]any
	for _, h := range s.Secrets {
		e, u, err := h.Hook.SecretEnv(ctx, sb)
		if err != nil {
			return nil, nil, err
		}
		env, uses = append(env, e...), append(uses, u...)
	}
	return env, uses, nil
}

// GrantedVars are the variables the SecretSources put into sandboxID's
// commands, each once.
func (s *Set) GrantedVars(ctx context.Context, sandboxID string) []string {
	var vars []string
	for _, h := range s.Secrets {
		for _, v := range h.Hook.GrantedVars(ctx, sandboxID) {
			if !slices.Contains(vars, v) {
				vars = append(vars, v)
			}
		}
	}
	return vars
}

// BrokeredSecrets adds the BrokerSources' secrets of sandboxID to p (a
// copy: p.Secrets may be a sandbox policy's own slice).
func (s *Set) BrokeredSecrets(ctx context.Context, sandboxID string, p egress.Policy) (egress.Policy, error) {
	for _, h := range s.Brokers {
		l, err := h.Hook.BrokeredSecrets(ctx, sandboxID)
		if err != nil {
			return p, err
		}
		if len(l) > 0 {
			p.Secrets = append(slices.Clone(p.Secrets), l...)
		}
	}
	return p, nil
}

// TaskEnded runs the TaskEndHooks, in module order, for sb's task; the
// first error stops it.
func (s *Set) TaskEnded(ctx context.Context, sb SandboxRef) error {
	for _, h := range s.TaskEnd {
		if err := h.Hook.OnTaskEnd(ctx, sb); err != nil {
			return err
		}
	}
	return nil
}

// Template is the first TemplateSource's template name, in module order;
// false: none has it.
func (s *Set) Template(ctx context.Context, name string) (*sandbox.Base, bool) {
	for _, src := range s.Templates {
		if b, err := src.Hook.Template(ctx, name); err == nil {
			return b, true
		}
	}
	return nil, false
}

// TemplateList is every TemplateSource's templates, in module order.
func (s *Set) TemplateList(ctx context.Context) ([]*sandbox.TemplateInfo, error) {
	var out []*sandbox.TemplateInfo
	for _, src := range s.Templates {
		more, err := src.Hook.Templates(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// Noters are the EgressNoters the ExecHooks kept for one exec (keep: its
// ExecCall.Keep by module name), in module order.
func (s *Set) Noters(keep map[string]any) []EgressNoter {
	var out []EgressNoter
	for _, h := range s.Exec {
		if n, ok := keep[h.Name].(EgressNoter); ok {
			out = append(out, n)
		}
	}
	return out
}
