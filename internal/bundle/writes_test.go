package bundle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A command's writes column names the project's files and counts the
// rest by place: a Go build once filled it with cache paths (issue 19).
func TestWritesColumnCountsCachesByPlace(t *testing.T) {
	writes := []string{"/workspace/src/a.go", "go.sum", "/tmp/x"}
	for i := 0; i < 500; i++ {
		writes = append(writes, fmt.Sprintf("/home/sandbox/.cache/go-build/%02x/%d-d", i%256, i))
	}
	got := writesText(writes)
	want := "src/a.go\ngo.sum\n/tmp: 1 file(s) outside the project\n/home/sandbox/.cache: 500 file(s) outside the project"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var many []string
	for i := 0; i < 25; i++ {
		many = append(many, fmt.Sprintf("/workspace/f%d", i))
	}
	if got := writesText(many); !strings.HasSuffix(got, "f19\nand 5 more") {
		t.Errorf("25 project files: %q", got)
	}
}

// Only a write into the project after the last test run makes the
// tested state differ from the patch; a cache write does not.
func TestCacheWritesAfterTestsDoNotWarn(t *testing.T) {
	c := sampleContents()
	last := c.Tests[len(c.Tests)-1]
	after := Command{ExecID: "late", Argv: []string{"go", "vet", "./..."}, Started: last.Finished.Add(1), Ended: last.Finished.Add(2),
		Writes: []string{"/home/sandbox/.cache/go-build/aa/x"}}
	c.Commands = append(c.Commands, after)
	if q := testsQuestion(c); strings.Contains(strings.Join(q.Says, " "), "wrote files after the last test run") {
		t.Errorf("a cache write warned: %q", q.Says)
	}
	c.Commands[len(c.Commands)-1].Writes = []string{"/workspace/src/x.go"}
	if q := testsQuestion(c); !strings.Contains(strings.Join(q.Says, " "), "wrote files after the last test run") || q.Level != "warn" {
		t.Errorf("a project write did not warn: %q", q.Says)
	}
}

// The header's verdict names what needs a look, worst first, or says
// nothing was flagged.
func TestVerdictLine(t *testing.T) {
	for _, c := range []struct {
		qs   []question
		want string
	}{
		{[]question{{ID: "q-tests", Verdict: "passed", Level: "ok"}, {ID: "q-scope", Verdict: "no", Level: "ok"}},
			"Nothing was flagged: tests passed, and every question below is answered without a warning."},
		{[]question{{ID: "q-tests", Verdict: "passed, but no tests", Level: "warn"}, {ID: "q-network", Verdict: "yes", Level: "info"}},
			"Check: tests (passed, but no tests); nothing else was flagged."},
		{[]question{{ID: "q-deps", Verdict: "yes", Level: "warn"}, {ID: "q-tests", Verdict: "failed", Level: "bad"}},
			"Needs a look: tests (failed), dependencies (yes)."},
	} {
		if got := verdictLine(c.qs); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// The dependencies question names every install script and flags
// dependency code's writes outside the project as bad.
func TestDependencyScriptsAndWrites(t *testing.T) {
	q := question{Level: "ok", Verdict: "no"}
	scriptsAndWrites(&q, Dependencies{InstallScripts: []InstallScript{{Package: "a@1", Command: "npm i", Ran: false}, {Package: "b@2", Command: "npm i", Ran: true}}})
	if q.Level != "warn" || !slices.Contains(q.Items, "install script blocked: a@1 (npm i)") || !slices.Contains(q.Items, "install script ran: b@2 (npm i)") {
		t.Errorf("scripts: %+v", q)
	}
	scriptsAndWrites(&q, Dependencies{InstallScripts: []InstallScript{{Package: "c@3", Command: "npm i --ignore-scripts=false", Ran: true, Override: true}},
		FlaggedWrites: []FlaggedWrite{{Path: "/workspace/.git/hooks/pre-commit"}, {Path: "/workspace/.git/hooks/pre-commit"}}})
	if q.Level != "bad" || len(q.Alerts) != 2 || !strings.Contains(q.Alerts[1], "wrote 1 file(s)") || !strings.Contains(q.Alerts[0], "turned them back on") {
		t.Errorf("override and writes: %+v", q)
	}
}
