package archtest

import (
	"slices"
	"strings"
	"testing"
)

// A table in ARCHITECTURE.md's shape, with one mistake of each kind the
// check must catch.
const sampleMD = "# x\n\n## Packages and who may import them\n\n" +
	"| package | what | may import |\n|---|---|---|\n" +
	"| `cmd/x` | wiring | anything in internal, sdk |\n" +
	"| `sdk` | client | nothing of airlock's |\n" +
	"| `internal/a` | a | b, x/sys, gone (stale) |\n" +
	"| `internal/b` | pure: b | — |\n" +
	"| `internal/re` | regexps; any package may import it | — |\n" +
	"| `internal/ghost` | deleted | — |\n" +
	"| `internal/io` | does I/O | — |\n" +
	"\nafter the table\n| not | a row |\n"

func sampleGraph() map[string][]string {
	m := func(p string) string { return module + "/" + p }
	return map[string][]string{
		"cmd/x":          {"fmt", m("internal/a"), m("sdk"), "mvdan.cc/sh/v3/syntax"},
		"sdk":            {"net/http"},
		"internal/a":     {"os", m("internal/b"), m("internal/re"), m("internal/io"), "golang.org/x/sys/unix"},
		"internal/b":     {"strings", m("internal/re"), m("internal/io")},
		"internal/re":    {"regexp"},
		"internal/io":    {"os"},
		"internal/norow": {"fmt"},
	}
}

// TestCheckCatchesEachDisagreement proves the checker is not vacuous: on
// a table with one mistake of each kind it reports exactly those.
func TestCheckCatchesEachDisagreement(t *testing.T) {
	rows, err := parseTable(sampleMD)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 7 {
		t.Fatalf("parsed %d rows, want 7 (the line after the table is not one)", len(rows))
	}
	got := check(rows, sampleGraph())
	want := []string{
		"a row for internal/ghost, which is no package",
		"package internal/norow has no row",
		"cmd/x imports mvdan.cc/sh/v3/syntax, which its row does not list",
		"internal/a imports internal/io, which its row does not list",
		"internal/a's row lists internal/gone, which has no row",
		"internal/b imports internal/io, which its row does not list",
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
			t.Errorf("missing %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d disagreements, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}

// TestCheckCatchesStaleEntry: a listed import the package no longer makes
// is reported, so a row cannot keep a dependency that is gone.
func TestCheckCatchesStaleEntry(t *testing.T) {
	rows, err := parseTable(strings.Replace(sampleMD, "gone (stale)", "mvdan.cc/sh", 1))
	if err != nil {
		t.Fatal(err)
	}
	got := check(rows, sampleGraph())
	if !slices.ContainsFunc(got, func(g string) bool {
		return strings.Contains(g, "internal/a's row lists mvdan.cc/sh, which it does not import")
	}) {
		t.Errorf("stale entry not reported:\n%s", strings.Join(got, "\n"))
	}
}

// TestCheckPure: a pure package reaching an I/O package through the
// module is reported with the path; a known exception silences exactly
// that package, and an exception no longer needed is reported.
func TestCheckPure(t *testing.T) {
	g := sampleGraph()
	got := checkPure("internal/b", g, nil)
	if len(got) != 1 || !strings.Contains(got[0], "internal/b -> internal/io, which imports os") {
		t.Errorf("checkPure(b) = %q, want one report of internal/io's os", got)
	}
	if got := checkPure("internal/b", g, map[string]string{"internal/io": "reason"}); len(got) != 0 {
		t.Errorf("with internal/io excepted: %q, want none", got)
	}
	got = checkPure("internal/re", g, map[string]string{"internal/io": "reason"})
	if len(got) != 1 || !strings.Contains(got[0], "no longer reaches internal/io") {
		t.Errorf("unneeded exception: %q, want it reported", got)
	}
}

func TestParseTableRejectsMalformedRow(t *testing.T) {
	bad := strings.Replace(sampleMD, "| `sdk` | client | nothing of airlock's |", "| `sdk` | client |", 1)
	if _, err := parseTable(bad); err == nil {
		t.Error("a row with a missing cell parsed")
	}
	if _, err := parseTable("# no table here\n"); err == nil {
		t.Error("a file without the table parsed")
	}
}
