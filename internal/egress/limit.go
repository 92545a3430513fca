package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/egress/h1"
)

// Limits bound what one sandbox can make the daemon do and record: every
// DNS query and proxy connection costs the daemon CPU outside the
// sandbox's cgroup and an audit event that is never purged, so a sandbox
// in a tight loop could otherwise fill the log disk for everyone.
//
// Zero fields take the defaults (DefaultLimits); a negative rate or
// budget turns that bound off.
type Limits struct {
	// DNSRate is the DNS queries per second a sandbox may send, with
	// bursts of DNSBurst; ConnRate and ConnBurst the same for proxy
	// connections. A query or connection over the rate is refused at
	// once (REFUSED, or the connection closed with 429), never queued.
	DNSRate   float64 `json:"dns_rate"`
	DNSBurst  int     `json:"dns_burst"`
	ConnRate  float64 `json:"conn_rate"`
	ConnBurst int     `json:"conn_burst"`
	// ReqRate and ReqBurst bound the requests after a connection's first
	// (keep-alive requests, and those in a brokered host's tunnel): each
	// is a decision and two events, which the connection rate alone
	// would leave unbounded. Over it, 429 and the connection closed.
	ReqRate  float64 `json:"request_rate"`
	ReqBurst int     `json:"request_burst"`
	// RefusalWindow is how long repeated refusals of one kind are
	// counted into one summary event instead of one event each.
	RefusalWindow time.Duration `json:"refusal_window"`
	// BudgetEvents and BudgetBytes bound the egress events a sandbox's
	// traffic may put in the audit log over its life; when one is used
	// up, that sandbox's egress is cut (and the cut recorded once).
	BudgetEvents int64 `json:"budget_events"`
	BudgetBytes  int64 `json:"budget_bytes"`
}

// DefaultLimits are generous for real work (a large npm or go build makes
// hundreds of connections and a few thousand lookups) and still keep one
// sandbox from writing more than ~100 events a second or ~128 MiB of
// egress record in its life.
var DefaultLimits = Limits{
	DNSRate: 100, DNSBurst: 500,
	ConnRate: 50, ConnBurst: 200,
	ReqRate: 50, ReqBurst: 500,
	RefusalWindow: 10 * time.Second,
	BudgetEvents:  200_000, BudgetBytes: 128 << 20,
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.DNSRate == 0 {
		l.DNSRate = d.DNSRate
	}
	if l.DNSBurst <= 0 {
		l.DNSBurst = d.DNSBurst
	}
	if l.ConnRate == 0 {
		l.ConnRate = d.ConnRate
	}
	if l.ConnBurst <= 0 {
		l.ConnBurst = d.ConnBurst
	}
	if l.ReqRate == 0 {
		l.ReqRate = d.ReqRate
	}
	if l.ReqBurst <= 0 {
		l.ReqBurst = d.ReqBurst
	}
	if l.RefusalWindow <= 0 {
		l.RefusalWindow = d.RefusalWindow
	}
	if l.BudgetEvents == 0 {
		l.BudgetEvents = d.BudgetEvents
	}
	if l.BudgetBytes == 0 {
		l.BudgetBytes = d.BudgetBytes
	}
	return l
}

// Rules of the refusals these limits make.
const (
	RuleRate   = "rate"         // over the sandbox's DNS or connection rate
	RuleBudget = "audit-budget" // the sandbox's audit budget is used up
)

// KindRefusedSummary counts refusals that were not recorded one by one
// (Event.Of, Count, First, Last); KindBudget records, once, that a
// sandbox used up its audit budget and lost its egress.
const (
	KindRefusedSummary EventKind = "egress.refused.summary"
	KindBudget         EventKind = "egress.budget_exhausted"
)

// bucket is a token bucket; a rate < 0 lets everything through.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

func newBucket(rate float64, burst int) bucket {
	return bucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

func (b *bucket) take(now time.Time) bool {
	if b.rate < 0 {
		return true
	}
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Usage is what a sandbox's egress has put in the audit record, against
// its budget, and whether it was cut for it.
type Usage struct {
	Events       int64 `json:"events"`
	Bytes        int64 `json:"bytes"`
	BudgetEvents int64 `json:"budget_events,omitempty"`
	BudgetBytes  int64 `json:"budget_bytes,omitempty"`
	// Cut is set once the budget is used up: the sandbox's egress is
	// refused from then on.
	Cut *Cut `json:"cut,omitempty"`
}

// Cut says when and why a sandbox's egress was cut.
type Cut struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// meter is one sandbox's rates and budget.
type meter struct {
	mu             sync.Mutex
	dns, conn, req bucket
	use            Usage
}

func (s *Service) newMeter() *meter {
	l := s.cfg.Limits
	return &meter{dns: newBucket(l.DNSRate, l.DNSBurst), conn: newBucket(l.ConnRate, l.ConnBurst), req: newBucket(l.ReqRate, l.ReqBurst),
		use: Usage{BudgetEvents: max(l.BudgetEvents, 0), BudgetBytes: max(l.BudgetBytes, 0)}}
}

// meterOf returns a sandbox's meter. A sandbox the service has no entry
// for (none was ever set up, or it was removed) shares one meter with
// every other such id, so that unknown ids cannot each get a fresh budget.
func (s *Service) meterOf(id string) *meter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.sandboxes[id]; sb != nil {
		return sb.meter
	}
	return s.orphan
}

// admit takes a token for a DNS query (dns) or a connection. A refusal
// says why; it is not recorded here (the caller counts it as a refusal).
func (s *Service) admit(id string, dns bool) (ok bool, rule, reason string) {
	m := s.meterOf(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.use.Cut != nil {
		return false, RuleBudget, m.use.Cut.Reason
	}
	if dns {
		if !m.dns.take(s.cfg.Now()) {
			return false, RuleRate, fmt.Sprintf("over this sandbox's DNS query rate (%g/s, bursts of %d)", m.dns.rate, int(m.dns.burst))
		}
		return true, "", ""
	}
	if !m.conn.take(s.cfg.Now()) {
		return false, RuleRate, fmt.Sprintf("over this sandbox's proxy connection rate (%g/s, bursts of %d)", m.conn.rate, int(m.conn.burst))
	}
	return true, "", ""
}

// admitRequest takes a token for a request after a connection's first.
func (s *Service) admitRequest(id string) (ok bool, rule, reason string) {
	m := s.meterOf(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.use.Cut != nil {
		return false, RuleBudget, m.use.Cut.Reason
	}
	if !m.req.take(s.cfg.Now()) {
		return false, RuleRate, fmt.Sprintf("over this sandbox's request rate on open connections (%g/s, bursts of %d)", m.req.rate, int(m.req.burst))
	}
	return true, "", ""
}

// errBudget refuses an event past a sandbox's audit budget.
type errBudget struct{ reason string }

func (e errBudget) Error() string { return e.reason }

// charge counts an event against its sandbox's budget. An event that
// would pass the budget is refused (and the sandbox cut, once) unless it
// ends what an admitted decision began (close, response: bounded by the
// decisions already counted), which is kept and counted.
func (s *Service) charge(e *Event) (cutNow *Cut, err error) {
	if e.Final {
		return nil, nil // a removed sandbox's last counts: its meter is gone
	}
	b, _ := json.Marshal(e)
	m := s.meterOf(e.SandboxID)
	m.mu.Lock()
	defer m.mu.Unlock()
	u := &m.use
	after := e.Kind == KindClose || e.Kind == KindResponse || e.Kind == KindRefusedSummary
	over := (u.BudgetEvents > 0 && u.Events+1 > u.BudgetEvents) || (u.BudgetBytes > 0 && u.Bytes+int64(len(b)) > u.BudgetBytes)
	if (over || u.Cut != nil) && !after {
		if u.Cut == nil {
			u.Cut = &Cut{At: s.cfg.Now().UTC(), Reason: fmt.Sprintf("this sandbox's egress used up its audit budget (%d events, %d bytes; used %d events, %d bytes): its egress is cut",
				u.BudgetEvents, u.BudgetBytes, u.Events, u.Bytes)}
			cutNow = u.Cut
		}
		return cutNow, errBudget{u.Cut.Reason}
	}
	u.Events++
	u.Bytes += int64(len(b))
	return nil, nil
}

// Usage returns what a sandbox's egress has recorded against its budget,
// and its cut if it was cut; false if the service has no such sandbox.
func (s *Service) Usage(id string) (Usage, bool) {
	s.mu.Lock()
	sb := s.sandboxes[id]
	s.mu.Unlock()
	if sb == nil {
		return Usage{}, false
	}
	sb.meter.mu.Lock()
	defer sb.meter.mu.Unlock()
	u := sb.meter.use
	if u.Cut != nil {
		c := *u.Cut
		u.Cut = &c
	}
	return u, true
}

// exhaust records a budget cut (once, not charged) and closes the
// sandbox's open connections.
func (s *Service) exhaust(e Event, c *Cut) {
	ev := Event{Time: c.At, Kind: KindBudget, Source: Source{SandboxID: e.SandboxID, TaskID: e.TaskID}, Decision: "deny", Rule: RuleBudget, Reason: c.Reason}
	if err := s.cfg.Recorder.Record(context.Background(), ev); err != nil {
		s.log.Error("egress budget cut not recorded", "sandbox", e.SandboxID, "err", err)
	}
	s.mu.Lock()
	var cut []*tracked
	if sb := s.sandboxes[e.SandboxID]; sb != nil {
		for tr := range sb.conns {
			cut = append(cut, tr)
		}
	}
	s.mu.Unlock()
	for _, tr := range cut {
		tr.close()
	}
}

// writeUnrecorded refuses a destination whose decision was not recorded:
// 429 if the sandbox's audit budget is used up, else 503 (the record is
// unavailable: fail closed).
func writeUnrecorded(w io.Writer, err error) {
	var eb errBudget
	if errors.As(err, &eb) {
		h1.WriteRefusal(w, http.StatusTooManyRequests, RuleBudget, eb.reason)
		return
	}
	h1.WriteRefusal(w, http.StatusServiceUnavailable, RuleAudit, "the egress record is unavailable")
}
