package classify

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

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
