package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// knownImpure are the module packages a pure package is known to reach
// although they do I/O, each with the reason (checkPure fails once an
// entry is not needed). There are none: internal/policy reaches the
// egress rule model through internal/netpolicy, not the proxy (issue 18
// item 5 removed the one exception there was).
var knownImpure = map[string]map[string]string{}

// mustBePure are the packages whose rows must say "pure", so that the
// claim cannot leave the table unnoticed: the policy plane decides on the
// host from text alone, the lockfile reader and the tar filter parse
// untrusted bytes, the exec output keeper decides what of a secret could
// reach a record, and the request bounds are every door's first check.
var mustBePure = []string{"internal/policy", "internal/classify", "internal/classify/engine", "internal/netpolicy", "internal/lockfile", "internal/execout", "internal/tarfilter", "internal/reqcheck"}

// TestArchitectureTable fails when a package's imports disagree with its
// row of ARCHITECTURE.md's table: an import not listed, a listed import
// not made, a row for no package, a package without a row. Only non-test
// code counts: tests may import what they exercise (a backend, the
// conformance suite).
func TestArchitectureTable(t *testing.T) {
	rows, pkgs := load(t)
	for _, e := range check(rows, pkgs) {
		t.Error(e)
	}
}

// TestPurePackages fails when a package whose row says "pure" reaches,
// through the module's packages, one that does I/O of its own, or when a
// package of mustBePure has no row that says so.
func TestPurePackages(t *testing.T) {
	rows, pkgs := load(t)
	pure := map[string]bool{}
	for _, r := range rows {
		pure[r.Pkg] = r.pure()
	}
	for _, p := range mustBePure {
		if !pure[p] {
			t.Errorf("%s's row in ARCHITECTURE.md does not say pure", p)
		}
	}
	n := 0
	for _, r := range rows {
		if !r.pure() {
			continue
		}
		n++
		for _, e := range checkPure(r.Pkg, pkgs, knownImpure[r.Pkg]) {
			t.Error(e)
		}
	}
	if n == 0 {
		t.Fatal("no row of ARCHITECTURE.md's table says pure: the purity check checked nothing")
	}
}

// load parses the repository's ARCHITECTURE.md and lists the module's
// packages with `go list`. Either failing fails the test: the layering is
// never assumed.
func load(t *testing.T) ([]row, map[string][]string) {
	t.Helper()
	root := moduleRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseTable(string(md))
	if err != nil {
		t.Fatal(err)
	}
	return rows, listPackages(t, root)
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not in a module")
	}
	return filepath.Dir(gomod)
}

// listPackages returns each package of the module (module-relative) with
// its non-test imports.
func listPackages(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.Bytes())
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		rel, ok := relative(p.ImportPath)
		if !ok {
			t.Fatalf("go list: %s is not in module %s", p.ImportPath, module)
		}
		pkgs[rel] = p.Imports
	}
	if len(pkgs) == 0 {
		t.Fatal("go list: no packages")
	}
	return pkgs
}
