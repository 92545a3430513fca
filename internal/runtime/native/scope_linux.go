package native

import (
	"context"
	"fmt"
	"slices"

	"github.com/airlock-dev/airlock/internal/agent"
	"github.com/airlock-dev/airlock/internal/runtime"
)

var _ runtime.WriteScoper = (*sandbox)(nil)

// RestrictWrites implements runtime.WriteScoper. The agent enforces the
// scope with a stacked, write-only Landlock layer on its spawner thread
// (every later command inherits it) and on the thread of every later file
// operation; the paths are validated and resolved there too.
func (s *sandbox) RestrictWrites(ctx context.Context, paths []string) (runtime.ScopeInfo, error) {
	m, err := s.call(ctx, &agent.Message{Op: agent.OpRestrictWrites, Scope: &agent.WriteScope{Paths: paths}})
	if err != nil {
		if m != nil && m.Op == agent.OpError {
			return runtime.ScopeInfo{}, agentError("restrict writes", m)
		}
		return runtime.ScopeInfo{}, fmt.Errorf("restrict writes: %w", err)
	}
	if m.Scope == nil {
		return runtime.ScopeInfo{}, fmt.Errorf("restrict writes: the agent's answer has no scope")
	}
	info := runtime.ScopeInfo{Paths: m.Scope.Paths, Scratch: m.Scope.Scratch, LandlockABI: m.Scope.LandlockABI}
	if info.Paths == nil {
		info.Paths = []string{}
	}
	s.scopeMu.Lock()
	s.scope = &info
	s.scopeMu.Unlock()
	return cloneScope(info), nil
}

// writeScope is a copy of the scope in force, for Info; nil: none.
func (s *sandbox) writeScope() *runtime.ScopeInfo {
	s.scopeMu.Lock()
	defer s.scopeMu.Unlock()
	if s.scope == nil {
		return nil
	}
	c := cloneScope(*s.scope)
	return &c
}

func cloneScope(si runtime.ScopeInfo) runtime.ScopeInfo {
	si.Paths, si.Scratch = slices.Clone(si.Paths), slices.Clone(si.Scratch)
	return si
}
