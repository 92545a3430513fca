package archtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The classifier is layered inside internal/classify: the top package
// (the public entry, which wires the catalogue) imports the knowledge
// packages, which import the engine; the engine imports no knowledge
// package. Nothing under it imports anything of airlock's but its own
// packages and lazyre, so a knowledge package never reaches policy,
// egress or the manager, and the rest of airlock imports the top package
// only, so the entry stays where its importers look.
const classifyRoot = "internal/classify"

// classifyBase are the packages of the classifier below its knowledge:
// each may import only those listed for it (of the module, lazyre aside).
var classifyBase = map[string][]string{
	"internal/classify/secretnames": nil,
	"internal/classify/engine":      {"internal/classify/secretnames"},
	"internal/classify/pkgrun":      {"internal/classify/engine"},
}

func isBaseOf(p string) bool { _, ok := classifyBase[p]; return ok }

// TestClassifierLayering fails when the classifier's packages import
// across their layers (see classifyLayering).
func TestClassifierLayering(t *testing.T) {
	_, pkgs := load(t)
	for _, e := range classifyLayering(pkgs) {
		t.Error(e)
	}
}

// classifyLayering checks the module's import graph (module-relative
// package -> full import paths) against the classifier's layers.
func classifyLayering(pkgs map[string][]string) []string {
	var errs []string
	knowledge := 0
	for _, p := range sortedKeys(pkgs) {
		inside := strings.HasPrefix(p, classifyRoot+"/")
		base, isBase := classifyBase[p]
		if inside && !isBase {
			knowledge++
		}
		for _, imp := range pkgs[p] {
			rel, ok := relative(imp)
			if !ok || rel == "internal/lazyre" || rel == p {
				continue
			}
			sub := strings.HasPrefix(rel, classifyRoot+"/")
			switch {
			case !inside && p != classifyRoot && sub:
				errs = append(errs, fmt.Sprintf("%s imports %s: outside the classifier, import %s", p, rel, classifyRoot))
			case inside && !sub:
				errs = append(errs, fmt.Sprintf("%s imports %s: the classifier's packages import only each other (and lazyre)", p, rel))
			case isBase && !slices.Contains(base, rel):
				errs = append(errs, fmt.Sprintf("%s imports %s: below the knowledge packages it may import only %v", p, rel, base))
			case inside && sub && !isBase && !isBaseOf(rel):
				errs = append(errs, fmt.Sprintf("%s imports %s: a knowledge package imports the engine, secretnames and pkgrun, not another", p, rel))
			}
		}
	}
	for p := range classifyBase {
		if _, ok := pkgs[p]; !ok {
			errs = append(errs, p+" is gone: the classifier's layers this test checks changed")
		}
	}
	if knowledge == 0 {
		errs = append(errs, "no knowledge package under "+classifyRoot+": the layout this test checks is gone")
	}
	return errs
}

// TestClassifyLayeringCatchesEachKind: on a graph with one wrong import
// of each kind the check reports exactly those.
func TestClassifyLayeringCatchesEachKind(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	pkgs := map[string][]string{
		"internal/classify":             {m("internal/classify/engine"), m("internal/classify/git")},
		"internal/classify/engine":      {m("internal/classify/secretnames"), m("internal/classify/git"), m("internal/lazyre")},
		"internal/classify/secretnames": {"strings"},
		"internal/classify/pkgrun":      {m("internal/classify/engine")},
		"internal/classify/git":         {m("internal/classify/engine"), m("internal/classify/node"), m("internal/policy")},
		"internal/classify/node":        {m("internal/classify/engine"), m("internal/classify/pkgrun")},
		"internal/policy":               {m("internal/classify"), m("internal/classify/engine")},
	}
	got := classifyLayering(pkgs)
	want := []string{
		"internal/classify/engine imports internal/classify/git",
		"internal/classify/git imports internal/classify/node",
		"internal/classify/git imports internal/policy",
		"internal/policy imports internal/classify/engine",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+":") {
			t.Errorf("error %d: got %q, want %q...", i, got[i], w)
		}
	}
	if errs := classifyLayering(map[string][]string{"internal/classify": nil}); len(errs) != 4 {
		t.Errorf("a graph without the layers: %v, want 4 errors (3 base packages gone, no knowledge)", errs)
	}
}
