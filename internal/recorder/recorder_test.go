package recorder

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"
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

// The client a request names is added to its event's payload without
// changing the caller's map or overriding a field of that name.
func TestWithClient(t *testing.T) {
	if got := withClient(context.Background(), map[string]any{"a": 1}); fmt.Sprint(got) != "map[a:1]" {
		t.Errorf("no client: %v", got)
	}
	ctx := sandbox.WithClient(context.Background(), "cli/1\n")
	own := map[string]any{"a": 1}
	for _, c := range []struct {
		in   any
		want string
	}{
		{own, "map[a:1 client:cli/1]"},
		{nil, "map[client:cli/1]"},
		{[]int{1}, "map[client:cli/1 value:[1]]"},
		{map[string]any{"client": "theirs"}, "map[client:theirs]"},
	} {
		if got := fmt.Sprint(withClient(ctx, c.in)); got != c.want {
			t.Errorf("%v: %s, want %s", c.in, got, c.want)
		}
	}
	if len(own) != 1 {
		t.Errorf("the caller's map was changed: %v", own)
	}
}
