package policy

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/classify"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.jsonl from the classifier")

type corpusCase struct {
	line    int
	want    string
	command string
}

// readCorpus reads the classifier's hand-annotated corpus
// (internal/classify/testdata/corpus.txt: "classes<TAB>command line"),
// whose lines the default policy decides here.
func readCorpus(t testing.TB) []corpusCase {
	f, err := os.Open("../classify/testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		want, cmd, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("corpus line %d: no tab", n)
		}
		out = append(out, corpusCase{n, want, cmd})
	}
	return out
}

type goldenDecision struct {
	Command string   `json:"command"`
	Action  Action   `json:"action"`
	Rules   []string `json:"rules"`
}

// TestCorpusDecisions compares the default policy's decision on every
// corpus line with testdata/golden.jsonl (go test -update rewrites it;
// review the diff before committing it).
func TestCorpusDecisions(t *testing.T) {
	pol := Defaults()
	var got []goldenDecision
	for _, c := range readCorpus(t) {
		d := pol.Decide(classify.Analyze(c.command, ""))
		g := goldenDecision{Command: c.command, Action: d.Action, Rules: []string{}}
		for _, m := range d.Matches {
			if m.Action == d.Action {
				g.Rules = appendUniq(g.Rules, m.Rule)
			}
		}
		got = append(got, g)
	}
	if *update {
		var b strings.Builder
		for _, g := range got {
			line, _ := json.Marshal(g)
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile("testdata/golden.jsonl", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile("testdata/golden.jsonl")
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != len(got) {
		t.Fatalf("golden has %d decisions, corpus %d: run go test -update and review", len(lines), len(got))
	}
	counts := map[Action]int{}
	for i, l := range lines {
		var want goldenDecision
		if err := json.Unmarshal([]byte(l), &want); err != nil {
			t.Fatal(err)
		}
		g := got[i]
		counts[g.Action]++
		if want.Command != g.Command || want.Action != g.Action || strings.Join(want.Rules, " ") != strings.Join(g.Rules, " ") {
			t.Errorf("%s\n  got  %s %v\n  want %s %v", g.Command, g.Action, g.Rules, want.Action, want.Rules)
		}
	}
	t.Logf("decisions: %v", counts)
}
