package templatebuild

import (
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template"
)

// Attack: a second create of a lent stack (someone who read its name
// from the step's sandbox record) finds no template; nor does any create
// after the step gave it back, and none is ever listed.
func TestLentStackIsTakenOnce(t *testing.T) {
	s := New()
	name, give := s.lend(&template.Template{Dir: "/nonexistent/root", Env: []string{"PATH=/bin"}}, "0123456789ab")
	b, err := s.Template(name)
	if err != nil || b.RootFS != "/nonexistent/root" || b.Version != "0123456789ab" {
		t.Fatalf("the step's own create: %+v %v", b, err)
	}
	if _, err := s.Template(name); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a second create of the lent stack: %v", err)
	}
	give()
	other, give2 := s.lend(&template.Template{Dir: "/nonexistent/other"}, "")
	give2()
	if _, err := s.Template(other); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a stack given back: %v", err)
	}
	if l, err := s.Templates(t.Context()); err != nil || len(l) != 0 {
		t.Errorf("listed: %v %v", l, err)
	}
}
