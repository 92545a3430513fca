package bundle

import (
	"fmt"
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
