package egress

import (
	"testing"
	"time"
)

// Review (rv-daemon): a sandbox's end writes a bounded number of
// summaries (they may go into the full disk's reserve), with the exact
// totals.
func TestReviewFinalSummariesAreBounded(t *testing.T) {
	const n = 300
	e := newEnv(t, newResolver(), Config{Limits: Limits{DNSRate: -1, RefusalWindow: time.Hour}})
	e.setPolicy(t, Policy{})
	for range 2 {
		for i := range n {
			askDNS(t, e, "y"+itoa(i)+".example.test", "A")
		}
	}
	before := len(e.rec.all())
	e.svc.RemoveSandbox(e.who.SandboxID)
	final := 0
	for _, ev := range e.rec.all()[before:] {
		if ev.Kind == KindRefusedSummary && ev.Final {
			final++
		}
	}
	if final > maxFinalSummaries {
		t.Errorf("the sandbox's end wrote %d summaries, want at most %d", final, maxFinalSummaries)
	}
	if ind, sum, _ := countDNS(e.rec.all()); ind+sum != 2*n {
		t.Errorf("the record accounts for %d queries, want %d", ind+sum, 2*n)
	}
}
