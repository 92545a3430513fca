package manager

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/textproto"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/store"
)

// Secrets are kept sealed (AES-256-GCM under the daemon's secret key, the
// name as associated data) and granted to one sandbox or task at a time,
// for a while, for named hosts. Two modes:
//
//   - env: the value is put into the environment of every command the
//     sandbox runs while the grant lasts, for tools that read it there.
//     The sandbox then holds it; the egress policy decides where it can
//     be sent.
//   - broker: the sandbox holds only a placeholder; the egress proxy puts
//     the value into request headers to the grant's hosts (which the
//     egress policy must also allow). A daemon without an egress proxy
//     refuses such grants (unsupported), never hands out a placeholder
//     that nothing replaces.
//
// Values are never returned by the API, never logged, and are added to
// the redactor, so output that shows one is redacted before it is kept.

// Secret limits.
const (
	MaxSecretBytes        = 64 << 10
	DefaultSecretGrantFor = time.Hour
	MaxSecretGrantFor     = 24 * time.Hour
)

var secretNameRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// SecretInfo is a secret as the API shows it: never its value.
type SecretInfo struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// SecretGrant is a grant as the API shows it.
type SecretGrant struct {
	ID          string     `json:"id"`
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

// GrantSecretRequest asks to let a sandbox (or a task's sandbox) use a
// secret.
type GrantSecretRequest struct {
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

// loadSecretKey reads the daemon's secret key, making it on first use.
func loadSecretKey(path string) (cipher.AEAD, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
		f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if ferr != nil {
			return nil, fmt.Errorf("secret key %s: %w", path, ferr)
		}
		_, werr := f.Write(key)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(path)
			return nil, fmt.Errorf("secret key %s: %w", path, werr)
		}
	} else if err != nil {
		return nil, fmt.Errorf("secret key %s: %w", path, err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("secret key %s: %d bytes, want 32 (restore the right file; secrets sealed with another key cannot be opened)", path, len(key))
	}
	block, _ := aes.NewCipher(key)
	return cipher.NewGCM(block)
}

func secretAAD(name string) []byte { return []byte("airlock-secret\x00" + name) }

func (m *Manager) sealer() (cipher.AEAD, error) {
	if m.secretKey == nil {
		return nil, fmt.Errorf("this daemon keeps no secrets (no secret key configured): %w", errdefs.ErrUnsupported)
	}
	return m.secretKey, nil
}

func (m *Manager) open(sec *store.Secret) ([]byte, error) {
	aead, err := m.sealer()
	if err != nil {
		return nil, err
	}
	ns := aead.NonceSize()
	if len(sec.Sealed) < ns {
		return nil, fmt.Errorf("secret %s: sealed value is damaged", sec.Name)
	}
	v, err := aead.Open(nil, sec.Sealed[:ns], sec.Sealed[ns:], secretAAD(sec.Name))
	if err != nil {
		return nil, fmt.Errorf("secret %s cannot be opened with this daemon's secret key (was it sealed with another?)", sec.Name)
	}
	return v, nil
}

// learnStoredSecrets adds every stored value to the redactor.
func (m *Manager) learnStoredSecrets(ctx context.Context) error {
	if m.secretKey == nil {
		return nil
	}
	l, err := m.cfg.Store.ListSecrets(ctx)
	if err != nil {
		return err
	}
	for _, sec := range l {
		v, err := m.open(sec)
		if err != nil {
			return err
		}
		m.cfg.Redactor.Add(string(v))
	}
	return nil
}

// SetSecret stores a secret (replacing one of the same name).
func (m *Manager) SetSecret(ctx context.Context, name string, value []byte) (*SecretInfo, error) {
	aead, err := m.sealer()
	if err != nil {
		return nil, err
	}
	if !secretNameRE().MatchString(name) {
		return nil, fmt.Errorf("secret name %q: letters, digits and _, not starting with a digit, at most 128: %w", name, errdefs.ErrInvalid)
	}
	if len(value) == 0 || len(value) > MaxSecretBytes {
		return nil, fmt.Errorf("secret value: 1 to %d bytes: %w", MaxSecretBytes, errdefs.ErrInvalid)
	}
	if strings.ContainsRune(string(value), 0) {
		return nil, fmt.Errorf("secret value: no NUL bytes (it may be put into an environment): %w", errdefs.ErrInvalid)
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	now := m.now()
	sec := &store.Secret{Name: name, Sealed: aead.Seal(nonce, nonce, value, secretAAD(name)), Created: now, Updated: now}
	m.cfg.Redactor.Add(string(value))
	if err := m.cfg.Store.PutSecret(ctx, sec); err != nil {
		return nil, err
	}
	_ = m.record(ctx, audit.Entry{Kind: "secret.set", Payload: map[string]any{"name": name, "bytes": len(value)}})
	got, err := m.cfg.Store.GetSecret(ctx, name)
	if err != nil {
		return nil, err
	}
	m.reapplyEgress(ctx, "")
	return &SecretInfo{Name: got.Name, Created: got.Created, Updated: got.Updated}, nil
}

// Secrets lists the secrets (names and times only).
func (m *Manager) Secrets(ctx context.Context) ([]*SecretInfo, error) {
	if _, err := m.sealer(); err != nil {
		return nil, err
	}
	l, err := m.cfg.Store.ListSecrets(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*SecretInfo, 0, len(l))
	for _, s := range l {
		out = append(out, &SecretInfo{Name: s.Name, Created: s.Created, Updated: s.Updated})
	}
	return out, nil
}

// DeleteSecret removes a secret; its grants end with it.
func (m *Manager) DeleteSecret(ctx context.Context, name string) error {
	if _, err := m.sealer(); err != nil {
		return err
	}
	if err := m.cfg.Store.DeleteSecret(ctx, name); err != nil {
		return err
	}
	m.reapplyEgress(ctx, "")
	return m.record(ctx, audit.Entry{Kind: "secret.delete", Payload: map[string]any{"name": name}})
}

var hostPatternRE = lazyre.New(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// GrantSecret lets a sandbox (or a task's sandbox) use a secret.
func (m *Manager) GrantSecret(ctx context.Context, name string, req GrantSecretRequest) (*SecretGrant, error) {
	if _, err := m.sealer(); err != nil {
		return nil, err
	}
	if _, err := m.cfg.Store.GetSecret(ctx, name); err != nil {
		return nil, err
	}
	if (req.SandboxID == "") == (req.TaskID == "") {
		return nil, fmt.Errorf("name exactly one of sandbox and task: %w", errdefs.ErrInvalid)
	}
	sandboxID, taskID := req.SandboxID, req.TaskID
	if taskID != "" {
		t, err := m.cfg.Store.GetTask(ctx, taskID)
		if err != nil {
			return nil, err
		}
		if t.State != "open" {
			return nil, fmt.Errorf("task %s is %s: %w", taskID, t.State, errdefs.ErrConflict)
		}
		sandboxID = t.SandboxID
	}
	m.mu.Lock()
	ls := m.live[sandboxID]
	m.mu.Unlock()
	if ls == nil {
		if _, err := m.cfg.Store.GetSandbox(ctx, sandboxID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", sandboxID, errdefs.ErrConflict)
	}
	if taskID == "" {
		taskID = ls.taskID
	}
	mode := req.Mode
	if mode == "" {
		mode = "env"
	}
	if mode != "env" && mode != "broker" {
		return nil, fmt.Errorf("mode %q: env or broker: %w", mode, errdefs.ErrInvalid)
	}
	if mode == "broker" && m.egressSvc == nil {
		return nil, fmt.Errorf("brokered secrets need the egress proxy's broker, which this daemon does not run: %w", errdefs.ErrUnsupported)
	}
	env := req.Env
	if env == "" {
		env = name
	}
	if !secretNameRE().MatchString(env) {
		return nil, fmt.Errorf("env %q: a variable name: %w", env, errdefs.ErrInvalid)
	}
	if len(req.Hosts) == 0 {
		return nil, fmt.Errorf("name the hosts the secret is for (hosts): %w", errdefs.ErrInvalid)
	}
	var hosts []string
	for _, h := range req.Hosts {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if len(h) > 253 || !hostPatternRE().MatchString(h) {
			return nil, fmt.Errorf("host %q: a DNS name, optionally *.name: %w", h, errdefs.ErrInvalid)
		}
		hosts = appendUniq(hosts, h)
	}
	headers, err := grantHeaders(mode, req.Headers)
	if err != nil {
		return nil, err
	}
	d, err := Seconds("ttl_seconds", req.TTLSeconds, MaxSecretGrantFor)
	if err != nil {
		return nil, err
	}
	if d == 0 {
		d = DefaultSecretGrantFor
	}
	now := m.now()
	g := &store.SecretGrant{ID: newID("sg-"), Secret: name, SandboxID: sandboxID, TaskID: taskID, Mode: mode, Env: env, Hosts: hosts,
		Headers: headers, Created: now, Expires: now.Add(d), CreatedBy: actorOf(ctx)}
	if mode == "broker" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		g.Placeholder = "airlock-brokered-" + hex.EncodeToString(b[:])
	}
	if err := m.cfg.Store.PutSecretGrant(ctx, g); err != nil {
		return nil, err
	}
	_ = m.record(ctx, audit.Entry{SandboxID: sandboxID, TaskID: taskID, Kind: "secret.grant", Payload: map[string]any{
		"grant": g.ID, "secret": name, "mode": mode, "env": env, "hosts": hosts, "headers": headers, "expires": g.Expires}})
	if err := m.applyEgress(ctx, sandboxID); err != nil {
		// A grant the proxy cannot take does not stand.
		_ = m.cfg.Store.RevokeSecretGrant(context.WithoutCancel(ctx), g.ID, m.now())
		return nil, err
	}
	return secretGrantView(g, now), nil
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

func secretGrantView(g *store.SecretGrant, now time.Time) *SecretGrant {
	v := &SecretGrant{ID: g.ID, Secret: g.Secret, SandboxID: g.SandboxID, TaskID: g.TaskID, Mode: g.Mode, Env: g.Env, Hosts: g.Hosts,
		Placeholder: g.Placeholder, Headers: g.Headers, Created: g.Created, Expires: g.Expires, CreatedBy: g.CreatedBy, Revoked: g.Revoked, State: "active"}
	switch {
	case g.Revoked != nil:
		v.State = "revoked"
	case !now.Before(g.Expires):
		v.State = "expired"
	}
	return v
}

// SecretGrants lists grants: of one sandbox, or all.
func (m *Manager) SecretGrants(ctx context.Context, sandboxID string) ([]*SecretGrant, error) {
	l, err := m.cfg.Store.ListSecretGrants(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	now := m.now()
	out := make([]*SecretGrant, 0, len(l))
	for _, g := range l {
		out = append(out, secretGrantView(g, now))
	}
	return out, nil
}

// endTaskGrants revokes the active grants made to a task, which has ended.
func (m *Manager) endTaskGrants(ctx context.Context, sandboxID, taskID string) error {
	gs, err := m.cfg.Store.ActiveSecretGrants(ctx, sandboxID, m.now())
	if err != nil {
		return err
	}
	ended := false
	for _, g := range gs {
		if g.TaskID != taskID {
			continue
		}
		if err := m.cfg.Store.RevokeSecretGrant(ctx, g.ID, m.now()); err != nil {
			return err
		}
		ended = true
		_ = m.record(ctx, audit.Entry{SandboxID: g.SandboxID, TaskID: taskID, Kind: "secret.revoke", Payload: map[string]any{"grant": g.ID, "secret": g.Secret, "reason": "task finished"}})
	}
	if ended {
		m.reapplyEgress(ctx, sandboxID)
	}
	return nil
}

// RevokeSecretGrant ends a grant now.
func (m *Manager) RevokeSecretGrant(ctx context.Context, id string) error {
	g, err := m.cfg.Store.GetSecretGrant(ctx, id)
	if err != nil {
		return err
	}
	if err := m.cfg.Store.RevokeSecretGrant(ctx, id, m.now()); err != nil {
		return err
	}
	m.reapplyEgress(ctx, g.SandboxID)
	return m.record(ctx, audit.Entry{SandboxID: g.SandboxID, TaskID: g.TaskID, Kind: "secret.revoke", Payload: map[string]any{"grant": id, "secret": g.Secret}})
}

// secretEnv is what a command of the sandbox gets from its secret grants
// in force: values (env) and placeholders (broker). Each use is recorded
// when the exec starts (secretUses).
func (m *Manager) secretEnv(ctx context.Context, sandboxID string) ([]string, []map[string]any, error) {
	if m.secretKey == nil {
		return nil, nil, nil
	}
	grants, err := m.cfg.Store.ActiveSecretGrants(ctx, sandboxID, m.now())
	if err != nil {
		return nil, nil, err
	}
	var env []string
	var uses []map[string]any
	for _, g := range grants {
		val := g.Placeholder
		if g.Mode == "env" {
			sec, err := m.cfg.Store.GetSecret(ctx, g.Secret)
			if err != nil {
				continue // deleted since: its grants went with it
			}
			v, err := m.open(sec)
			if err != nil {
				return nil, nil, err
			}
			val = string(v)
		}
		env = append(env, g.Env+"="+val)
		uses = append(uses, map[string]any{"grant": g.ID, "secret": g.Secret, "mode": g.Mode, "env": g.Env})
	}
	return env, uses, nil
}

// reapplyEgress gives the egress service the current policy of one
// sandbox, or of every live sandbox ("").
func (m *Manager) reapplyEgress(ctx context.Context, id string) {
	if m.egressSvc == nil {
		return
	}
	ids := []string{id}
	if id == "" {
		m.mu.Lock()
		ids = ids[:0]
		for sid := range m.live {
			ids = append(ids, sid)
		}
		m.mu.Unlock()
	}
	for _, sid := range ids {
		if err := m.applyEgress(ctx, sid); err != nil {
			m.cfg.Logf("egress policy of %s: %v", sid, err)
		}
	}
}

// grantedVars are the variables the sandbox's secret grants in force put
// into its commands' environment.
func (m *Manager) grantedVars(ctx context.Context, sandboxID string) []string {
	if m.secretKey == nil {
		return nil
	}
	grants, err := m.cfg.Store.ActiveSecretGrants(ctx, sandboxID, m.now())
	if err != nil {
		return nil
	}
	var vars []string
	for _, g := range grants {
		vars = appendUniq(vars, g.Env)
	}
	return vars
}

// brokeredSecrets adds sandboxID's brokered secrets, with their values,
// to p (Core.BrokeredSecrets, for the network module).
func (m *Manager) brokeredSecrets(ctx context.Context, sandboxID string, p egress.Policy) (egress.Policy, error) {
	grants, err := m.cfg.Store.ActiveSecretGrants(ctx, sandboxID, m.now())
	if err != nil {
		return p, err
	}
	for _, g := range grants {
		if g.Mode != "broker" {
			continue
		}
		sec, err := m.cfg.Store.GetSecret(ctx, g.Secret)
		if err != nil {
			continue
		}
		v, err := m.open(sec)
		if err != nil {
			return p, err
		}
		p.Secrets = append(slices.Clone(p.Secrets), egress.Secret{ID: g.ID, Placeholder: g.Placeholder, Hosts: g.Hosts, Headers: g.Headers, Value: string(v)})
	}
	return p, nil
}
