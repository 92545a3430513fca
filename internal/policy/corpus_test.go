package policy

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.jsonl from the classifier")

type corpusCase struct {
	line    int
	want    string
	command string
}

// readCorpus reads testdata/corpus.txt: "classes<TAB>command line", the
// classes hand-annotated (not produced by this classifier).
func readCorpus(t testing.TB) []corpusCase {
	f, err := os.Open("testdata/corpus.txt")
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

func classString(cs []Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	// the corpus sorts alphabetically
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return strings.Join(s, ",")
}

// TestCorpusClasses checks every hand-annotated command line.
func TestCorpusClasses(t *testing.T) {
	cases := readCorpus(t)
	if len(cases) < 300 {
		t.Fatalf("corpus has %d cases, want at least 300", len(cases))
	}
	bad := 0
	for _, c := range cases {
		a := Analyze(c.command, "")
		if got := classString(a.Classes); got != c.want {
			bad++
			t.Errorf("corpus:%d %s\n  got  %s\n  want %s", c.line, c.command, got, c.want)
		}
	}
	t.Logf("%d cases, %d wrong", len(cases), bad)
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
		d := pol.Decide(Analyze(c.command, ""))
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
