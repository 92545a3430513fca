// Package secrets keeps the daemon's secrets, a module of the sandbox
// core (hook.Module). Secrets are kept sealed (AES-256-GCM under the
// daemon's secret key, the name as associated data) and granted to one
// sandbox or task at a time, for a while, for named hosts. Two modes:
//
//   - env: the value is put into the environment of every command the
//     sandbox runs while the grant lasts, for tools that read it there
//     (execPipeline's "secrets" stage: the module is a
//     hook.SecretSource). The sandbox then holds it; the egress policy
//     decides where it can be sent.
//   - broker: the sandbox holds only a placeholder; the egress proxy puts
//     the value into request headers to the grant's hosts (which the
//     egress policy must also allow; the module is a
//     hook.BrokerSource). A daemon without an egress proxy refuses
//     such grants (unsupported), never hands out a placeholder that
//     nothing replaces.
//
// A secret is its project's (issue 22): the name is looked up in the
// project of the caller (tenant.Of) or, for a grant, of the sandbox it
// is for; another project's secret of the same name is not seen. A grant
// is of a secret of its sandbox's project only.
//
// Values are never returned by the API, never logged, and are taught to
// the redactor before anything could show them: every stored value when
// the module is attached (in manager.New, before the core does anything
// else), a new one before it is stored. A task's grants end with the task
// (hook.TaskEndHook).
//
// It uses only its hook.Core (store, redactor, audit record, clock,
// live state, egress) and the store.
package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Secret limits.
const (
	MaxValueBytes   = 64 << 10
	DefaultGrantFor = time.Hour
	MaxGrantFor     = 24 * time.Hour
)

var nameRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Info is a secret as the API shows it: never its value.
type Info struct {
	Project string    `json:"project"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Secrets is the secrets module. Its methods fail (ErrUnsupported) until
// manager.New has attached it, and those that need the key (all but
// Grants and Revoke) when it has none.
type Secrets struct {
	keyFile string
	c       hook.Core
	st      *store.Store
	key     cipher.AEAD // nil: no secrets
}

// New makes the module, its secrets sealed with the key in keyFile (made
// on first use); keyFile "": the daemon keeps no secrets. Attach it
// through manager.Config.Modules.
func New(keyFile string) *Secrets { return &Secrets{keyFile: keyFile} }

// Name is the module's name.
func (s *Secrets) Name() string { return "secrets" }

// Attach loads the key and teaches the redactor every stored value: a
// key that cannot open them fails manager.New.
func (s *Secrets) Attach(c hook.Core) error {
	s.c, s.st = c, c.Store()
	s.logUpgrade()
	if s.keyFile == "" {
		return nil
	}
	key, err := loadKey(s.keyFile)
	if err != nil {
		return err
	}
	s.key = key
	return s.learnStored(context.Background())
}

// logUpgrade says in the daemon's log where an upgrade from before
// secrets had projects put them.
func (s *Secrets) logUpgrade() {
	if from := s.st.OpenedAt(); from == 0 || from >= store.SecretsVersion {
		return
	}
	l, err := s.st.ListSecrets(context.Background(), "")
	if err != nil || len(l) == 0 {
		return
	}
	copies := 0
	for _, sec := range l {
		if sec.Project != tenant.Default {
			copies++
		}
	}
	s.c.Logf("upgrade: secrets now belong to projects: the database's %d secrets belong to project %q, and %d copies of them to the other projects whose sandboxes had grants of them",
		len(l)-copies, tenant.Default, copies)
}

func (s *Secrets) attached() error {
	if s.c == nil {
		return fmt.Errorf("secrets: the module is not attached to a manager: %w", errdefs.ErrUnsupported)
	}
	return nil
}

// loadKey reads the daemon's secret key, making it on first use.
func loadKey(path string) (cipher.AEAD, error) {
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

// aad binds a sealed value to its name. Not to its project: values
// sealed before projects open in whichever project they went to
// (migration 9 copies a secret into each project a grant of it was made
// to). Moving a sealed value to another project's row takes write access
// to the database, which is the host's operator's anyway.
func aad(name string) []byte { return []byte("airlock-secret\x00" + name) }

func (s *Secrets) sealer() (cipher.AEAD, error) {
	if err := s.attached(); err != nil {
		return nil, err
	}
	if s.key == nil {
		return nil, fmt.Errorf("this daemon keeps no secrets (no secret key configured): %w", errdefs.ErrUnsupported)
	}
	return s.key, nil
}

func (s *Secrets) open(sec *store.Secret) ([]byte, error) {
	aead, err := s.sealer()
	if err != nil {
		return nil, err
	}
	ns := aead.NonceSize()
	if len(sec.Sealed) < ns {
		return nil, fmt.Errorf("secret %s: sealed value is damaged", sec.Name)
	}
	v, err := aead.Open(nil, sec.Sealed[:ns], sec.Sealed[ns:], aad(sec.Name))
	if err != nil {
		return nil, fmt.Errorf("secret %s cannot be opened with this daemon's secret key (was it sealed with another?)", sec.Name)
	}
	return v, nil
}

// learnStored adds every stored value to the redactor.
func (s *Secrets) learnStored(ctx context.Context) error {
	l, err := s.st.ListSecrets(ctx, "")
	if err != nil {
		return err
	}
	for _, sec := range l {
		v, err := s.open(sec)
		if err != nil {
			return err
		}
		s.c.Redactor().Add(string(v))
	}
	return nil
}

// Set stores a secret of the caller's project (the operator's: of
// project, "" for the default one), replacing one of the same name. The
// redactor learns the value before it is stored.
func (s *Secrets) Set(ctx context.Context, project, name string, value []byte) (*Info, error) {
	aead, err := s.sealer()
	if err != nil {
		return nil, err
	}
	project, err = tenant.NewObjectProject(ctx, project)
	if err != nil {
		return nil, err
	}
	if !nameRE().MatchString(name) {
		return nil, fmt.Errorf("secret name %q: letters, digits and _, not starting with a digit, at most 128: %w", name, errdefs.ErrInvalid)
	}
	if len(value) == 0 || len(value) > MaxValueBytes {
		return nil, fmt.Errorf("secret value: 1 to %d bytes: %w", MaxValueBytes, errdefs.ErrInvalid)
	}
	if strings.ContainsRune(string(value), 0) {
		return nil, fmt.Errorf("secret value: no NUL bytes (it may be put into an environment): %w", errdefs.ErrInvalid)
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	now := s.c.Now()
	sec := &store.Secret{Project: project, Name: name, Sealed: aead.Seal(nonce, nonce, value, aad(name)), Created: now, Updated: now}
	s.c.Redactor().Add(string(value))
	if err := s.st.PutSecret(ctx, sec); err != nil {
		return nil, err
	}
	_ = s.c.Record(ctx, audit.Entry{Project: project, Kind: "secret.set", Payload: map[string]any{"name": name, "bytes": len(value)}})
	got, err := s.st.GetSecret(ctx, project, name)
	if err != nil {
		return nil, err
	}
	s.c.ReapplyEgress(ctx, "")
	return info(got), nil
}

// Use opens the secret name for the daemon's own use (purpose names it,
// e.g. "template.import", recorded in the audit log with the name,
// never the value): a registry credential, say. The caller must not
// show the value; the redactor knows it already. The secret is the
// caller's project's (the operator's: the default project's).
func (s *Secrets) Use(ctx context.Context, name, purpose string) ([]byte, error) {
	if _, err := s.sealer(); err != nil {
		return nil, err
	}
	project, err := tenant.NewObjectProject(ctx, "")
	if err != nil {
		return nil, err
	}
	sec, err := s.st.GetSecret(ctx, project, name)
	if err != nil {
		return nil, err
	}
	v, err := s.open(sec)
	if err != nil {
		return nil, err
	}
	_ = s.c.Record(ctx, audit.Entry{Project: project, Kind: "secret.use", Payload: map[string]any{"secret": name, "purpose": purpose}})
	return v, nil
}

// List lists the caller's project's secrets (names and times only); the
// operator's: of project, or of every project ("").
func (s *Secrets) List(ctx context.Context, project string) ([]*Info, error) {
	if _, err := s.sealer(); err != nil {
		return nil, err
	}
	if sc := tenant.Scope(ctx); sc != "" {
		if project != "" && project != sc {
			return []*Info{}, nil // as for a project that does not exist
		}
		project = sc
	}
	l, err := s.st.ListSecrets(ctx, project)
	if err != nil {
		return nil, err
	}
	out := make([]*Info, 0, len(l))
	for _, sec := range l {
		out = append(out, info(sec))
	}
	return out, nil
}

func info(sec *store.Secret) *Info {
	return &Info{Project: sec.Project, Name: sec.Name, Created: sec.Created, Updated: sec.Updated}
}

// Delete removes a secret of the caller's project (the operator's: of
// project, "" for the default one); its grants end with it.
func (s *Secrets) Delete(ctx context.Context, project, name string) error {
	if _, err := s.sealer(); err != nil {
		return err
	}
	project, err := tenant.NewObjectProject(ctx, project)
	if err != nil {
		return err
	}
	if err := s.st.DeleteSecret(ctx, project, name); err != nil {
		return err
	}
	s.c.ReapplyEgress(ctx, "")
	return s.c.Record(ctx, audit.Entry{Project: project, Kind: "secret.delete", Payload: map[string]any{"name": name}})
}
