package classify

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// TestMergeHandlersRefusesTwoForOneName: two groups naming one program
// is a mistake in the tables, never a silent choice of one.
func TestMergeHandlersRefusesTwoForOneName(t *testing.T) {
	h := func(*engine.Call) {}
	defer func() {
		if recover() == nil {
			t.Fatal("two handlers for git were merged")
		}
	}()
	mergeHandlers(map[string]engine.Handler{"git": h, "ls": h}, map[string]engine.Handler{"git": h})
}

// TestCatalogHasEveryGroup: each group's table reaches the catalogue.
func TestCatalogHasEveryGroup(t *testing.T) {
	cat := catalog()
	for _, name := range []string{"sh", "sed", "git", "npm", "pip", "go", "docker", "kubectl", "ruby"} {
		if cat.Handlers[name] == nil {
			t.Errorf("no handler for %s", name)
		}
	}
	if cat.Family == nil || cat.Family("python3.12") == nil || cat.Family("ls") != nil {
		t.Error("the Python family is not wired")
	}
}
