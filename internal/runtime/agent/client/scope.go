package client

import (
	"context"
	"fmt"
	"slices"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// RestrictWrites implements runtime.WriteScoper. The agent enforces the
// scope with a stacked, write-only Landlock layer on its spawner thread
// (every later command inherits it) and on the thread of every later file
// operation; the paths are validated and resolved there too.
func (c *Client) RestrictWrites(ctx context.Context, paths []string) (runtime.ScopeInfo, error) {
	m, err := c.call(ctx, &proto.Message{Op: proto.OpRestrictWrites, Scope: &proto.WriteScope{Paths: paths}})
	if err != nil {
		if m != nil && m.Op == proto.OpError {
			return runtime.ScopeInfo{}, AgentError("restrict writes", m)
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
	c.scopeMu.Lock()
	c.scope = &info
	c.scopeMu.Unlock()
	return cloneScope(info), nil
}

// WriteScope is a copy of the scope in force, for Info; nil: none.
func (c *Client) WriteScope() *runtime.ScopeInfo {
	c.scopeMu.Lock()
	defer c.scopeMu.Unlock()
	if c.scope == nil {
		return nil
	}
	si := cloneScope(*c.scope)
	return &si
}

func cloneScope(si runtime.ScopeInfo) runtime.ScopeInfo {
	si.Paths, si.Scratch = slices.Clone(si.Paths), slices.Clone(si.Scratch)
	return si
}
