// Package recorder is how the sandbox core writes its record: the audit
// log's events (the actor from the request's context, the essential
// ones into the log's reserve, a stopped log retried) and the two rules
// every store and audit write of the core follows, each a helper here,
// so that no write's error is dropped:
//
//   - RecordFirst, record before act: the write is what lets the act
//     happen (an exec's start, a sandbox's record, a file write's
//     "started"); its failure is the caller's error, returned before the
//     act: what is not on record does not happen.
//   - BestEffort, an event after its act: the act is done and stays done
//     (a sandbox stopped, an exec ended, output checkpointed), so the
//     failure cannot undo it; it is logged and counted, never ignored.
package recorder

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// essentialKinds must reach the record even when the log disk is full
// (audit.Log.RecordEssential writes them into the reserved space): what
// was destroyed, and that the daemon stopped.
var essentialKinds = map[string]bool{"sandbox.stop": true, "daemon.stop": true}

// DefaultRetry is how often a stopped audit log (a full disk) is tried
// again.
const DefaultRetry = 5 * time.Second

// Recorder writes one core's events to its audit log and counts the
// writes BestEffort saw fail.
type Recorder struct {
	log   *audit.Log // nil: no audit log is kept (every write succeeds)
	logf  func(format string, args ...any)
	retry *audit.Retry // nil: no audit log
	lost  atomic.Int64
}

// New is the recorder of log (nil: none is kept), logging to logf.
func New(log *audit.Log, logf func(format string, args ...any)) *Recorder {
	r := &Recorder{log: log, logf: logf}
	if log != nil {
		r.retry = audit.NewRetry(log, logf)
	}
	return r
}

// Record writes an audit event (when the daemon keeps an audit log). The
// actor, unless e names one, comes from ctx.
func (r *Recorder) Record(ctx context.Context, e audit.Entry) error {
	if r.log == nil {
		return nil
	}
	if e.Actor == "" {
		e.Actor = sandbox.ActorOf(ctx)
	}
	return r.RecordAs(ctx, e, false)
}

// RecordAs writes e as the actor it names, into the log's reserve if
// essential; nil without an audit log. An error (an ErrLimitExceeded)
// means e is not recorded.
func (r *Recorder) RecordAs(ctx context.Context, e audit.Entry, essential bool) error {
	if r.log == nil {
		return nil
	}
	e.Payload = withClient(ctx, e.Payload)
	var err error
	if essential || essentialKinds[e.Kind] {
		_, err = r.log.RecordEssential(ctx, e)
	} else {
		_, err = r.log.Record(ctx, e)
	}
	if err != nil {
		r.logf("AUDIT WRITE FAILED (%s): %v", e.Kind, err)
		return fmt.Errorf("audit log: %v: %w", err, errdefs.ErrLimitExceeded)
	}
	return nil
}

// RecordAsync writes e without waiting: an event after its act
// (BestEffort's rule), a failure logged and counted.
func (r *Recorder) RecordAsync(ctx context.Context, e audit.Entry) {
	if r.log == nil {
		return
	}
	if e.Actor == "" {
		e.Actor = sandbox.ActorOf(ctx)
	}
	e.Payload = withClient(ctx, e.Payload)
	r.log.RecordAsync(ctx, e, func(err error) {
		if err != nil {
			r.lost.Add(1)
			r.logf("AUDIT WRITE FAILED (%s): %v", e.Kind, err)
		}
	})
}

// ClientKey is the payload field naming the program the request came
// through (sandbox.WithClient), on every event of a request that names
// one.
const ClientKey = "client"

// withClient is payload with ctx's client (sandbox.ClientOf) added; the
// payload's own field of that name, if any, is kept. Every payload of the
// core is a map; another value is wrapped as {"value": ...}.
func withClient(ctx context.Context, payload any) any {
	c := sandbox.ClientOf(ctx)
	if c == "" {
		return payload
	}
	var m map[string]any
	switch p := payload.(type) {
	case nil:
		m = map[string]any{}
	case map[string]any:
		if _, ok := p[ClientKey]; ok {
			return p
		}
		m = maps.Clone(p)
	default:
		m = map[string]any{"value": p}
	}
	m[ClientKey] = c
	return m
}

// Healthy fails closed: with a broken audit log (after a throttled try
// to restart it) nothing new runs.
func (r *Recorder) Healthy() error {
	if r.log == nil {
		return nil
	}
	r.retry.Try()
	if err := r.log.Err(); err != nil {
		return fmt.Errorf("the audit log cannot be written (%v): nothing runs until it can: %w", err, errdefs.ErrLimitExceeded)
	}
	return nil
}

// Start tries a stopped log every every (<= 0: DefaultRetry) until Stop.
func (r *Recorder) Start(every time.Duration) {
	if r.retry == nil {
		return
	}
	if every <= 0 {
		every = DefaultRetry
	}
	r.retry.Start(every)
}

// Stop ends Start's tries.
func (r *Recorder) Stop() {
	if r.retry != nil {
		r.retry.Stop()
	}
}

// RecordFirst returns err, the write an act depends on, named by what
// ("": as it is); the caller acts only when it is nil.
func RecordFirst(what string, err error) error {
	if err == nil || what == "" {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// BestEffort logs and counts err, the failed write of what was already
// done (what names it: "sandbox ID: record its stop").
func (r *Recorder) BestEffort(what string, err error) {
	if err == nil {
		return
	}
	r.lost.Add(1)
	r.logf("%s: %v", what, err)
}

// Lost is how many writes BestEffort and RecordAsync saw fail.
func (r *Recorder) Lost() int64 { return r.lost.Load() }
