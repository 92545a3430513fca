package engine

import (
	"math/rand"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// braceCases are words with every kind of brace: lists, nested lists,
// number and letter sequences up and down, steps of either sign, zero
// padding, negative ends, several braces in a word, quotes and
// expansions beside them, and braces bash leaves as they are.
var braceCases = []string{
	"a{b,c}d", "{a,b}{c,d}", "x{a,{b,c}}y", "{1..5}", "{5..1}", "{1..10..3}", "{10..1..-3}",
	"{1..10..0}", "{01..10}", "{-3..3}", "{-05..5}", "{a..e}", "{e..a}", "{a..z..5}", "{A..z}",
	"{1..3}{a..b}", "pre{,x}post", "{a,b}$X{c,d}", `"q"{a,b}'s'`, "{a}", "{}", "{,}", "a{b",
	"{1..2,3}", "{1,2..3}", "{1..2..3..4}", "{1..a}", "{a..1}", "{aa..b}", "{1..9223372036854775807}",
	"{9223372036854775806..9223372036854775807}", "{-9223372036854775808..-9223372036854775807}",
	"{1..100}{1..100}{1..100}", "{a,b}{1..40}", "{{a,b},{c,{d,e}}}", "x{$(echo a),b}", "{+1..+3}",
	"{0..-3}", "{00..3..2}", "{a..c..-1}", "file.{go,md,txt}", "{a,b}\\{c,d\\}",
}

// render is a word as the shell would print it: what the analyser reads.
func render(t *testing.T, w *syntax.Word) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func parseWord(t *testing.T, src string) *syntax.Word {
	f, err := syntax.NewParser().Parse(strings.NewReader("echo "+src), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) != 2 {
		return nil
	}
	return call.Args[1]
}

// checkBraces compares braceWords with mvdan.cc/sh's expansion of src,
// up to the analyser's 64 words and whether there are more; it reports
// whether src had braces to compare.
func checkBraces(t *testing.T, src string) bool {
	ours, theirs := parseWord(t, src), parseWord(t, src)
	if ours == nil || !syntax.SplitBraces(ours) {
		return false
	}
	syntax.SplitBraces(theirs)
	var want []string
	wantMore := false
	for w, err := range expand.BracesSeq(nil, theirs) {
		if err != nil || len(want) == 64 {
			wantMore = true
			break
		}
		want = append(want, render(t, w))
	}
	words, more := braceWords(ours, 64)
	var got []string
	for _, w := range words {
		got = append(got, render(t, w))
	}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") || more != wantMore {
		t.Errorf("%s:\n got %q (more %v)\nwant %q (more %v)", src, got, more, want, wantMore)
	}
	return true
}

func TestBraceWordsAreTheShells(t *testing.T) {
	compared := 0
	for _, src := range braceCases {
		if checkBraces(t, src) {
			compared++
		}
	}
	if compared < 30 {
		t.Fatalf("only %d of the cases have braces", compared)
	}
	// and words made at random from brace syntax
	pieces := []string{"{", "}", ",", "..", "a", "z", "1", "0", "-", "9", "x", "$v", "'q'", `\{`, "-2", "05"}
	r := rand.New(rand.NewSource(20))
	compared = 0
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := 1 + r.Intn(12); n > 0; n-- {
			b.WriteString(pieces[r.Intn(len(pieces))])
		}
		if checkBraces(t, b.String()) {
			compared++
		}
	}
	if compared < 2000 {
		t.Fatalf("only %d random words have braces", compared)
	}
	t.Logf("%d random words compared", compared)
}

func FuzzBraceWords(f *testing.F) {
	for _, src := range braceCases {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		_ = checkBraces(t, src)
	})
}
