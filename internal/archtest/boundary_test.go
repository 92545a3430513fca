package archtest

import (
	"slices"
	"strings"
	"testing"
)

// The grouped layout shows the trust boundary: internal/runtime/... is the
// sandbox boundary (the backends, their shared host side, the in-sandbox
// agent) and internal/kernel/... the kernel primitives it is built from;
// everything else under internal/ is the daemon's domain. The domain
// reaches the primitives only through a backend, so a change to the
// boundary's primitives shows up in the backends' review, not in a
// handler's. tarball is the one domain package allowed a primitive: it
// unpacks hostile archives with pathwalk's RESOLVE_IN_ROOT.
var kernelUsers = []string{"internal/runtime/", "internal/kernel/", "internal/tarball"}

// TestKernelPrimitivesStayInTheBoundary fails when a package outside the
// boundary imports one of internal/kernel's primitives.
func TestKernelPrimitivesStayInTheBoundary(t *testing.T) {
	_, pkgs := load(t)
	seen := 0
	for p, imps := range pkgs {
		for _, imp := range imps {
			rel, ok := relative(imp)
			if !ok || !strings.HasPrefix(rel, "internal/kernel/") {
				continue
			}
			seen++
			if !inBoundary(p) {
				t.Errorf("%s imports %s: only the sandbox boundary (%s) may use the kernel primitives", p, rel, strings.Join(kernelUsers, ", "))
			}
		}
	}
	if seen == 0 {
		t.Fatal("no package imports internal/kernel/...: the layout this test checks is gone")
	}
}

func inBoundary(p string) bool {
	return slices.ContainsFunc(kernelUsers, func(u string) bool { return p == u || strings.HasSuffix(u, "/") && strings.HasPrefix(p, u) })
}

// TestInBoundary: the check itself tells the boundary from the domain.
func TestInBoundary(t *testing.T) {
	for p, want := range map[string]bool{
		"internal/runtime/native": true, "internal/kernel/cgroups": true, "internal/tarball": true,
		"internal/manager": false, "internal/api": false, "internal/tarballx": false, "cmd/airlock": false,
	} {
		if got := inBoundary(p); got != want {
			t.Errorf("inBoundary(%s) = %v, want %v", p, got, want)
		}
	}
}
