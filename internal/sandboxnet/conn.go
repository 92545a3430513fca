package sandboxnet

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
)

// recorder writes the egress service's events to the audit log.
type recorder struct{ n *Net }

func (r recorder) Record(ctx context.Context, e egress.Event) error {
	var payload map[string]any
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &payload); err != nil {
		return err
	}
	if e.Decision == "allow" && (e.Kind == egress.KindConnect || e.Kind == egress.KindRequest) {
		r.n.core.NoteEgress(e.ExecID, e.Host)
	}
	// A brokered secret is named by its grant's id: under the key
	// "secret" it would look like a credential to the redactor.
	if id, ok := payload["secret"]; ok {
		delete(payload, "secret")
		payload["grant"] = id
	}
	// A sandbox's last refusal counts are written even on a full disk.
	return r.n.core.RecordAs(context.WithoutCancel(ctx), audit.Entry{SandboxID: e.SandboxID, TaskID: e.TaskID, ExecID: e.ExecID, Actor: "egress", Kind: string(e.Kind), Payload: payload}, e.Final)
}

// sandboxNetwork is a sandbox's runtime.Network: what the backend calls.
type sandboxNetwork struct {
	n  *Net
	id string

	refMu      sync.Mutex // guards the refusals not yet recorded
	refLast    time.Time  // when the last refusal record was written
	refPending int
	refReason  string
	refPID     int
	refTimer   *time.Timer
	refWindow  time.Duration // the current window: longer while a flood goes on
}

// refusalWindow: proxy refusals of a sandbox are recorded at most once
// per window, the later ones of a window as one entry with their count,
// so that a flood of refused connections cannot flood the record. While
// refusals keep coming (one within the window after the last record),
// the window doubles, up to maxRefusalWindow: these records are not
// charged to the sandbox's audit budget nor stopped by its cut, so a
// flood held for days must not write one a second for days. A quiet
// window brings it back to refusalWindow. The counts stay exact.
var (
	refusalWindow    = time.Second
	maxRefusalWindow = 10 * time.Minute
)

// maxReasonLen bounds a refusal's reason in the record (the agent's
// reports are text from inside the boundary).
const maxReasonLen = 200

// ProxyRefused records a proxy connection the backend refused
// (runtime.ProxyRefusals), aggregated per refusalWindow.
func (s *sandboxNetwork) ProxyRefused(pid int, reason string) {
	if len(reason) > maxReasonLen {
		reason = reason[:maxReasonLen]
	}
	s.refMu.Lock()
	defer s.refMu.Unlock()
	s.refPending++
	s.refReason, s.refPID = reason, pid
	if s.refTimer != nil {
		return // a record of this window is due
	}
	since := time.Since(s.refLast)
	switch {
	case s.refWindow == 0 || s.refLast.IsZero() || since >= 2*s.refWindow:
		s.refWindow = refusalWindow // the first, or after a quiet window
	case since < s.refWindow:
		s.refWindow = min(2*s.refWindow, maxRefusalWindow) // the flood goes on
	}
	wait := max(s.refWindow-since, 0)
	s.refTimer = time.AfterFunc(wait, s.flushRefusals)
}

func (s *sandboxNetwork) flushRefusals() {
	s.refMu.Lock()
	count, reason, pid := s.refPending, s.refReason, s.refPID
	s.refPending, s.refTimer, s.refLast = 0, nil, time.Now()
	s.refMu.Unlock()
	if count == 0 {
		return
	}
	src := s.source(pid)
	s.n.core.RecordAsync(context.Background(), audit.Entry{SandboxID: s.id, TaskID: src.TaskID, ExecID: src.ExecID, Actor: "egress",
		Kind: KindProxyRefused, Payload: map[string]any{"decision": "deny", "reason": reason, "refused": count}})
}

// KindProxyRefused is the audit kind of proxy connections refused before
// any request was read: the sandbox's cap on open connections, or an
// agent too busy to hand them off. "refused" counts them.
const KindProxyRefused = "egress.refused"

// source is the sandbox, task and exec a connection of process pid came
// from (Core.ExecOf waits, bounded, for an exec still starting).
func (s *sandboxNetwork) source(pid int) egress.Source {
	taskID, execID := s.n.core.ExecOf(s.id, pid)
	return egress.Source{SandboxID: s.id, TaskID: taskID, ExecID: execID}
}

func (s *sandboxNetwork) ProxyConn(c net.Conn, pid int) {
	s.n.svc.ServeProxyConnOf(context.Background(), c, s.id, func() egress.Source { return s.source(pid) })
}

// DNS looks up the query's source (the command it came from) only once
// the query is within the sandbox's rate: a flood costs a token check.
func (s *sandboxNetwork) DNS(ctx context.Context, query []byte, pid int) ([]byte, error) {
	return s.n.svc.AnswerDNSOf(ctx, query, s.id, func() egress.Source { return s.source(pid) })
}
