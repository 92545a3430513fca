package archtest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// module is this module's path; table rows and entries are relative to it.
const module = "github.com/airlock-dev/airlock"

// tableHeading introduces the table in ARCHITECTURE.md.
const tableHeading = "## Packages and who may import them"

// row is one package's row of the table.
type row struct {
	Pkg  string // module-relative, "internal/api"
	What string
	// Imports lists what the package may import: module-relative packages
	// and third-party path prefixes. AnyInternal is "anything in internal".
	Imports     []string
	AnyInternal bool
	Line        int // in ARCHITECTURE.md, for messages
}

// Universal says the row's package may be imported by any package without
// being listed, as its "what" cell declares.
func (r row) universal() bool { return strings.Contains(r.What, "any package may import it") }

// Pure says the row claims the package does no I/O of its own.
func (r row) pure() bool { return strings.HasPrefix(r.What, "pure") }

// thirdPartyNames are the short names the table uses for third-party
// modules; any other third-party entry is spelled as its path prefix
// (mvdan.cc/sh, modernc.org/sqlite).
var thirdPartyNames = map[string]string{
	"x/sys": "golang.org/x/sys",
	"x/net": "golang.org/x/net",
	"yaml":  "go.yaml.in/yaml/v3",
}

// noImports are the cells that mean "imports nothing" (third-party
// included: a row that uses x/sys lists it).
var noImports = map[string]bool{"—": true, "nothing of airlock's": true}

// topLevel are the module's public packages, named as they are (every
// other bare name is a package under internal/).
var topLevel = map[string]bool{"sdk": true, "wire": true}

var parenthetical = regexp.MustCompile(`\s*\([^)]*\)`)

// parseTable reads the table that follows tableHeading in an
// ARCHITECTURE.md text. A malformed row is an error, never skipped.
func parseTable(md string) ([]row, error) {
	lines := strings.Split(md, "\n")
	start := slices.Index(lines, tableHeading)
	if start < 0 {
		return nil, fmt.Errorf("no %q heading", tableHeading)
	}
	var rows []row
	inTable := false
	for i := start + 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			continue
		}
		if !inTable { // the header and its separator
			inTable = true
			i++
			continue
		}
		r, err := parseRow(l, i+1)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no rows under %q", tableHeading)
	}
	return rows, nil
}

func parseRow(l string, line int) (row, error) {
	cells := strings.Split(l, "|")
	if len(cells) != 5 || cells[0] != "" || cells[4] != "" {
		return row{}, fmt.Errorf("ARCHITECTURE.md:%d: want | package | what | may import |, got %q", line, l)
	}
	r := row{
		Pkg:  strings.Trim(strings.TrimSpace(cells[1]), "`"),
		What: strings.TrimSpace(cells[2]),
		Line: line,
	}
	imports := strings.TrimSpace(cells[3])
	if noImports[imports] {
		return r, nil
	}
	for _, e := range strings.Split(imports, ",") {
		e = strings.TrimSpace(parenthetical.ReplaceAllString(e, ""))
		switch {
		case e == "anything in internal":
			r.AnyInternal = true
		case e == "":
			return row{}, fmt.Errorf("ARCHITECTURE.md:%d: an empty entry in %q", line, imports)
		case thirdPartyNames[e] != "":
			r.Imports = append(r.Imports, thirdPartyNames[e])
		case isThirdParty(e), topLevel[e], strings.HasPrefix(e, "cmd/"), strings.HasPrefix(e, "test/"):
			r.Imports = append(r.Imports, e)
		default:
			r.Imports = append(r.Imports, "internal/"+e)
		}
	}
	return r, nil
}

// isThirdParty says an import path is outside the module and the standard
// library: its first element is a host name (it has a dot), as the go
// command itself tells them apart.
func isThirdParty(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return strings.Contains(first, ".") && p != module && !strings.HasPrefix(p, module+"/")
}

// relative returns an import path relative to the module, and whether it
// is in the module at all.
func relative(p string) (string, bool) {
	rel, ok := strings.CutPrefix(p, module+"/")
	return rel, ok
}

// underPrefix says path p is prefix itself or a package below it.
func underPrefix(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// check compares the table with the packages' imports (module-relative
// package -> its non-test imports, full paths) and returns every
// disagreement: a package without a row, a row without a package, an
// import its row does not list, and an entry the package does not import
// (so the table says what the code does, not what it once did).
// Standard-library imports are not the table's business.
func check(rows []row, pkgs map[string][]string) []string {
	var errs []string
	byPkg := map[string]row{}
	universal := map[string]bool{}
	for _, r := range rows {
		if _, dup := byPkg[r.Pkg]; dup {
			errs = append(errs, fmt.Sprintf("ARCHITECTURE.md:%d: a second row for %s", r.Line, r.Pkg))
		}
		byPkg[r.Pkg] = r
		if r.universal() {
			universal[r.Pkg] = true
		}
		if _, ok := pkgs[r.Pkg]; !ok {
			errs = append(errs, fmt.Sprintf("ARCHITECTURE.md:%d: a row for %s, which is no package of the module", r.Line, r.Pkg))
		}
	}
	for _, p := range sortedKeys(pkgs) {
		r, ok := byPkg[p]
		if !ok {
			errs = append(errs, fmt.Sprintf("package %s has no row in ARCHITECTURE.md's table", p))
			continue
		}
		errs = append(errs, checkRow(r, pkgs[p], byPkg, universal)...)
	}
	return errs
}

// checkRow checks one package's imports against its row.
func checkRow(r row, imports []string, byPkg map[string]row, universal map[string]bool) []string {
	var errs []string
	used := map[string]bool{}
	for _, imp := range imports {
		rel, inModule := relative(imp)
		if !inModule && !isThirdParty(imp) {
			continue // the standard library
		}
		name := imp
		if inModule {
			name = rel
		}
		if inModule && (universal[rel] || (r.AnyInternal && strings.HasPrefix(rel, "internal/"))) {
			used[rel] = true
			continue
		}
		i := slices.IndexFunc(r.Imports, func(e string) bool {
			if inModule {
				return e == rel
			}
			return underPrefix(imp, e)
		})
		if i < 0 {
			errs = append(errs, fmt.Sprintf("ARCHITECTURE.md:%d: %s imports %s, which its row does not list", r.Line, r.Pkg, name))
			continue
		}
		used[r.Imports[i]] = true
	}
	for _, e := range r.Imports {
		if _, isRow := byPkg[e]; !isRow && !isThirdParty(e) {
			errs = append(errs, fmt.Sprintf("ARCHITECTURE.md:%d: %s's row lists %s, which has no row (no such package)", r.Line, r.Pkg, e))
		} else if !used[e] {
			errs = append(errs, fmt.Sprintf("ARCHITECTURE.md:%d: %s's row lists %s, which it does not import", r.Line, r.Pkg, e))
		}
	}
	return errs
}

// ioImports are the packages through which a package does I/O of its
// own: files, processes, the network, system calls, a database, logs. A
// pure package imports none of them, directly or through the module's
// packages it imports (time is allowed: its types are needed, and the
// clock is passed in). Third-party packages a pure row lists are trusted
// by name, not walked.
var ioImports = []string{
	"os", "os/exec", "os/signal", "os/user", "io/ioutil", "syscall", "plugin",
	"net", "net/http", "net/rpc", "net/smtp", "database/sql", "log", "log/slog", "log/syslog",
	"crypto/rand", "golang.org/x/sys/unix", "modernc.org/sqlite",
}

// checkPure checks the package pkg (module-relative) and every module
// package it reaches for ioImports. known maps a module package that pkg
// is known to reach although it does I/O to the reason; it is not checked
// itself (what it reaches still is), and an entry pkg no longer reaches is
// an error, so the exception leaves with the violation.
func checkPure(pkg string, pkgs map[string][]string, known map[string]string) []string {
	var errs []string
	seen := map[string]bool{}
	reachedKnown := map[string]bool{}
	var walk func(p, via string)
	walk = func(p, via string) {
		if seen[p] {
			return
		}
		seen[p] = true
		if _, ok := known[p]; ok {
			reachedKnown[p] = true
		}
		for _, imp := range pkgs[p] {
			if rel, ok := relative(imp); ok {
				walk(rel, via+" -> "+rel)
				continue
			}
			if _, ok := known[p]; !ok && slices.Contains(ioImports, imp) {
				errs = append(errs, fmt.Sprintf("%s is pure but reaches %s, which imports %s", pkg, via, imp))
			}
		}
	}
	walk(pkg, pkg)
	for _, k := range sortedKeys(known) {
		if !reachedKnown[k] {
			errs = append(errs, fmt.Sprintf("%s no longer reaches %s: remove its exception (%s)", pkg, k, known[k]))
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
