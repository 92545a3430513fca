package sandboxnet

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/store"
)

// A flood of refused proxy connections is on record, but as a handful of
// entries that count them, not one entry each: refusals must not become
// a way to flood the audit log.
func TestProxyRefusalsRecordedAggregated(t *testing.T) {
	e := onFake(t, Config{Egress: &egress.Config{}}, "")
	n, log := &sandboxNetwork{n: e.n, id: "sb-flood"}, e.log
	const refusals = 1000
	reason := "the sandbox holds 256 open proxy connections, the most it may" + strings.Repeat("!", 500)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < refusals/4; i++ {
				n.ProxyRefused(0, reason)
			}
		}()
	}
	wg.Wait()
	var evs []*auditEvent
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs = refusedEvents(t, log)
		total := 0
		for _, e := range evs {
			total += e.Refused
		}
		if total == refusals {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals on record, want %d (%d entries)", total, refusals, len(evs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(evs) > 3 {
		t.Errorf("%d entries for a burst of %d refusals, want at most one per second", len(evs), refusals)
	}
	for _, e := range evs {
		if e.Decision != "deny" || !strings.HasPrefix(e.Reason, "the sandbox holds 256") || len(e.Reason) > maxReasonLen {
			t.Errorf("refusal entry %+v: want decision deny and the reason, at most %d bytes", e, maxReasonLen)
		}
	}
}

type auditEvent struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	Refused  int    `json:"refused"`
}

func refusedEvents(t *testing.T, log *audit.Log) []*auditEvent {
	t.Helper()
	rows, err := log.Query(context.Background(), store.AuditFilter{SandboxID: "sb-flood", Kind: KindProxyRefused})
	if err != nil {
		t.Fatal(err)
	}
	var out []*auditEvent
	for _, r := range rows {
		var e auditEvent
		if err := json.Unmarshal(r.Payload, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, &e)
	}
	return out
}
