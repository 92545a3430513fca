package templatebuild

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template"
)

// Attack: a second create of a lent stack (someone who read its name
// from the step's sandbox record) finds no template; nor does any create
// after the step gave it back, and none is ever listed.
func TestLentStackIsTakenOnce(t *testing.T) {
	s := New()
	name, give := s.lend(&template.Template{Dir: "/nonexistent/root", Env: []string{"PATH=/bin"}}, "0123456789ab", "base")
	b, err := s.Template(context.Background(), name)
	if err != nil || b.RootFS != "/nonexistent/root" || b.Version != "0123456789ab" || !slices.Equal(b.Lineage, []string{"base"}) {
		t.Fatalf("the step's own create: %+v %v", b, err)
	}
	if _, err := s.Template(context.Background(), name); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a second create of the lent stack: %v", err)
	}
	give()
	other, give2 := s.lend(&template.Template{Dir: "/nonexistent/other"}, "", "")
	give2()
	if _, err := s.Template(context.Background(), other); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a stack given back: %v", err)
	}
	if l, err := s.Templates(t.Context()); err != nil || len(l) != 0 {
		t.Errorf("listed: %v %v", l, err)
	}
}

// The steps' output as progress lines: split at newlines across writes,
// a line longer than maxLine in pieces, the unfinished rest at flush.
func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{line: func(l string) { got = append(got, l) }}
	_, _ = w.Write([]byte("a\nb"))
	_, _ = w.Write([]byte("c\n"))
	_, _ = w.Write([]byte(strings.Repeat("x", maxLine+10) + "\nend"))
	w.flush()
	want := []string{"a", "bc", strings.Repeat("x", maxLine), strings.Repeat("x", 10), "end"}
	if !slices.Equal(got, want) {
		t.Errorf("lines %d: %q", len(got), got)
	}
}
