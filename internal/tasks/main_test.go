package tasks

import (
	"os"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/template"
)

// TestMain removes the package's shared template store after its tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if sharedTemplateDir != "" {
		_ = os.RemoveAll(sharedTemplateDir)
	}
	os.Exit(code)
}

// sharedTemplateDir holds sharedTemplates' store ("": not made yet).
var sharedTemplateDir string

// sharedTemplates is one template store for every manager of the
// package's tests. Templates are immutable and the store is safe for
// concurrent use; building the host template in a fresh store took a
// few hundred milliseconds, paid again by every test for the same
// template.
var sharedTemplates = sync.OnceValues(func() (*template.Store, error) {
	dir, err := os.MkdirTemp("", "airlock-tasks-test-templates-")
	if err != nil {
		return nil, err
	}
	sharedTemplateDir = dir
	return template.Open(dir)
})

// testTemplates is sharedTemplates, or the test's failure.
func testTemplates(t testing.TB) *template.Store {
	t.Helper()
	tpls, err := sharedTemplates()
	if err != nil {
		t.Fatal(err)
	}
	return tpls
}
