package classify

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// groupDirs are the packages whose Handler is in groups, in that order.
var groupDirs = []string{"shelltools", "inline", "git", "node", "python", "devtools"}

// handlerNames reads the program names of a group's Handler switch from
// its source: a switch cannot be listed at run time.
func handlerNames(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(dir, "tools.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "Handler" {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				lit, ok := e.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: a case of Handler that is not a string literal", dir)
				}
				s, _ := strconv.Unquote(lit.Value)
				names = append(names, s)
			}
			return false // the handlers' own switches are not the table
		})
	}
	if len(names) == 0 {
		t.Fatalf("%s: no Handler cases found", dir)
	}
	return names
}

// TestNoProgramHasTwoHandlers: two groups naming one program is a mistake
// in the tables, never a silent choice of the first.
func TestNoProgramHasTwoHandlers(t *testing.T) {
	if len(groupDirs) != len(groups) {
		t.Fatalf("groupDirs lists %d groups, the catalogue has %d", len(groupDirs), len(groups))
	}
	seen := map[string]string{}
	for i, dir := range groupDirs {
		for _, name := range handlerNames(t, dir) {
			if other, dup := seen[name]; dup {
				t.Errorf("%s has a handler in %s and in %s", name, other, dir)
			}
			seen[name] = dir
			// the source read is the table the catalogue asks
			if groups[i](name) == nil || handler(name) == nil {
				t.Errorf("%s: %s is in the source but has no handler", dir, name)
			}
		}
	}
	if len(seen) < 150 {
		t.Fatalf("only %d programs read from the tables", len(seen))
	}
}

// TestCatalogHasEveryGroup: each group's table reaches the catalogue.
func TestCatalogHasEveryGroup(t *testing.T) {
	cat := catalog()
	for _, name := range []string{"sh", "sed", "git", "npm", "pip", "go", "docker", "kubectl", "ruby"} {
		if cat.Handler(name) == nil {
			t.Errorf("no handler for %s", name)
		}
	}
	if cat.Handler("no-such-program") != nil || cat.Simple("no-such-program") != "" || cat.ReadOnly("no-such-program") {
		t.Error("an unknown program is in a table")
	}
	if !cat.ReadOnly("ls") || cat.Simple("cmake") != engine.Build {
		t.Error("the read-only and simple tables are not wired")
	}
	if cat.Family == nil || cat.Family("python3.12") == nil || cat.Family("ls") != nil {
		t.Error("the Python family is not wired")
	}
}
