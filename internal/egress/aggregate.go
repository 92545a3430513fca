package egress

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Refusals are aggregated: the first refusal of a kind (sandbox, task,
// exec, event kind, destination, rule, reason) in a window is recorded as
// it is, and the ones after it in that window are counted into one
// KindRefusedSummary event, written when the window ends, when the
// sandbox is removed and when the service closes. The count is exact; a
// summary that cannot be written is kept and written with the next one.
// Refusals are safe to aggregate because a refusal sends nothing out: the
// record of an allowed destination is still written, one by one, before
// any byte goes upstream.

// maxRefusalKinds bounds the kinds counted at once per sandbox; past it, a
// sandbox's new kinds share one catch-all count (a sandbox asking for a
// new name each time cannot make one event per query).
const maxRefusalKinds = 256

type refusalKey struct {
	sandbox, task, exec string
	kind                EventKind
	method, host        string
	port                int
	dnsType             string
	rule, reason        string
}

type refusalCount struct {
	ev          Event // the summary, without its counts
	count       int64
	first, last time.Time
	start       time.Time // the window's
}

type refusals struct {
	mu      sync.Mutex
	m       map[refusalKey]*refusalCount
	kinds   map[string]int // per sandbox
	armed   bool
	flushMu sync.Mutex // one flush at a time, so that counts are merged in order
}

func aggregable(e *Event) bool {
	return e.Decision == "deny" && (e.Kind == KindDNS || e.Kind == KindConnect || e.Kind == KindRequest)
}

// keyOf is the kind a refusal is counted under. Rate and budget refusals
// come before the destination is read: one kind per event kind.
func keyOf(e *Event) refusalKey {
	k := refusalKey{sandbox: e.SandboxID, task: e.TaskID, exec: e.ExecID, kind: e.Kind, method: e.Method, host: e.Host, port: e.Port, dnsType: e.DNSType, rule: e.Rule, reason: e.Reason}
	if e.Rule == RuleRate || e.Rule == RuleBudget {
		k.exec, k.method, k.host, k.port, k.dnsType = "", "", "", 0, ""
	}
	return k
}

func catchAll(e *Event) refusalKey {
	return refusalKey{sandbox: e.SandboxID, task: e.TaskID, kind: e.Kind, host: "*", rule: "*", reason: "refusals of more than 256 different kinds in one window"}
}

func (k refusalKey) summary() Event {
	return Event{Kind: KindRefusedSummary, Source: Source{SandboxID: k.sandbox, TaskID: k.task, ExecID: k.exec}, Of: k.kind, Decision: "deny",
		Method: k.method, Host: k.host, Port: k.port, DNSType: k.dnsType, Rule: k.rule, Reason: k.reason}
}

// refuse records or counts a refusal. It never fails: a refusal that
// cannot be written is counted (the destination is refused either way).
func (s *Service) refuse(ctx context.Context, e Event, recordFirst bool) {
	now := s.cfg.Now()
	a := &s.refused
	k := keyOf(&e)
	a.mu.Lock()
	c := a.m[k]
	if c == nil && a.kinds[k.sandbox] >= maxRefusalKinds {
		k, recordFirst = catchAll(&e), false
		c = a.m[k]
	}
	if c == nil {
		c = &refusalCount{ev: k.summary(), start: now}
		a.m[k] = c
		a.kinds[k.sandbox]++
		s.armFlushLocked()
		if recordFirst {
			a.mu.Unlock()
			var eb errBudget
			if err := s.write(ctx, e); err != nil && !errors.As(err, &eb) {
				s.refuse(ctx, e, false) // not kept: counted instead (write counted a budget refusal itself)
			}
			return
		}
	}
	if c.count == 0 {
		c.first = now
	}
	c.count++
	c.last = now
	a.mu.Unlock()
}

// armFlushLocked starts the window timer if it is not running. a.mu is
// held.
func (s *Service) armFlushLocked() {
	if s.refused.armed || s.closed {
		return
	}
	s.refused.armed = true
	time.AfterFunc(s.cfg.Limits.RefusalWindow/4, func() { s.flushRefusals(context.Background(), false, "") })
}

// FlushRefusals writes a sandbox's open refusal counts now, so that a
// record read next (a task's bundle) has them.
func (s *Service) FlushRefusals(ctx context.Context, sandboxID string) {
	s.flushRefusals(ctx, false, sandboxID)
}

// flushRefusals writes the summaries of the windows that ended, or, for
// a sandbox (or all if final and ""), every window. final: the sandbox
// is gone or the service closing; a summary that cannot be written is
// put back unless final.
func (s *Service) flushRefusals(ctx context.Context, final bool, sandbox string) {
	a := &s.refused
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	now := s.cfg.Now()
	a.mu.Lock()
	if !final && sandbox == "" {
		a.armed = false // this is the timer's run
	}
	var due []*refusalCount
	var keys []refusalKey
	for k, c := range a.m {
		all := sandbox != "" || final
		if all && (sandbox == "" || k.sandbox == sandbox) || !all && now.Sub(c.start) >= s.cfg.Limits.RefusalWindow {
			due, keys = append(due, c), append(keys, k)
			delete(a.m, k)
			if a.kinds[k.sandbox]--; a.kinds[k.sandbox] <= 0 {
				delete(a.kinds, k.sandbox)
			}
		}
	}
	a.mu.Unlock()
	if final {
		due, keys = mergeFinal(due), nil // nothing is put back at the end
	}
	var failed error
	for i, c := range due {
		if c.count == 0 {
			continue
		}
		ev := c.ev
		ev.Count, ev.First, ev.Last, ev.Final = c.count, c.first.UTC(), c.last.UTC(), final
		if err := s.write(ctx, ev); err != nil {
			failed = err
			if !final {
				s.putBack(keys[i], c)
			}
		}
	}
	if failed != nil {
		s.log.Error("egress refusal summaries not recorded", "final", final, "err", failed)
	}
	a.mu.Lock()
	if len(a.m) > 0 && !a.armed {
		s.armFlushLocked()
	}
	a.mu.Unlock()
}

// maxFinalSummaries bounds the summaries one sandbox's end writes. They
// are its last counts, written even on a full log disk (into the reserve
// kept for sandbox and daemon stops), and not charged to its budget: a
// sandbox that opened 256 kinds of refusal just before its end must not
// spend the reserve 256 events at a time. Past the bound, its open
// counts are merged per event kind, the totals exact (the first refusal
// of every kind is on the record already, with its destination).
const maxFinalSummaries = 4

// mergeFinal merges the open counts of every sandbox that has more than
// maxFinalSummaries of them.
func mergeFinal(due []*refusalCount) []*refusalCount {
	per := map[string]int{}
	for _, c := range due {
		if c.count > 0 {
			per[c.ev.SandboxID]++
		}
	}
	out := make([]*refusalCount, 0, len(due))
	merged := map[refusalKey]*refusalCount{}
	for _, c := range due {
		if c.count == 0 {
			continue
		}
		n := per[c.ev.SandboxID]
		if n <= maxFinalSummaries {
			out = append(out, c)
			continue
		}
		k := refusalKey{sandbox: c.ev.SandboxID, task: c.ev.TaskID, kind: c.ev.Of, host: "*", rule: "*",
			reason: fmt.Sprintf("refusals of %d different kinds still counted when the sandbox ended, merged", n)}
		m := merged[k]
		if m == nil {
			m = &refusalCount{ev: k.summary(), first: c.first, last: c.last, start: c.start}
			merged[k] = m
			out = append(out, m)
		}
		m.count += c.count
		if c.first.Before(m.first) {
			m.first = c.first
		}
		if c.last.After(m.last) {
			m.last = c.last
		}
	}
	return out
}

// putBack merges a count that could not be written into the current one.
func (s *Service) putBack(k refusalKey, c *refusalCount) {
	a := &s.refused
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.m[k]
	if cur == nil {
		a.m[k] = c
		a.kinds[k.sandbox]++
		return
	}
	if cur.count == 0 || c.first.Before(cur.first) {
		cur.first = c.first
	}
	if cur.count == 0 || c.last.After(cur.last) {
		cur.last = c.last
	}
	cur.count += c.count
	if c.start.Before(cur.start) {
		cur.start = c.start
	}
}

// Close writes every refusal count still open (the daemon is stopping);
// refusals after it are still counted but only written by another Close.
func (s *Service) Close(ctx context.Context) {
	s.refused.mu.Lock()
	s.closed = true
	s.refused.mu.Unlock()
	s.flushRefusals(ctx, true, "")
}

// write stamps, charges and stores an event. A decision past the
// sandbox's budget is not stored: it is counted as a budget refusal, the
// sandbox is cut (once, on the record), and the error refuses the
// destination.
func (s *Service) write(ctx context.Context, e Event) error {
	e.Time = s.cfg.Now()
	cut, err := s.charge(&e)
	if cut != nil {
		s.exhaust(e, cut)
	}
	var eb errBudget
	if errors.As(err, &eb) {
		if e.Kind != KindRefusedSummary {
			r := Event{Kind: e.Kind, Source: e.Source, Decision: "deny", Rule: RuleBudget, Reason: eb.reason}
			s.refuse(ctx, r, false)
		}
		return err
	}
	if err = s.cfg.Recorder.Record(ctx, e); err != nil {
		s.log.Error("egress event not recorded", "kind", e.Kind, "sandbox", e.SandboxID, "host", e.Host, "err", err)
	}
	return err
}
