package mcp

import (
	"strings"
	"testing"
)

func TestHeadTailCutsAtLines(t *testing.T) {
	h := newHeadTail(20, 30)
	for i := 0; i < 100; i++ {
		_, _ = h.Write([]byte("line " + strings.Repeat("x", i%7) + "\n"))
	}
	c := h.Cut()
	head, tail, ok := strings.Cut(c.Text, "[... ")
	if !ok || !strings.HasSuffix(head, "\n") || !strings.HasPrefix(tail[strings.Index(tail, "\n")+1:], "line") {
		t.Fatalf("not cut at lines: %q", c.Text)
	}
	shown := int64(len(head)) + int64(len(tail)-strings.Index(tail, "\n")-1)
	if c.OmittedBytes+shown != h.total || c.OmittedOffset != int64(len(head)) {
		t.Fatalf("omitted %d + shown %d != %d", c.OmittedBytes, shown, h.total)
	}
	// Whole output that fits is returned untouched.
	small := newHeadTail(20, 30)
	_, _ = small.Write([]byte("a\nb\n"))
	if c := small.Cut(); c.Text != "a\nb\n" || c.OmittedBytes != 0 {
		t.Fatalf("small: %+v", c)
	}
	// One line longer than both parts is cut where it must be, and
	// invalid UTF-8 does not reach the client.
	long := newHeadTail(8, 8)
	_, _ = long.Write([]byte(strings.Repeat("\xff", 100)))
	if c := long.Cut(); c.OmittedBytes != 84 || strings.Contains(c.Text, "\xff") {
		t.Fatalf("long line: %+v", c)
	}
}

func TestPageCutsAtLines(t *testing.T) {
	b := []byte("aaaa\nbbbb\ncccc\n")
	if p, next := page(b, 0, 12); string(p) != "aaaa\nbbbb\n" || next != 10 {
		t.Fatalf("%q %d", p, next)
	}
	if p, next := page(b, 10, 100); string(p) != "cccc\n" || next != len(b) {
		t.Fatalf("%q %d", p, next)
	}
	if p, next := page([]byte("0123456789"), 0, 4); string(p) != "0123" || next != 4 {
		t.Fatalf("a line longer than the page: %q %d", p, next)
	}
}
