// Package templatetest shares one template store among a test package's
// managers: templates are immutable and the store is safe for concurrent
// use, while building the host template in a fresh store took a few
// hundred milliseconds, paid again by every test for the same template.
package templatetest

import (
	"os"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/template"
)

var (
	dir    string // the shared store's ("": not made yet)
	shared = sync.OnceValues(func() (*template.Store, error) {
		d, err := os.MkdirTemp("", "airlock-test-templates-")
		if err != nil {
			return nil, err
		}
		dir = d
		return template.Open(d)
	})
)

// Store is the package's shared store, or the test's failure.
func Store(t testing.TB) *template.Store {
	t.Helper()
	s, err := shared()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Main runs the package's tests (from its TestMain) and then removes the
// shared store.
func Main(m *testing.M) {
	code := m.Run()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}
