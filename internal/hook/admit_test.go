package hook

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// admitter counts what it holds; refuse makes it refuse.
type admitter struct {
	name   string
	held   int
	refuse bool
	calls  *[]string
}

func (a *admitter) Name() string      { return a.name }
func (a *admitter) Attach(Core) error { return nil }
func (a *admitter) AdmitCreate(context.Context, string, runtime.Limits) (func(), error) {
	*a.calls = append(*a.calls, a.name+":create")
	if a.refuse {
		return nil, errdefs.ErrLimitExceeded
	}
	a.held++
	return func() { a.held-- }, nil
}
func (a *admitter) AdmitExec(context.Context, string) error {
	*a.calls = append(*a.calls, a.name+":exec")
	if a.refuse {
		return errdefs.ErrLimitExceeded
	}
	return nil
}

// The Admitters are asked in module order; a refusal gives back what the
// ones before it reserved, and a release gives back each once however
// often it is called.
func TestAdmitCreateAndExec(t *testing.T) {
	var calls []string
	a, b := &admitter{name: "a", calls: &calls}, &admitter{name: "b", calls: &calls}
	var s Set
	if err := s.Attach([]Module{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	release, err := s.AdmitCreate(ctx, "p", runtime.Limits{})
	if err != nil || a.held != 1 || b.held != 1 {
		t.Fatalf("admitted: %v, held %d %d", err, a.held, b.held)
	}
	release()
	release()
	if a.held != 0 || b.held != 0 {
		t.Errorf("after two releases: held %d %d", a.held, b.held)
	}
	b.refuse = true
	if _, err := s.AdmitCreate(ctx, "p", runtime.Limits{}); !errors.Is(err, errdefs.ErrLimitExceeded) || a.held != 0 {
		t.Errorf("refused by b: %v, a holds %d", err, a.held)
	}
	if err := s.AdmitExec(ctx, "p"); !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Errorf("exec refused by b: %v", err)
	}
	if want := []string{"a:create", "b:create", "a:create", "b:create", "a:exec", "b:exec"}; !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	var none Set
	if r, err := none.AdmitCreate(ctx, "p", runtime.Limits{}); err != nil || r == nil {
		t.Errorf("no admitter: %v", err)
	}
}
