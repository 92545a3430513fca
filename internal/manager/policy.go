package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// Bounds of the approval path.
const (
	// DefaultApprovalWait is how long an exec waits for a human when the
	// caller does not say.
	DefaultApprovalWait = 5 * time.Minute
	// MaxApprovalWait bounds any wait; a request that does not wait stays
	// approvable this long (the agent retries the command once approved).
	MaxApprovalWait = time.Hour
	// DefaultGrant and MaxGrant bound how long an approval lets commands
	// through: grants always expire.
	DefaultGrant = 15 * time.Minute
	MaxGrant     = 24 * time.Hour
	// MaxBreakGlass bounds an operator override.
	MaxBreakGlass = 4 * time.Hour
)

type actorKey struct{}

// WithActor names who makes the requests of ctx ("operator:alice",
// "apikey:k-...") for the record.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

type approverKey struct{}

// AsApprover marks the caller of ctx as one who may decide approvals (the
// operator, on the daemon's unix socket). Approvals and GetApproval show
// such a caller a held command as it would run, credentials included;
// any other caller (an API key: the agent) sees it redacted (issue 17.8).
func AsApprover(ctx context.Context) context.Context {
	return context.WithValue(ctx, approverKey{}, true)
}

func isApprover(ctx context.Context) bool {
	v, _ := ctx.Value(approverKey{}).(bool)
	return v
}

// approvalFor is a as ctx's caller may see it.
func (m *Manager) approvalFor(ctx context.Context, a *Approval) (*Approval, error) {
	if isApprover(ctx) {
		return a, nil
	}
	return scrubbed(m.cfg.Redactor, a)
}

func actorOf(ctx context.Context) string {
	if a, _ := ctx.Value(actorKey{}).(string); a != "" {
		return a
	}
	return "unknown"
}

// PolicyError is a command the policy stopped: denied, held for approval
// (not waited for), refused by a human, or not approved in time. Its
// message is safe to show the agent.
type PolicyError struct {
	// Code: policy_denied, approval_pending, approval_denied, approval_timeout.
	Code     string           `json:"code"`
	Message  string           `json:"message"`
	Rules    []string         `json:"rules,omitempty"`
	Approval string           `json:"approval_id,omitempty"`
	Decision *policy.Decision `json:"-"`
}

func (e *PolicyError) Error() string { return e.Message }

// Unwrap gives the error kind: denied, pending or timeout.
func (e *PolicyError) Unwrap() error {
	switch e.Code {
	case "approval_pending":
		return errdefs.ErrPending
	case "approval_timeout":
		return errdefs.ErrTimeout
	}
	return errdefs.ErrDenied
}

func newPolicyError(code, msg string, d *policy.Decision, approval string) *PolicyError {
	e := &PolicyError{Code: code, Message: msg, Decision: d, Approval: approval}
	if d != nil {
		for _, m := range d.Matches {
			if m.Action == d.Action || (code != "policy_denied" && m.Action != policy.Allow) {
				e.Rules = appendUniq(e.Rules, m.Rule)
			}
		}
	}
	return e
}

func appendUniq(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// LoadPolicyFile reads a policy file for Config.Policy.
func LoadPolicyFile(path string) (*policy.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	f, err := policy.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return f, nil
}

// sandboxPolicy is the effective policy of a new sandbox: the daemon's
// file for its template, then the caller's layer (which, from a caller
// that may only tighten, must not relax anything).
func (m *Manager) sandboxPolicy(template string, layer *policy.Layer, tightenOnly bool, source string) (*policy.Policy, error) {
	pol := m.cfg.Policy.ForTemplate(template)
	if layer == nil {
		return pol, nil
	}
	if err := layer.Check(); err != nil {
		return nil, err
	}
	if tightenOnly {
		if err := pol.Relaxes(*layer); err != nil {
			return nil, err
		}
	}
	return pol.With(*layer, source)
}

// Policy returns a running sandbox's effective policy.
func (m *Manager) Policy(ctx context.Context, id string) (*policy.Policy, error) {
	m.mu.Lock()
	ls, ok := m.live[id]
	m.mu.Unlock()
	if !ok {
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	return ls.pol, nil
}

// Check explains what a sandbox's policy would decide for argv in cwd,
// grants and overrides included, without running or recording anything.
func (m *Manager) Check(ctx context.Context, id string, argv []string, cwd string) (*policy.Decision, error) {
	pol, err := m.Policy(ctx, id)
	if err != nil {
		return nil, err
	}
	if cwd == "" {
		cwd = policy.DefaultCwd
	}
	d := pol.Decide(policy.AnalyzeArgv(argv, cwd))
	if err := m.lift(ctx, id, d); err != nil {
		return nil, err
	}
	return d, nil
}

// lift applies the sandbox's grants to an ask, and an active break-glass
// override to anything short of allow.
func (m *Manager) lift(ctx context.Context, id string, d *policy.Decision) error {
	now := m.now()
	if d.Action == policy.Ask {
		gs, err := m.cfg.Store.ActiveGrants(ctx, id, now)
		if err != nil {
			return err
		}
		var pg []policy.Grant
		for _, g := range gs {
			pg = append(pg, grantOf(g))
		}
		d.ApplyGrants(pg, now)
	}
	if d.Action != policy.Allow {
		bgs, err := m.cfg.Store.BreakGlasses(ctx, id, true, now)
		if err != nil {
			return err
		}
		if len(bgs) > 0 {
			bg := bgs[0]
			d.BreakGlass = bg.ID
			d.Reason = fmt.Sprintf("BREAK-GLASS %s by %s (%s) overrode: %s", bg.ID, bg.Actor, bg.Reason, d.Reason)
			d.Action = policy.Allow
		}
	}
	return nil
}

func grantOf(g *store.Grant) policy.Grant {
	pg := policy.Grant{ID: g.ID, Scope: policy.GrantScope(g.Scope), Line: g.Line, Cwd: g.Cwd, Expires: g.Expires}
	for _, c := range g.Classes {
		pg.Classes = append(pg.Classes, policy.Class(c))
	}
	return pg
}

// gate decides an exec before anything reaches the sandbox. It returns
// the decision to record when the command may run, or the error that
// stopped it (the refusal is recorded here).
func (m *Manager) gate(ctx context.Context, id string, ls *live, req ExecRequest, cwd string) (*policy.Decision, error) {
	a := policy.AnalyzeArgv(req.Argv, cwd)
	if len(a.Secrets) > 0 {
		// Using a secret granted to this sandbox is not secret access.
		a = a.WithGranted(m.grantedVars(ctx, id))
	}
	d := ls.pol.Decide(a)
	if req.taskTest && d.Action != policy.Allow {
		// The task's own test command was set by whoever started the task.
		d.Matches = append([]policy.Match{{Rule: "task:test", Action: policy.Allow, Command: -1, Reason: "the task's test command"}}, d.Matches...)
		d.Action, d.Reason = policy.Allow, "allowed: the task's test command"
	}
	if err := m.lift(ctx, id, d); err != nil {
		return nil, err
	}
	if d.BreakGlass != "" {
		m.cfg.Logf("BREAK-GLASS %s: sandbox %s runs %q by override (%s)", d.BreakGlass, id, m.cfg.Redactor.String(a.Line), m.cfg.Redactor.String(d.Reason))
	}
	switch d.Action {
	case policy.Allow:
		return d, nil
	case policy.Deny:
		m.recordRefusal(ctx, id, req, cwd, d, d.Reason)
		return nil, newPolicyError("policy_denied", d.Reason, d, "")
	}
	return m.hold(ctx, id, ls, req, cwd, d)
}

// recordRefusal keeps a refused command in the exec record, with its
// decision, as a command that never started.
func (m *Manager) recordRefusal(ctx context.Context, id string, req ExecRequest, cwd string, d *policy.Decision, msg string) {
	now := m.now()
	dj := m.cfg.Redactor.JSON(mustJSON(d))
	argv := make([]string, len(req.Argv))
	for i, a := range req.Argv {
		argv[i] = m.cfg.Redactor.String(a)
	}
	msg = m.cfg.Redactor.String(msg)
	rec := &store.Exec{ID: newExecID(), SandboxID: id, Argv: argv, Cwd: cwd, EnvNames: envNames(req.Env),
		Started: now, Ended: &now, Error: msg, Decision: dj}
	if err := m.putExec(context.WithoutCancel(ctx), rec); err != nil {
		m.cfg.Logf("record refused exec in %s: %v", id, err)
	}
	_ = m.record(context.WithoutCancel(ctx), audit.Entry{SandboxID: id, TaskID: m.taskOf(id), ExecID: rec.ID, Kind: "exec.refused",
		Payload: map[string]any{"argv": argv, "cwd": cwd, "env_names": rec.EnvNames, "reason": msg, "decision": decisionPayload(d)}})
}

// Prompt is what an approver is shown.
type Prompt struct {
	Command     string         `json:"command"`
	Argv        []string       `json:"argv"`
	Cwd         string         `json:"cwd"`
	Classes     []policy.Class `json:"classes"`
	Held        []policy.Class `json:"held_classes,omitempty"`
	Writes      []string       `json:"writes,omitempty"`
	Network     []string       `json:"network,omitempty"`
	Credentials []string       `json:"credentials,omitempty"`
	Effect      string         `json:"effect"`
	Reason      string         `json:"reason"`
	Rules       []string       `json:"rules"`
	Policy      string         `json:"policy"`
}

func promptOf(req ExecRequest, cwd string, d *policy.Decision) *Prompt {
	a := d.Analysis
	p := &Prompt{Command: a.Line, Argv: req.Argv, Cwd: cwd, Classes: a.Classes, Held: d.HeldClasses(), Writes: a.Writes,
		Network: a.Hosts, Credentials: a.Secrets, Reason: d.Reason, Policy: d.Policy}
	for _, kv := range req.Env {
		name, _, _ := strings.Cut(kv, "=")
		if policy.SecretName(name) {
			p.Credentials = appendUniq(p.Credentials, "env "+name)
		}
	}
	var effects []string
	for _, c := range a.Commands {
		if slices.ContainsFunc(c.Classes, func(cl policy.Class) bool { return cl != policy.Read }) {
			effects = appendUniq(effects, c.Why)
		}
	}
	if len(effects) > 6 {
		effects = append(effects[:6], fmt.Sprintf("and %d more", len(effects)-6))
	}
	p.Effect = strings.Join(effects, "; ")
	for _, m := range d.Matches {
		if m.Action != policy.Allow {
			p.Rules = appendUniq(p.Rules, m.Rule)
		}
	}
	return p
}

// hold records a pending approval and waits (bounded) for a human.
func (m *Manager) hold(ctx context.Context, id string, ls *live, req ExecRequest, cwd string, d *policy.Decision) (*policy.Decision, error) {
	wait := req.ApprovalWait
	if wait == 0 {
		wait = m.cfg.ApprovalWait
	}
	if wait > MaxApprovalWait || req.NoWait {
		wait = MaxApprovalWait
	}
	now := m.now()
	// The approver sees the command as it would run, and its grant
	// matches exactly that line: a redacted one would hide from the
	// approver what any client can declare a secret (a host, a script),
	// and match other commands that redact alike. The record and the log
	// are redacted; the database keeps the line (README).
	pj, _ := json.Marshal(promptOf(req, cwd, d))
	ap := &store.Approval{ID: newID("ap-"), SandboxID: id, TaskID: ls.taskID, Line: d.Analysis.Line, Cwd: cwd, Request: pj,
		RequestedBy: actorOf(ctx), State: store.ApprovalPending, Created: now, Deadline: now.Add(wait)}
	ch := make(chan string, 1)
	m.mu.Lock()
	m.waiters[ap.ID] = ch
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.waiters, ap.ID)
		m.mu.Unlock()
	}()
	if err := m.cfg.Store.PutApproval(ctx, ap); err != nil {
		return nil, err
	}
	if err := m.record(ctx, audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "approval.request", Payload: map[string]any{
		"approval": ap.ID, "prompt": json.RawMessage(m.cfg.Redactor.JSON(pj)), "deadline": ap.Deadline}}); err != nil {
		return nil, err
	}
	m.cfg.Logf("approval %s: sandbox %s holds %q (%s)", ap.ID, id, m.cfg.Redactor.String(ap.Line), m.cfg.Redactor.String(d.Reason))
	if req.NoWait {
		return nil, newPolicyError("approval_pending", fmt.Sprintf("held for approval %s: %s", ap.ID, d.Reason), d, ap.ID)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var state string
	select {
	case state = <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
	if state == "" {
		// Nobody decided in time (or the caller went away): it expires,
		// unless a decision raced in, which then stands.
		err := m.cfg.Store.DecideApproval(context.WithoutCancel(ctx), ap.ID, store.ApprovalExpired, m.now(), "airlock", "not decided in time", "")
		if err == nil {
			_ = m.record(context.WithoutCancel(ctx), audit.Entry{SandboxID: id, TaskID: ls.taskID, Actor: "airlock", Kind: "approval.expire",
				Payload: map[string]any{"approval": ap.ID, "waited": wait.String()}})
			msg := fmt.Sprintf("approval %s was not given within %s: %s", ap.ID, wait, d.Reason)
			m.recordRefusal(ctx, id, req, cwd, d, msg)
			return nil, newPolicyError("approval_timeout", msg, d, ap.ID)
		}
		cur, gerr := m.cfg.Store.GetApproval(context.WithoutCancel(ctx), ap.ID)
		if gerr != nil {
			return nil, gerr
		}
		state = cur.State
	}
	cur, err := m.cfg.Store.GetApproval(context.WithoutCancel(ctx), ap.ID)
	if err != nil {
		return nil, err
	}
	if state != store.ApprovalApproved {
		msg := fmt.Sprintf("approval %s was denied by %s: %s", ap.ID, cur.DecidedBy, cur.Reason)
		m.recordRefusal(ctx, id, req, cwd, d, msg)
		return nil, newPolicyError("approval_denied", msg, d, ap.ID)
	}
	// Decide again: the grant just made must cover it, and nothing else
	// (a newer deny) may have changed.
	again := ls.pol.Decide(policy.AnalyzeArgv(req.Argv, cwd))
	if err := m.lift(ctx, id, again); err != nil {
		return nil, err
	}
	if again.Action != policy.Allow {
		msg := fmt.Sprintf("approval %s was given but does not cover the command: %s", ap.ID, again.Reason)
		m.recordRefusal(ctx, id, req, cwd, again, msg)
		return nil, newPolicyError("approval_denied", msg, again, ap.ID)
	}
	return again, nil
}

// Approval is an approval as the API shows it.
type Approval struct {
	ID          string     `json:"id"`
	SandboxID   string     `json:"sandbox_id"`
	TaskID      string     `json:"task_id,omitempty"`
	State       string     `json:"state"`
	Prompt      *Prompt    `json:"prompt"`
	RequestedBy string     `json:"requested_by"`
	Created     time.Time  `json:"created"`
	Deadline    time.Time  `json:"deadline"`
	Decided     *time.Time `json:"decided,omitempty"`
	DecidedBy   string     `json:"decided_by,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	GrantID     string     `json:"grant_id,omitempty"`
}

func approvalView(a *store.Approval, now time.Time) *Approval {
	v := &Approval{ID: a.ID, SandboxID: a.SandboxID, TaskID: a.TaskID, State: a.State, RequestedBy: a.RequestedBy,
		Created: a.Created, Deadline: a.Deadline, Decided: a.Decided, DecidedBy: a.DecidedBy, Reason: a.Reason, GrantID: a.GrantID}
	_ = json.Unmarshal(a.Request, &v.Prompt)
	if v.State == store.ApprovalPending && !now.Before(a.Deadline) {
		v.State = store.ApprovalExpired
	}
	return v
}

// Approvals lists approvals, oldest first, by sandbox and state ("" for
// any).
func (m *Manager) Approvals(ctx context.Context, sandboxID, state string) ([]*Approval, error) {
	if state != "" && state != store.ApprovalPending && state != store.ApprovalApproved && state != store.ApprovalDenied && state != store.ApprovalExpired {
		return nil, fmt.Errorf("state %q: pending, approved, denied or expired: %w", state, errdefs.ErrInvalid)
	}
	q := state
	if state == store.ApprovalExpired {
		q = "" // pending past their deadline are expired too
	}
	list, err := m.cfg.Store.ListApprovals(ctx, sandboxID, q)
	if err != nil {
		return nil, err
	}
	now := m.now()
	out := []*Approval{}
	for _, a := range list {
		v, err := m.approvalFor(ctx, approvalView(a, now))
		if err != nil {
			return nil, err
		}
		if state == "" || v.State == state {
			out = append(out, v)
		}
	}
	return out, nil
}

// GetApproval returns one approval.
func (m *Manager) GetApproval(ctx context.Context, id string) (*Approval, error) {
	a, err := m.cfg.Store.GetApproval(ctx, id)
	if err != nil {
		return nil, err
	}
	return m.approvalFor(ctx, approvalView(a, m.now()))
}

// ApproveRequest is a human's yes.
type ApproveRequest struct {
	// Scope: "command" (this exact command line in this directory, the
	// default) or "class" (any command whose held classes are these).
	Scope policy.GrantScope `json:"scope,omitempty"`
	// For is how long the grant lasts (default 15m, at most 24h).
	For time.Duration `json:"-"`
	// Reason is kept with the approval.
	Reason string `json:"reason,omitempty"`
}

// Approve grants a pending approval: the held exec runs, and the grant
// lets the same command (or class) through until it expires, in this
// sandbox only.
func (m *Manager) Approve(ctx context.Context, id string, req ApproveRequest) (*Approval, error) {
	if req.Scope == "" {
		req.Scope = policy.ScopeCommand
	}
	if req.Scope != policy.ScopeCommand && req.Scope != policy.ScopeClass {
		return nil, fmt.Errorf("scope %q: command or class: %w", req.Scope, errdefs.ErrInvalid)
	}
	if req.For == 0 {
		req.For = DefaultGrant
	}
	if req.For < 0 || req.For > MaxGrant {
		return nil, fmt.Errorf("a grant lasts more than 0 and at most %s: %w", MaxGrant, errdefs.ErrInvalid)
	}
	a, err := m.decidable(ctx, id)
	if err != nil {
		return nil, err
	}
	var prompt Prompt
	_ = json.Unmarshal(a.Request, &prompt)
	now := m.now()
	g := &store.Grant{ID: newID("gr-"), SandboxID: a.SandboxID, TaskID: a.TaskID, ApprovalID: a.ID, Scope: string(req.Scope),
		Created: now, Expires: now.Add(req.For), CreatedBy: actorOf(ctx)}
	if req.Scope == policy.ScopeCommand {
		g.Line, g.Cwd = a.Line, a.Cwd
	} else {
		if len(prompt.Held) == 0 {
			return nil, fmt.Errorf("approval %s is held by a rule or the write scope (%s), not by a class: approve the command: %w",
				id, strings.Join(prompt.Rules, ", "), errdefs.ErrInvalid)
		}
		for _, c := range prompt.Held {
			g.Classes = append(g.Classes, string(c))
		}
	}
	if err := m.cfg.Store.Approve(ctx, a.ID, now, actorOf(ctx), req.Reason, g); err != nil {
		return nil, err
	}
	m.cfg.Logf("approval %s approved by %s (%s for %s): %q", a.ID, actorOf(ctx), req.Scope, req.For, m.cfg.Redactor.String(a.Line))
	_ = m.record(ctx, audit.Entry{SandboxID: a.SandboxID, TaskID: a.TaskID, Kind: "approval.approve", Payload: map[string]any{
		"approval": a.ID, "grant": g.ID, "scope": g.Scope, "line": g.Line, "cwd": g.Cwd, "classes": g.Classes, "expires": g.Expires, "reason": req.Reason}})
	m.notify(a.ID, store.ApprovalApproved)
	return m.GetApproval(ctx, id)
}

// Deny refuses a pending approval; the held exec fails with the reason.
func (m *Manager) Deny(ctx context.Context, id, reason string) (*Approval, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("a denial needs a reason (it is shown to the agent): %w", errdefs.ErrInvalid)
	}
	a, err := m.decidable(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := m.cfg.Store.DecideApproval(ctx, a.ID, store.ApprovalDenied, m.now(), actorOf(ctx), reason, ""); err != nil {
		return nil, err
	}
	m.cfg.Logf("approval %s denied by %s: %s", a.ID, actorOf(ctx), reason)
	_ = m.record(ctx, audit.Entry{SandboxID: a.SandboxID, TaskID: a.TaskID, Kind: "approval.deny", Payload: map[string]any{"approval": a.ID, "reason": reason}})
	m.notify(a.ID, store.ApprovalDenied)
	return m.GetApproval(ctx, id)
}

func (m *Manager) decidable(ctx context.Context, id string) (*store.Approval, error) {
	a, err := m.cfg.Store.GetApproval(ctx, id)
	if err != nil {
		return nil, err
	}
	if a.State != store.ApprovalPending {
		return nil, fmt.Errorf("approval %s is already %s: %w", id, a.State, errdefs.ErrConflict)
	}
	if !m.now().Before(a.Deadline) {
		_ = m.cfg.Store.DecideApproval(ctx, id, store.ApprovalExpired, m.now(), "airlock", "not decided in time", "")
		return nil, fmt.Errorf("approval %s expired at %s: %w", id, a.Deadline.Format(time.RFC3339), errdefs.ErrConflict)
	}
	return a, nil
}

func (m *Manager) notify(id, state string) {
	m.mu.Lock()
	ch := m.waiters[id]
	m.mu.Unlock()
	if ch != nil {
		select {
		case ch <- state:
		default:
		}
	}
}

// BreakGlass is an operator override as the API shows it.
type BreakGlass struct {
	ID        string    `json:"id"`
	SandboxID string    `json:"sandbox_id"`
	Actor     string    `json:"actor"`
	Reason    string    `json:"reason"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
}

// BreakGlass lets every command of one running sandbox through, denials
// included, for a bounded time. It is loud: logged when made and with
// every command it lets through, and marked in each exec's decision.
func (m *Manager) BreakGlass(ctx context.Context, id, reason string, d time.Duration) (*BreakGlass, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("break-glass needs a reason: %w", errdefs.ErrInvalid)
	}
	if d == 0 {
		d = DefaultGrant
	}
	if d < 0 || d > MaxBreakGlass {
		return nil, fmt.Errorf("break-glass lasts more than 0 and at most %s: %w", MaxBreakGlass, errdefs.ErrInvalid)
	}
	if _, err := m.runtimeSandbox(ctx, id); err != nil {
		return nil, err
	}
	now := m.now()
	b := &store.BreakGlass{ID: newID("bg-"), SandboxID: id, Actor: actorOf(ctx), Reason: reason, Created: now, Expires: now.Add(d)}
	if err := m.cfg.Store.PutBreakGlass(ctx, b); err != nil {
		return nil, err
	}
	m.cfg.Logf("BREAK-GLASS %s: %s overrides the policy of sandbox %s until %s: %s", b.ID, b.Actor, id, b.Expires.Format(time.RFC3339), reason)
	if err := m.record(ctx, audit.Entry{SandboxID: id, TaskID: m.taskOf(id), Kind: "operator.breakglass", Payload: map[string]any{
		"break_glass": b.ID, "reason": reason, "expires": b.Expires}}); err != nil {
		return nil, err
	}
	return &BreakGlass{ID: b.ID, SandboxID: id, Actor: b.Actor, Reason: reason, Created: now, Expires: b.Expires}, nil
}

// policedFiles is the agent's file access: the same policy as commands
// (write scope, secrets) applies to file writes and reads.
type policedFiles struct {
	runtime.Files
	m  *Manager
	id string
	ls *live
}

// AgentFiles gives the API's callers file access under the sandbox's
// policy; the daemon's own uses (checkout, diff, snapshot) use Files.
func (m *Manager) AgentFiles(ctx context.Context, id string) (runtime.Files, error) {
	f, err := m.Files(ctx, id)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	ls := m.live[id]
	m.mu.Unlock()
	if ls == nil {
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	return &policedFiles{Files: f, m: m, id: id, ls: ls}, nil
}

func (f *policedFiles) check(ctx context.Context, op, p string, write bool) error {
	_, err := f.decide(ctx, op, p, write, true)
	return err
}

// decide is check, which records an allowed write only when record is
// set; it returns the break-glass that allowed it, if one did.
func (f *policedFiles) decide(ctx context.Context, op, p string, write, record bool) (string, error) {
	if write {
		f.m.mu.Lock()
		finishing := f.ls.state == Finishing
		f.m.mu.Unlock()
		if finishing {
			return "", errFinishing(f.ls.taskID)
		}
	}
	cmd := policy.Command{Argv: []string{"files:" + op, p}, Classes: []policy.Class{policy.Read}, Why: "file API " + op}
	if write {
		cmd.Classes = []policy.Class{policy.Write}
		cmd.Writes = []string{p}
	}
	a := policy.FileAnalysis(cmd)
	d := f.ls.pol.Decide(a)
	if err := f.m.lift(ctx, f.id, d); err != nil {
		return "", err
	}
	if d.BreakGlass != "" {
		f.m.cfg.Logf("BREAK-GLASS %s: sandbox %s file %s %s by override", d.BreakGlass, f.id, op, p)
	}
	if d.Action == policy.Allow {
		if write && record {
			return d.BreakGlass, f.m.record(ctx, audit.Entry{SandboxID: f.id, TaskID: f.ls.taskID, Kind: "file." + op, Payload: map[string]any{"path": p, "break_glass": d.BreakGlass}})
		}
		return d.BreakGlass, nil
	}
	_ = f.m.record(ctx, audit.Entry{SandboxID: f.id, TaskID: f.ls.taskID, Kind: "file.refused", Payload: map[string]any{"op": op, "path": p, "decision": decisionPayload(d)}})
	msg := d.Reason
	if d.Action == policy.Ask {
		msg += " (file operations are not held for approval: run the change as a command)"
	}
	return "", newPolicyError("policy_denied", msg, d, "")
}

// restrictWrites applies a write scope inside the sandbox: each glob's
// directory part (src/** -> /workspace/src), Landlock's granularity. A
// backend that cannot is an error: the scope never silently lapses.
func restrictWrites(ctx context.Context, sb runtime.Sandbox, scope []string) error {
	ws, ok := sb.(runtime.WriteScoper)
	if !ok {
		return fmt.Errorf("backend cannot confine writes to a scope: %w", errdefs.ErrUnsupported)
	}
	// The repository's own .git stays writable so the agent can commit;
	// the host's diff reads the files alone and ignores it.
	roots := append(policy.ScopeRoots(scope), policy.DefaultCwd+"/.git")
	_, err := ws.RestrictWrites(ctx, roots)
	return err
}
