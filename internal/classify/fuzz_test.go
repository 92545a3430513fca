package classify_test

import (
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/classify"
	"github.com/airlock-dev/airlock/internal/policy"
)

// FuzzClassify: any text is analysed without panicking, always gets a
// decision (from the default policy: an external test, so it may import
// policy, which imports classify), and appending a destructive command is never missed.
func FuzzClassify(f *testing.F) {
	for _, c := range classify.CorpusCommands(f) {
		f.Add(c)
	}
	for _, s := range []string{"", "'", "$(", "`", "\x00", "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}", "eval eval eval eval eval eval eval eval eval eval eval eval eval eval eval ls",
		"sh -c \"sh -c 'sh -c \\\"rm -rf /\\\"'\"", "a=$'\\x72m'; $a -rf /", "f() { f; }; f", "x | y || z && w ; v &"} {
		f.Add(s)
	}
	pol := policy.Defaults()
	f.Fuzz(func(t *testing.T, line string) {
		a := classify.Analyze(line, "")
		d := pol.Decide(a)
		if d.Action != policy.Allow && d.Action != policy.Ask && d.Action != policy.Deny {
			t.Fatalf("no decision for %q", line)
		}
		if len(a.Classes) == 0 && len(a.Commands) > 0 {
			t.Fatalf("commands without classes for %q", line)
		}
		if a.Error != "" {
			return
		}
		// Whatever follows it, a leading rm -rf is seen. (Appending would
		// not do: a trailing backslash or an open here-document rightly
		// turns what follows into text.)
		b := classify.Analyze("rm -rf /workspace\n"+line, "")
		if b.Error == "" && !b.Has(classify.Destructive) {
			t.Fatalf("missed a destructive command before %q: %v", line, b.Classes)
		}
		if b.Error == "" && !slices.Contains(b.Writes, "/workspace") {
			t.Fatalf("missed the write before %q", line)
		}
	})
}
