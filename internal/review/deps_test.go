package review

import (
	"reflect"
	"testing"

	"github.com/airlock-dev/airlock/internal/bundle"
)

// Dependency changes are read from the patch's go.mod, package.json and
// requirements lines (a version removed and added back is no change;
// package.json's own fields are none), and the lockfiles it touches are
// named.
func TestDependenciesFromThePatch(t *testing.T) {
	patch := `diff --git a/go.mod b/go.mod
--- a/go.mod
+++ b/go.mod
-	example.test/old v1.0.0
+	example.test/old v1.1.0
+require example.test/new v0.2.0 // indirect
-	example.test/gone v3.0.0
-	example.test/same v1.0.0
+	example.test/same v1.0.0
diff --git a/web/package.json b/web/package.json
--- a/web/package.json
+++ b/web/package.json
-  "version": "1.0.0",
+  "version": "1.0.1",
+  "left-pad": "^1.3.0",
+  "engines": "node >=18"
diff --git a/requirements-dev.txt b/requirements-dev.txt
+++ b/requirements-dev.txt
+requests==2.31.0
+++ b/web/package-lock.json
+{}
+++ b/go.sum
+x
+++ b/README
+not a dependency
`
	got := dependencies(patch)
	want := bundle.Dependencies{
		Changes: []bundle.DependencyChange{
			{Manager: "go", Name: "example.test/old", From: "v1.0.0", To: "v1.1.0", Change: "changed"},
			{Manager: "go", Name: "example.test/new", To: "v0.2.0", Change: "added"},
			{Manager: "go", Name: "example.test/gone", From: "v3.0.0", Change: "removed"},
			{Manager: "npm", Name: "left-pad", To: "^1.3.0", Change: "added"},
			{Manager: "pip", Name: "requests", To: "2.31.0", Change: "added"},
		},
		Lockfiles: []string{"web/package-lock.json", "go.sum"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dependencies:\n got %+v\nwant %+v", got, want)
	}
	if d := dependencies(""); d.Changes == nil || d.Lockfiles == nil || len(d.Changes)+len(d.Lockfiles) != 0 {
		t.Errorf("no patch: %+v", d)
	}
}
