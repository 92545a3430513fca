package recorder

import (
	"errors"
	"fmt"
	"testing"
)

func TestRecordFirst(t *testing.T) {
	if err := RecordFirst("record exec", nil); err != nil {
		t.Errorf("nil: %v", err)
	}
	base := errors.New("disk full")
	if err := RecordFirst("record exec", base); !errors.Is(err, base) || err.Error() != "record exec: disk full" {
		t.Errorf("named: %v", err)
	}
	if err := RecordFirst("", base); err != base {
		t.Errorf("unnamed: %v", err)
	}
}

// A failed write after its act is logged and counted, never dropped.
func TestBestEffortLogsAndCounts(t *testing.T) {
	var logged []string
	r := New(nil, func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) })
	r.BestEffort("sandbox s-1: record its stop", nil)
	if r.Lost() != 0 || len(logged) != 0 {
		t.Fatalf("a nil error was counted or logged: %v", logged)
	}
	r.BestEffort("sandbox s-1: record its stop", errors.New("disk full"))
	if r.Lost() != 1 || len(logged) != 1 || logged[0] != "sandbox s-1: record its stop: disk full" {
		t.Errorf("lost %d, logged %q", r.Lost(), logged)
	}
}
