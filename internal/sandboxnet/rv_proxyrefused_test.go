package sandboxnet

import (
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/egress"
)

// Review (rv-daemon): the proxy-cap refusals (egress.refused) are written
// outside the egress service: not charged to the sandbox's audit budget,
// not stopped by its cut. At one record per second, a sandbox that holds
// its 256 connections and keeps opening more writes one event a second
// for as long as it lives (86,400 a day, each sandbox), past the budget
// that was to bound its record. While the flood goes on the window now
// grows, so a long flood is a few records, with the exact count.
func TestReviewProxyRefusalFloodWindowGrows(t *testing.T) {
	base, maxW := refusalWindow, maxRefusalWindow
	refusalWindow, maxRefusalWindow = 10*time.Millisecond, time.Hour
	t.Cleanup(func() { refusalWindow, maxRefusalWindow = base, maxW })
	e := onFake(t, Config{Egress: &egress.Config{}}, "")
	n, log := &sandboxNetwork{n: e.n, id: "sb-flood"}, e.log
	calls := 0
	for end := time.Now().Add(700 * time.Millisecond); time.Now().Before(end); calls++ {
		n.ProxyRefused(0, "the sandbox holds 256 open proxy connections, the most it may")
		time.Sleep(time.Millisecond)
	}
	var evs []*auditEvent
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		evs = refusedEvents(t, log)
		total := 0
		for _, e := range evs {
			total += e.Refused
		}
		if total == calls {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals on record, want %d (%d entries)", total, calls, len(evs))
		}
	}
	// 70 windows of 10ms; doubling: 10, 20, 40, ... 640ms: about 8.
	t.Logf("%d refusals over 700ms with a 10ms window: %d records", calls, len(evs))
	if len(evs) > 14 {
		t.Errorf("%d records for a flood of 70 windows: one a window, the window never grows", len(evs))
	}
}
