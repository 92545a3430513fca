package manager

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"
)

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
	for m.LiveCount() > 0 || m.rec.Lost() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("live %d, lost writes %d", m.LiveCount(), m.rec.Lost())
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(logged, "\n"), "sandbox "+sb.ID+": stop it as expired: ") {
		t.Errorf("logged:\n%s", strings.Join(logged, "\n"))
	}
}
