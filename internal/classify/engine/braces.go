package engine

import (
	"fmt"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// braceWords is the brace expansion of w, whose braces syntax.SplitBraces
// has split, in bash's order: at most max words, and more reports whether
// it has others. mvdan.cc/sh's expand package does this too, but linking
// it (with os/user, os/exec and its expressions compiled at start) cost
// every policy check, a process of its own, more than its use; a test
// holds the two equal.
func braceWords(w *syntax.Word, max int) (words []*syntax.Word, more bool) {
	e := braceExpander{max: max}
	e.expand(nil, w.Parts)
	return e.out, e.more
}

type braceExpander struct {
	out  []*syntax.Word
	max  int
	more bool
}

// expand adds the words of prefix followed by parts, expanded: the
// first brace's alternatives in turn, each with the rest of the parts
// expanded after it. It reports false once max words are out.
func (e *braceExpander) expand(prefix, parts []syntax.WordPart) bool {
	for i, p := range parts {
		br, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		head := join(prefix, parts[:i])
		rest := parts[i+1:]
		if br.Sequence {
			return sequence(br, func(lit *syntax.Lit) bool {
				return e.expand(head, join([]syntax.WordPart{lit}, rest))
			})
		}
		for _, el := range br.Elems {
			if !e.expand(head, join(el.Parts, rest)) {
				return false
			}
		}
		return true
	}
	if len(e.out) == e.max {
		e.more = true
		return false
	}
	e.out = append(e.out, &syntax.Word{Parts: join(prefix, parts)})
	return true
}

// sequence calls each with the elements of {from..to[..step]} in turn
// while it returns true: numbers (zero-padded to the wider end if an end
// has a leading zero) or letters; the step's sign is the direction's.
func sequence(br *syntax.BraceExp, each func(*syntax.Lit) bool) bool {
	fromText, toText := br.Elems[0].Lit(), br.Elems[1].Lit()
	from, err1 := strconv.ParseInt(fromText, 10, 64)
	to, err2 := strconv.ParseInt(toText, 10, 64)
	letters := err1 != nil || err2 != nil
	if letters { // SplitBraces made a sequence of single letters only
		from, to = int64(fromText[0]), int64(toText[0])
	}
	width := 0
	if !letters && (leadingZero(fromText) || leadingZero(toText)) {
		width = max(len(fromText), len(toText))
	}
	step := int64(1)
	if len(br.Elems) > 2 {
		if n, _ := strconv.ParseInt(br.Elems[2].Lit(), 10, 64); n != 0 {
			step = n
		}
		if step < 0 {
			step = -step
		}
	}
	up := from <= to
	if !up {
		step = -step
	}
	for n := from; up && n <= to || !up && n >= to; n += step {
		var v string
		switch {
		case letters:
			v = string(rune(n))
		case width > 0:
			v = fmt.Sprintf("%0*d", width, n)
		default:
			v = strconv.FormatInt(n, 10)
		}
		if !each(&syntax.Lit{Value: v}) {
			return false
		}
	}
	return true
}

func leadingZero(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return len(s) > 1 && s[0] == '0'
}

// join is a and b in a new slice: the words out share their parts but
// never a backing array.
func join(a, b []syntax.WordPart) []syntax.WordPart {
	out := make([]syntax.WordPart, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}
