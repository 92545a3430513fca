package oci

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/google/go-containerregistry/pkg/authn"
)

// RegistrySecret is a registry credential kept as an airlock secret
// (the daemon's store): its name, for errors, and its value, either
// "USER:PASSWORD" (a token as the password) or a docker-style auth entry
// in JSON ({"username": ..., "password": ...}, {"auth": base64},
// {"identitytoken": ...} or {"registrytoken": ...}). It is given to the
// registry of the import's reference only (go-containerregistry sends
// basic credentials to that host alone, and to the token service it
// names), never to another source, and never appears in an error or a
// progress line of the import, nor in the template's record.
type RegistrySecret struct {
	Name  string
	Value []byte
}

// authConfig parses the secret's value; an error never quotes it.
func (rs *RegistrySecret) authConfig() (*authn.AuthConfig, error) {
	v := strings.TrimSpace(string(rs.Value))
	var ac authn.AuthConfig
	if strings.HasPrefix(v, "{") {
		if json.Unmarshal([]byte(v), &ac) != nil {
			return nil, fmt.Errorf("registry secret %s: not a JSON auth entry: %w", rs.Name, errdefs.ErrInvalid)
		}
	} else if user, pass, ok := strings.Cut(v, ":"); ok && user != "" && pass != "" {
		ac.Username, ac.Password = user, pass
	} else {
		return nil, fmt.Errorf("registry secret %s: want USER:PASSWORD or a JSON auth entry: %w", rs.Name, errdefs.ErrInvalid)
	}
	if ac == (authn.AuthConfig{}) {
		return nil, fmt.Errorf("registry secret %s: an empty auth entry: %w", rs.Name, errdefs.ErrInvalid)
	}
	return &ac, nil
}

// keychain gives the credential to the registry reg alone; any other
// asks anonymously.
func (rs *RegistrySecret) keychain(reg string) (authn.Keychain, error) {
	ac, err := rs.authConfig()
	if err != nil {
		return nil, err
	}
	return oneRegistry{reg: reg, auth: authn.FromConfig(*ac)}, nil
}

type oneRegistry struct {
	reg  string
	auth authn.Authenticator
}

func (o oneRegistry) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if r.RegistryStr() != o.reg {
		return authn.Anonymous, nil
	}
	return o.auth, nil
}

// hidden is every form of the secret an error or a line could carry:
// the value, each of its fields, the basic auth's base64.
func (rs *RegistrySecret) hidden() []string {
	if rs == nil {
		return nil
	}
	out := []string{strings.TrimSpace(string(rs.Value)), base64.StdEncoding.EncodeToString(rs.Value)}
	if ac, err := rs.authConfig(); err == nil {
		out = append(out, ac.Password, ac.Auth, ac.IdentityToken, ac.RegistryToken)
		if ac.Username != "" && ac.Password != "" {
			out = append(out, base64.StdEncoding.EncodeToString([]byte(ac.Username+":"+ac.Password)))
		}
	}
	var keep []string
	for _, s := range out {
		if len(s) >= 4 { // shorter would blank ordinary words
			keep = append(keep, s)
		}
	}
	return keep
}

// scrub replaces each hidden string in s.
func scrub(s string, hidden []string) string {
	for _, h := range hidden {
		s = strings.ReplaceAll(s, h, "[secret]")
	}
	return s
}

// scrubbedError is an error whose message has the secret scrubbed (a
// registry may echo what it was sent); errors.Is still sees the cause.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

func scrubError(err error, hidden []string) error {
	if err == nil || len(hidden) == 0 {
		return err
	}
	msg := scrub(err.Error(), hidden)
	// the cause's chain keeps its kinds; its text goes
	var kinds []error
	for _, k := range []error{errdefs.ErrNotFound, errdefs.ErrConflict, errdefs.ErrDenied, errdefs.ErrLimitExceeded, errdefs.ErrUnsupported,
		errdefs.ErrInvalid, errdefs.ErrTimeout, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, k) {
			kinds = append(kinds, k)
		}
	}
	return &scrubbedError{msg: msg, err: errors.Join(kinds...)}
}
