package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"
)

func TestRecordFirst(t *testing.T) {
	if err := recordFirst("record exec", nil); err != nil {
		t.Errorf("nil: %v", err)
	}
	base := errors.New("disk full")
	if err := recordFirst("record exec", base); !errors.Is(err, base) || err.Error() != "record exec: disk full" {
		t.Errorf("named: %v", err)
	}
	if err := recordFirst("", base); err != base {
		t.Errorf("unnamed: %v", err)
	}
}

// A failed write after its act is logged and counted, never dropped.
func TestBestEffortLogsAndCounts(t *testing.T) {
	var logged []string
	m := &Manager{cfg: Config{Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}}
	m.bestEffort("sandbox s-1: record its stop", nil)
	if m.writes.lost.Load() != 0 || len(logged) != 0 {
		t.Fatalf("a nil error was counted or logged: %v", logged)
	}
	m.bestEffort("sandbox s-1: record its stop", errors.New("disk full"))
	if m.writes.lost.Load() != 1 || len(logged) != 1 || logged[0] != "sandbox s-1: record its stop: disk full" {
		t.Errorf("lost %d, logged %q", m.writes.lost.Load(), logged)
	}
}

// A sandbox that expires when the store cannot be written still stops;
// the failed record of its stop is logged and counted (it was dropped
// silently before).
func TestFakeTierExpiryWithBrokenStoreIsCounted(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	m, _ := fakeTierManagerWith(t, func(c *Config) {
		c.Logf = func(f string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, fmt.Sprintf(f, a...))
		}
	})
	ctx := context.Background()
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cfg.Store.Close(); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.live[sb.ID].rec.Expires = new(time.Time) // long past
	m.armTTL(m.live[sb.ID])
	m.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for m.LiveCount() > 0 || m.writes.lost.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("live %d, lost writes %d", m.LiveCount(), m.writes.lost.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(logged, "\n"), "sandbox "+sb.ID+": stop it as expired: ") {
		t.Errorf("logged:\n%s", strings.Join(logged, "\n"))
	}
}
