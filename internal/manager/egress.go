package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// A sandbox's network namespace has only loopback. With an egress
// service (Config.Egress), the backend hands the manager every connection
// the sandbox's programs open to the in-sandbox proxy and every DNS query
// (runtime.Network); the manager passes them to the egress service with
// the sandbox, task and exec they came from, and the service decides by
// the sandbox's egress policy: its policy layers' egress sections, the
// runtime layer set with SetEgress, and the brokered secrets granted to it.
// Every decision is in the audit record before a byte goes out; a record
// that cannot be written refuses the destination.

// egressRecorder writes egress events to the audit log.
type egressRecorder struct{ m *Manager }

func (r egressRecorder) Record(ctx context.Context, e egress.Event) error {
	if r.m.cfg.Audit == nil {
		return nil
	}
	var payload map[string]any
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &payload); err != nil {
		return err
	}
	if e.Decision == "allow" && (e.Kind == egress.KindConnect || e.Kind == egress.KindRequest) {
		r.m.noteEgress(e.ExecID, e.Host)
	}
	// A brokered secret is named by its grant's id: under the key
	// "secret" it would look like a credential to the redactor.
	if id, ok := payload["secret"]; ok {
		delete(payload, "secret")
		payload["grant"] = id
	}
	// A sandbox's last refusal counts are written even on a full disk.
	return r.m.recordAs(context.WithoutCancel(ctx), audit.Entry{SandboxID: e.SandboxID, TaskID: e.TaskID, ExecID: e.ExecID, Actor: "egress", Kind: string(e.Kind), Payload: payload}, e.Final)
}

// sandboxNetwork is a sandbox's runtime.Network: what the backend calls.
type sandboxNetwork struct {
	m  *Manager
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
func (n *sandboxNetwork) ProxyRefused(pid int, reason string) {
	if len(reason) > maxReasonLen {
		reason = reason[:maxReasonLen]
	}
	n.refMu.Lock()
	defer n.refMu.Unlock()
	n.refPending++
	n.refReason, n.refPID = reason, pid
	if n.refTimer != nil {
		return // a record of this window is due
	}
	since := time.Since(n.refLast)
	switch {
	case n.refWindow == 0 || n.refLast.IsZero() || since >= 2*n.refWindow:
		n.refWindow = refusalWindow // the first, or after a quiet window
	case since < n.refWindow:
		n.refWindow = min(2*n.refWindow, maxRefusalWindow) // the flood goes on
	}
	wait := max(n.refWindow-since, 0)
	n.refTimer = time.AfterFunc(wait, n.flushRefusals)
}

func (n *sandboxNetwork) flushRefusals() {
	n.refMu.Lock()
	count, reason, pid := n.refPending, n.refReason, n.refPID
	n.refPending, n.refTimer, n.refLast = 0, nil, time.Now()
	n.refMu.Unlock()
	if count == 0 {
		return
	}
	src := n.source(pid)
	n.m.recordAsync(context.Background(), audit.Entry{SandboxID: n.id, TaskID: src.TaskID, ExecID: src.ExecID, Actor: "egress",
		Kind: KindProxyRefused, Payload: map[string]any{"decision": "deny", "reason": reason, "refused": count}})
}

// KindProxyRefused is the audit kind of proxy connections refused before
// any request was read: the sandbox's cap on open connections, or an
// agent too busy to hand them off. "refused" counts them.
const KindProxyRefused = "egress.refused"

func (n *sandboxNetwork) source(pid int) egress.Source {
	src := egress.Source{SandboxID: n.id}
	deadline := time.Now().Add(sourceWait)
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	for {
		ls := n.m.live[n.id]
		if ls != nil {
			src.TaskID = ls.taskID
		}
		if pid <= 0 {
			return src
		}
		for execID, r := range n.m.running {
			if r.sandboxID == n.id && r.p.PID() == pid {
				src.ExecID = execID
				return src
			}
		}
		// A command's first connection can arrive before Exec has noted
		// the command it came from: wait while one of this sandbox's
		// execs is starting (bounded), so the record names its command.
		if ls == nil || ls.starting == 0 || !time.Now().Before(deadline) {
			return src
		}
		n.m.mu.Unlock()
		time.Sleep(time.Millisecond)
		n.m.mu.Lock()
	}
}

// sourceWait bounds how long a connection waits for its command's exec
// to be noted (sandboxNetwork.source).
const sourceWait = 5 * time.Second

func (n *sandboxNetwork) ProxyConn(c net.Conn, pid int) {
	n.m.egressSvc.ServeProxyConnOf(context.Background(), c, n.id, func() egress.Source { return n.source(pid) })
}

// DNS looks up the query's source (the command it came from) only once
// the query is within the sandbox's rate: a flood costs a token check.
func (n *sandboxNetwork) DNS(ctx context.Context, query []byte, pid int) ([]byte, error) {
	return n.m.egressSvc.AnswerDNSOf(ctx, query, n.id, func() egress.Source { return n.source(pid) })
}

// proxyEnv points the usual clients (curl, git, npm, pip, go, ...) at the
// sandbox's proxy. A program that ignores it has no route at all.
func proxyEnv() []string {
	const proxy = "http://" + runtime.ProxyAddr
	return []string{
		"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "ALL_PROXY=" + proxy,
		"http_proxy=" + proxy, "https_proxy=" + proxy, "all_proxy=" + proxy,
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
		"npm_config_proxy=" + proxy, "npm_config_https_proxy=" + proxy,
	}
}

// network is what a new sandbox's spec gets: nil without an egress
// service (no network at all).
func (m *Manager) network(id string) runtime.Network {
	if m.egressSvc == nil {
		return nil
	}
	return &sandboxNetwork{m: m, id: id}
}

// effectiveEgress is a live sandbox's egress policy: its policy's, the
// runtime layer, and its brokered secrets with their values.
func (m *Manager) effectiveEgress(ctx context.Context, ls *live) (egress.Policy, error) {
	p := ls.pol.Egress
	if ls.egressLayer != nil {
		p = p.Merge(*ls.egressLayer)
	}
	return m.brokeredSecrets(ctx, ls.rec.ID, p)
}

// applyEgress gives the egress service a live sandbox's policy.
func (m *Manager) applyEgress(ctx context.Context, id string) error {
	if m.egressSvc == nil {
		return nil
	}
	m.mu.Lock()
	ls := m.live[id]
	m.mu.Unlock()
	if ls == nil {
		m.egressSvc.RemoveSandbox(id)
		return nil
	}
	p, err := m.effectiveEgress(ctx, ls)
	if err != nil {
		return err
	}
	return m.egressSvc.SetPolicy(id, p)
}

// EgressPolicy returns a running sandbox's effective egress policy
// (secret values left out).
func (m *Manager) EgressPolicy(ctx context.Context, id string) (*egress.Policy, error) {
	m.mu.Lock()
	ls := m.live[id]
	m.mu.Unlock()
	if ls == nil {
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	p, err := m.effectiveEgress(ctx, ls)
	if err != nil {
		return nil, err
	}
	for i := range p.Secrets {
		p.Secrets[i].Value = ""
	}
	return &p, nil
}

// SetEgress replaces a running sandbox's runtime egress layer (over its
// policy's egress sections). tightenOnly refuses a layer that would let
// more through (agents' callers).
func (m *Manager) SetEgress(ctx context.Context, id string, layer egress.Policy, tightenOnly bool) (*egress.Policy, error) {
	if m.egressSvc == nil {
		return nil, fmt.Errorf("this daemon runs no egress proxy: sandboxes have no network at all: %w", errdefs.ErrUnsupported)
	}
	if err := layer.Check(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	ls := m.live[id]
	m.mu.Unlock()
	if ls == nil {
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	m.layerMu.Lock() // one runtime-layer change at a time: the check below holds until it is applied
	defer m.layerMu.Unlock()
	if tightenOnly {
		if err := ls.pol.Relaxes(policy.Layer{Egress: &layer}); err != nil {
			return nil, err
		}
		// Against the sandbox's policy as it is now, not only its base: a
		// layer that drops the operator's deny rule or restores a revoked
		// grant loosens it.
		m.mu.Lock()
		old := ls.egressLayer
		m.mu.Unlock()
		now, next := ls.pol.Egress, ls.pol.Egress.Merge(layer)
		if old != nil {
			now = now.Merge(*old)
		}
		if loose := next.LooserThan(now); len(loose) > 0 {
			return nil, errdefs.Wrap(errdefs.ErrDenied, "this caller may only tighten the sandbox's egress policy; the new layer would relax it: %s (a layer replaces the last one: keep its deny rules)",
				strings.Join(loose, ", "))
		}
	}
	m.mu.Lock()
	old := ls.egressLayer
	ls.egressLayer = &layer
	m.mu.Unlock()
	if err := m.applyEgress(ctx, id); err != nil {
		m.mu.Lock()
		ls.egressLayer = old
		m.mu.Unlock()
		return nil, errors.Join(err, m.applyEgress(ctx, id))
	}
	_ = m.record(ctx, audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "egress.policy", Payload: map[string]any{"layer": layer}})
	return m.EgressPolicy(ctx, id)
}

// CutEgress turns the kill switch on (every sandbox's egress refused,
// open connections closed) or off.
func (m *Manager) CutEgress(ctx context.Context, on bool) error {
	if m.egressSvc == nil {
		return fmt.Errorf("this daemon runs no egress proxy: sandboxes have no network at all: %w", errdefs.ErrUnsupported)
	}
	m.egressSvc.CutAll(on)
	return m.record(ctx, audit.Entry{Kind: "egress.cut", Payload: map[string]any{"on": on}})
}

// EgressStatus says whether this daemon runs an egress proxy and whether
// the kill switch is on.
func (m *Manager) EgressStatus() (enabled, cut bool) {
	if m.egressSvc == nil {
		return false, false
	}
	return true, m.egressSvc.IsCut()
}

// EgressCA returns a running sandbox's CA certificate (PEM), which the
// proxy signs intercepted hosts' certificates with (brokered secrets).
func (m *Manager) EgressCA(id string) ([]byte, error) {
	if m.egressSvc == nil {
		return nil, fmt.Errorf("this daemon runs no egress proxy: %w", errdefs.ErrUnsupported)
	}
	return m.egressSvc.CACert(id)
}
