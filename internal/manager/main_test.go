package manager

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/templatetest"
)

// TestMain removes the package's shared template store after its tests.
func TestMain(m *testing.M) { templatetest.Main(m) }

// testTemplates is the package's shared template store.
func testTemplates(t testing.TB) *template.Store { return templatetest.Store(t) }
