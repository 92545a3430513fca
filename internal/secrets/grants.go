package secrets

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Grant is a grant as the API shows it.
type Grant struct {
	ID          string     `json:"id"`
	Project     string     `json:"project"`
	Secret      string     `json:"secret"`
	SandboxID   string     `json:"sandbox_id"`
	TaskID      string     `json:"task_id,omitempty"`
	Mode        string     `json:"mode"`
	Env         string     `json:"env"`
	Hosts       []string   `json:"hosts"`
	Placeholder string     `json:"placeholder,omitempty"`
	Headers     []string   `json:"headers,omitempty"` // broker: the request headers the value goes in
	Created     time.Time  `json:"created"`
	Expires     time.Time  `json:"expires"`
	CreatedBy   string     `json:"created_by"`
	Revoked     *time.Time `json:"revoked,omitempty"`
	State       string     `json:"state"` // active, expired, revoked
}

// GrantRequest asks to let a sandbox (or a task's sandbox) use a secret.
type GrantRequest struct {
	SandboxID string   `json:"sandbox_id,omitempty"`
	TaskID    string   `json:"task_id,omitempty"`
	Mode      string   `json:"mode,omitempty"` // env (default) or broker
	Env       string   `json:"env,omitempty"`  // default: the secret's name
	Hosts     []string `json:"hosts"`
	// Headers (broker mode) are the request headers the value may go in;
	// empty: Authorization only. Never Cookie.
	Headers    []string `json:"headers,omitempty"`
	TTLSeconds int64    `json:"ttl_seconds,omitempty"`
}

var hostPatternRE = lazyre.New(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Grant lets a sandbox (or a task's sandbox) use its project's secret
// name. A grant the egress proxy cannot take does not stand.
func (s *Secrets) Grant(ctx context.Context, name string, req GrantRequest) (*Grant, error) {
	if _, err := s.sealer(); err != nil {
		return nil, err
	}
	sandboxID, taskID, project, err := s.grantee(ctx, req)
	if err != nil {
		return nil, err
	}
	// The name is looked up in the sandbox's project only: another
	// project's secret of that name is as missing as none.
	if _, err := s.st.GetSecret(ctx, project, name); err != nil {
		return nil, err
	}
	g, err := s.newGrant(ctx, name, req)
	if err != nil {
		return nil, err
	}
	g.SandboxID, g.TaskID = sandboxID, taskID
	if err := s.st.PutSecretGrant(ctx, g); err != nil {
		return nil, err
	}
	_ = s.c.Record(ctx, audit.Entry{SandboxID: sandboxID, TaskID: taskID, Kind: "secret.grant", Payload: map[string]any{
		"grant": g.ID, "secret": name, "mode": g.Mode, "env": g.Env, "hosts": g.Hosts, "headers": g.Headers, "expires": g.Expires}})
	if err := s.c.ApplyEgress(ctx, sandboxID); err != nil {
		_ = s.st.RevokeSecretGrant(context.WithoutCancel(ctx), g.ID, s.c.Now())
		return nil, err
	}
	return view(g, g.Created), nil
}

// grantee is the live sandbox (and its task) a grant is for, and its
// project. A sandbox or task of a project the caller does not see is
// answered as one that does not exist.
func (s *Secrets) grantee(ctx context.Context, req GrantRequest) (sandboxID, taskID, project string, err error) {
	if (req.SandboxID == "") == (req.TaskID == "") {
		return "", "", "", fmt.Errorf("name exactly one of sandbox and task: %w", errdefs.ErrInvalid)
	}
	sandboxID, taskID = req.SandboxID, req.TaskID
	var state string
	if taskID != "" {
		t, err := s.st.GetTask(ctx, taskID)
		if err != nil {
			return "", "", "", err
		}
		sandboxID, state = t.SandboxID, t.State
	}
	rec, err := s.st.GetSandbox(ctx, sandboxID)
	if err == nil && !tenant.Of(ctx).Sees(rec.Project) {
		err = fmt.Errorf("store: sandbox %q: %w", sandboxID, errdefs.ErrNotFound)
	}
	if err != nil {
		if taskID != "" && errors.Is(err, errdefs.ErrNotFound) {
			err = fmt.Errorf("store: task %q: %w", taskID, errdefs.ErrNotFound)
		}
		return "", "", "", err
	}
	if taskID != "" && state != "open" {
		return "", "", "", fmt.Errorf("task %s is %s: %w", taskID, state, errdefs.ErrConflict)
	}
	li, ok := s.c.Live(sandboxID)
	if !ok {
		return "", "", "", fmt.Errorf("sandbox %s is stopped: %w", sandboxID, errdefs.ErrConflict)
	}
	if taskID == "" {
		taskID = li.TaskID
	}
	return sandboxID, taskID, rec.Project, nil
}

// newGrant checks what req asks for and makes the grant of it (without
// its sandbox and task).
func (s *Secrets) newGrant(ctx context.Context, name string, req GrantRequest) (*store.SecretGrant, error) {
	mode := req.Mode
	if mode == "" {
		mode = "env"
	}
	if mode != "env" && mode != "broker" {
		return nil, fmt.Errorf("mode %q: env or broker: %w", mode, errdefs.ErrInvalid)
	}
	if mode == "broker" && !s.c.HasEgress() {
		return nil, fmt.Errorf("brokered secrets need the egress proxy's broker, which this daemon does not run: %w", errdefs.ErrUnsupported)
	}
	env := req.Env
	if env == "" {
		env = name
	}
	if !nameRE().MatchString(env) {
		return nil, fmt.Errorf("env %q: a variable name: %w", env, errdefs.ErrInvalid)
	}
	hosts, err := grantHosts(req.Hosts)
	if err != nil {
		return nil, err
	}
	headers, err := grantHeaders(mode, req.Headers)
	if err != nil {
		return nil, err
	}
	d, err := reqcheck.Seconds("ttl_seconds", req.TTLSeconds, MaxGrantFor)
	if err != nil {
		return nil, err
	}
	if d == 0 {
		d = DefaultGrantFor
	}
	now := s.c.Now()
	g := &store.SecretGrant{ID: newID("sg-"), Secret: name, Mode: mode, Env: env, Hosts: hosts,
		Headers: headers, Created: now, Expires: now.Add(d), CreatedBy: s.c.Actor(ctx)}
	if mode == "broker" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		g.Placeholder = "airlock-brokered-" + hex.EncodeToString(b[:])
	}
	return g, nil
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// grantHosts checks and normalizes the hosts a grant is for (at least one).
func grantHosts(hs []string) ([]string, error) {
	if len(hs) == 0 {
		return nil, fmt.Errorf("name the hosts the secret is for (hosts): %w", errdefs.ErrInvalid)
	}
	var hosts []string
	for _, h := range hs {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if len(h) > 253 || !hostPatternRE().MatchString(h) {
			return nil, fmt.Errorf("host %q: a DNS name, optionally *.name: %w", h, errdefs.ErrInvalid)
		}
		hosts = appendUniq(hosts, h)
	}
	return hosts, nil
}

// grantHeaders checks the headers a grant names: broker mode only, at
// most 16, none that may not carry a secret (egress.CheckSecretHeader).
func grantHeaders(mode string, hs []string) ([]string, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	if mode != "broker" {
		return nil, fmt.Errorf("headers: only a brokered grant goes in headers: %w", errdefs.ErrInvalid)
	}
	if len(hs) > 16 {
		return nil, fmt.Errorf("headers: at most 16: %w", errdefs.ErrInvalid)
	}
	var out []string
	for _, h := range hs {
		if err := egress.CheckSecretHeader(h); err != nil {
			return nil, fmt.Errorf("headers: %v: %w", err, errdefs.ErrInvalid)
		}
		out = appendUniq(out, textproto.CanonicalMIMEHeaderKey(h))
	}
	return out, nil
}

func appendUniq(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

func view(g *store.SecretGrant, now time.Time) *Grant {
	v := &Grant{ID: g.ID, Project: g.Project, Secret: g.Secret, SandboxID: g.SandboxID, TaskID: g.TaskID, Mode: g.Mode, Env: g.Env, Hosts: g.Hosts,
		Placeholder: g.Placeholder, Headers: g.Headers, Created: g.Created, Expires: g.Expires, CreatedBy: g.CreatedBy, Revoked: g.Revoked, State: "active"}
	switch {
	case g.Revoked != nil:
		v.State = "revoked"
	case !now.Before(g.Expires):
		v.State = "expired"
	}
	return v
}

// Grants lists the grants of the caller's project (the operator's: of
// every project): of one sandbox, or all ("").
func (s *Secrets) Grants(ctx context.Context, sandboxID string) ([]*Grant, error) {
	if err := s.attached(); err != nil {
		return nil, err
	}
	l, err := s.st.ListSecretGrants(ctx, tenant.Scope(ctx), sandboxID)
	if err != nil {
		return nil, err
	}
	now := s.c.Now()
	out := make([]*Grant, 0, len(l))
	for _, g := range l {
		out = append(out, view(g, now))
	}
	return out, nil
}

// Revoke ends a grant now.
func (s *Secrets) Revoke(ctx context.Context, id string) error {
	if err := s.attached(); err != nil {
		return err
	}
	g, err := s.st.GetSecretGrant(ctx, id)
	if err == nil && !tenant.Of(ctx).Sees(g.Project) {
		err = fmt.Errorf("store: secret grant %q: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if err := s.st.RevokeSecretGrant(ctx, id, s.c.Now()); err != nil {
		return err
	}
	s.c.ReapplyEgress(ctx, g.SandboxID)
	return s.c.Record(ctx, audit.Entry{SandboxID: g.SandboxID, TaskID: g.TaskID, Kind: "secret.revoke", Payload: map[string]any{"grant": id, "secret": g.Secret}})
}

// OnTaskEnd (hook.TaskEndHook) ends the task's grants.
func (s *Secrets) OnTaskEnd(ctx context.Context, sb hook.SandboxRef) error {
	return s.EndTaskGrants(ctx, sb.ID, sb.TaskID)
}

// EndTaskGrants revokes the active grants made to a task, which has
// ended (each on the record, reason "task finished"); a kept sandbox
// outlives them. Running it again ends nothing more.
func (s *Secrets) EndTaskGrants(ctx context.Context, sandboxID, taskID string) error {
	if err := s.attached(); err != nil {
		return err
	}
	gs, err := s.st.ActiveSecretGrants(ctx, sandboxID, s.c.Now())
	if err != nil {
		return err
	}
	ended := false
	for _, g := range gs {
		if g.TaskID != taskID {
			continue
		}
		if err := s.st.RevokeSecretGrant(ctx, g.ID, s.c.Now()); err != nil {
			return err
		}
		ended = true
		_ = s.c.Record(ctx, audit.Entry{SandboxID: g.SandboxID, TaskID: taskID, Kind: "secret.revoke", Payload: map[string]any{"grant": g.ID, "secret": g.Secret, "reason": "task finished"}})
	}
	if ended {
		s.c.ReapplyEgress(ctx, sandboxID)
	}
	return nil
}
