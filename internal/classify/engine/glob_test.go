package engine

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/classify/secretnames"
)

// catOnly knows one program, cat, as read-only: whatever else is unknown
// here comes from the globs.
var catOnly = &Catalog{ReadOnly: SetOf("cat").Has}

// Deep globs are not expanded: a 61 KB line of them was slow. The bound is
// on the matches tried, not on time.
func TestDeepGlobsAreBounded(t *testing.T) {
	deep := "cat .e*"
	for i := 0; i < 40; i++ {
		deep += "/.e*"
	}
	if a := Analyze(deep, "", catOnly); !a.Has(Unknown) {
		t.Errorf("a glob of 41 elements: %v, want unknown", a.Classes)
	}
	shallow := "cat .e*" // 32 elements: judged
	for i := 0; i < secretnames.MaxGlobElems-1; i++ {
		shallow += "/.x*"
	}
	if a := Analyze(shallow, "", catOnly); a.Has(Unknown) {
		t.Errorf("a glob of 32 elements: %v", a.Classes)
	}
	line := "cat"
	for len(line) < 61<<10 {
		line += " .q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*/.q*"
	}
	a := &analyzer{out: &Analysis{Line: line, Cwd: DefaultCwd}, cwd: DefaultCwd, cat: catOnly, home: Home}
	if err := a.script(line, nil, 0); err != nil {
		t.Fatal(err)
	}
	if a.globSteps > secretnames.MaxGlobSteps+1 {
		t.Errorf("%d matches tried for one line, want at most %d", a.globSteps, secretnames.MaxGlobSteps)
	}
	a.finish()
	if !a.out.Has(Unknown) {
		t.Errorf("a line of more globs than judged: %v, want unknown", a.out.Classes)
	}
}
