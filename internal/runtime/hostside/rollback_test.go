package hostside

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// record returns an undo that appends name to *log.
func record(log *[]string, name string, err error) func() error {
	return func() error {
		*log = append(*log, name)
		return err
	}
}

func TestRollbackUndoesInReverseOnce(t *testing.T) {
	var log []string
	var rb Rollback
	for _, n := range []string{"a", "b", "c"} {
		rb.Push(n, record(&log, n, nil))
	}
	if err := rb.Undo(); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if want := []string{"c", "b", "a"}; !reflect.DeepEqual(log, want) {
		t.Errorf("undo order %v, want %v", log, want)
	}
	if err := rb.Undo(); err != nil || len(log) != 3 {
		t.Errorf("a second Undo ran undo steps again: %v, err %v", log, err)
	}
}

func TestRollbackUndoErrorsReported(t *testing.T) {
	var log []string
	var rb Rollback
	errB, errC := errors.New("b failed"), errors.New("c failed")
	rb.Push("a", record(&log, "a", nil))
	rb.Push("b", record(&log, "b", errB))
	rb.Push("c", record(&log, "c", errC))
	cause := errors.New("step failed")
	err := rb.Fail(cause)
	if want := []string{"c", "b", "a"}; !reflect.DeepEqual(log, want) {
		t.Errorf("undo order %v, want %v (every step, even after one failed)", log, want)
	}
	for _, e := range []error{cause, errB, errC} {
		if !errors.Is(err, e) {
			t.Errorf("Fail's error %q does not carry %q", err, e)
		}
	}
	if !strings.Contains(err.Error(), "undo b: b failed") || !strings.Contains(err.Error(), "undo c: c failed") {
		t.Errorf("undo errors are not named by their step: %q", err)
	}
	if err := (&Rollback{}).Fail(cause); err != cause {
		t.Errorf("Fail with nothing to undo: %v, want the cause itself", err)
	}
}

func TestRunStepsUndoesOnFailureOnly(t *testing.T) {
	var ran, undone []string
	step := func(name string, err error) Step {
		return Step{Name: name, Run: func(_ context.Context, rb *Rollback) error {
			ran = append(ran, name)
			rb.Push(name, record(&undone, name, nil))
			return err
		}}
	}
	// success: nothing undone, and after saw every step
	var after []string
	err := RunSteps(context.Background(), []Step{step("a", nil), step("b", nil)}, func(s string) error {
		after = append(after, s)
		return nil
	})
	if err != nil || len(undone) != 0 {
		t.Errorf("succeeded: err %v, undone %v; want nil, none", err, undone)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(after, want) {
		t.Errorf("after saw %v, want %v", after, want)
	}

	// a failing step: it and those before it undone, last first; none after it run
	ran, undone = nil, nil
	boom := errors.New("boom")
	err = RunSteps(context.Background(), []Step{step("a", nil), step("b", nil), step("c", boom), step("d", nil)}, nil)
	if !errors.Is(err, boom) {
		t.Errorf("RunSteps: %v, want the step's error", err)
	}
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if want := []string{"c", "b", "a"}; !reflect.DeepEqual(undone, want) {
		t.Errorf("undone %v, want %v", undone, want)
	}

	// after failing fails its step the same way
	ran, undone = nil, nil
	late := errors.New("late")
	err = RunSteps(context.Background(), []Step{step("a", nil), step("b", nil), step("c", nil)}, func(s string) error {
		if s == "b" {
			return late
		}
		return nil
	})
	if !errors.Is(err, late) {
		t.Errorf("RunSteps: %v, want after's error", err)
	}
	if want := []string{"b", "a"}; !reflect.DeepEqual(undone, want) {
		t.Errorf("undone %v, want %v", undone, want)
	}
}
