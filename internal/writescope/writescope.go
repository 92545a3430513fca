// Package writescope applies a task's write scope inside its sandbox:
// the policy's path globs become the kernel's roots (Landlock holds
// directories and files that exist, not globs), through the backend's
// runtime.WriteScoper. The policy and the review still hold the exact
// scope; this is the boundary's share of it.
package writescope

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Apply applies a write scope inside the sandbox sb: each glob's
// directory part (src/** -> /workspace/src), Landlock's granularity. A
// backend that cannot is an error: the scope never silently lapses.
// The scope is checked first, as the policy checks it (an ErrInvalid):
// cleaned, a ".." would make a root outside /workspace ("../etc/**" is
// /etc), and an empty scope, which the policy reads as anywhere, would
// confine writes to .git alone.
func Apply(ctx context.Context, sb runtime.Sandbox, scope []string) error {
	if len(scope) == 0 {
		return fmt.Errorf("an empty write scope (anywhere in %s) has nothing to confine: %w", policy.DefaultCwd, errdefs.ErrInvalid)
	}
	for _, g := range scope {
		if _, err := policy.CompileGlob(g); err != nil {
			return err
		}
	}
	ws, ok := sb.(runtime.WriteScoper)
	if !ok {
		return fmt.Errorf("backend cannot confine writes to a scope: %w", errdefs.ErrUnsupported)
	}
	// The repository's own .git stays writable so the agent can commit;
	// the host's diff reads the files alone and ignores it.
	roots := append(dirRoots(ctx, sb, scope), policy.DefaultCwd+"/.git")
	_, err := ws.RestrictWrites(ctx, roots)
	return err
}

// dirRoots are the kernel's roots for a scope: each glob's directory
// part (src/** -> /workspace/src, made if missing), and a literal path
// as itself. A literal that is not there yet (go.sum before the first
// go mod tidy) stands for its directory: the kernel holds only what
// exists, and making it (as a directory, as for a glob's part) once
// turned go.sum into a directory named go.sum. The policy and the
// review still hold the exact scope.
func dirRoots(ctx context.Context, sb runtime.Sandbox, scope []string) []string {
	f, hasFiles := sb.(runtime.Files)
	var out []string
	for _, g := range scope {
		r := policy.ScopeRoots([]string{g})[0]
		if hasFiles && r != policy.DefaultCwd && !strings.ContainsAny(g, "*?[") {
			if _, err := f.Stat(ctx, r); err != nil {
				r = path.Dir(r)
			}
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
