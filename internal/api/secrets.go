package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/secrets"
	"github.com/airlock-dev/airlock/wire"
)

// Secrets is what the API uses of the daemon's secrets (secrets.Secrets),
// on the unix socket only. None of it returns a value.
type Secrets interface {
	Set(ctx context.Context, name string, value []byte) (*secrets.Info, error)
	List(ctx context.Context) ([]*secrets.Info, error)
	Delete(ctx context.Context, name string) error
	Grant(ctx context.Context, name string, req secrets.GrantRequest) (*secrets.Grant, error)
	Grants(ctx context.Context, sandboxID string) ([]*secrets.Grant, error)
	Revoke(ctx context.Context, id string) error
}

// noSecrets is a daemon without the secrets module: every call refused.
type noSecrets struct{}

var errNoSecrets = fmt.Errorf("this daemon keeps no secrets (no secrets module): %w", errdefs.ErrUnsupported)

func (noSecrets) Set(context.Context, string, []byte) (*secrets.Info, error) {
	return nil, errNoSecrets
}
func (noSecrets) List(context.Context) ([]*secrets.Info, error) { return nil, errNoSecrets }
func (noSecrets) Delete(context.Context, string) error          { return errNoSecrets }
func (noSecrets) Grant(context.Context, string, secrets.GrantRequest) (*secrets.Grant, error) {
	return nil, errNoSecrets
}
func (noSecrets) Grants(context.Context, string) ([]*secrets.Grant, error) { return nil, errNoSecrets }
func (noSecrets) Revoke(context.Context, string) error                     { return errNoSecrets }

// The secret routes are the operator's: refused over TCP, so that an agent
// holding an API key can neither read the list nor grant itself a secret.
// No route ever returns a value.
func (s *Server) secretRoutes() {
	s.handle("GET /v1/secrets", access{role: tenant.Operator}, s.listSecrets)
	s.handle("PUT /v1/secrets/{name}", access{role: tenant.Operator}, s.setSecret)
	s.handle("DELETE /v1/secrets/{name}", access{role: tenant.Operator}, s.deleteSecret)
	s.handle("POST /v1/secrets/{name}/grants", access{role: tenant.Operator}, s.grantSecret)
	s.handle("GET /v1/secret-grants", access{role: tenant.Operator}, s.listSecretGrants)
	s.handle("DELETE /v1/secret-grants/{id}", access{role: tenant.Operator, kind: tenant.Grant}, s.revokeSecretGrant)
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	l, err := s.secs.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.SecretList{Secrets: mapAll(l, secretInfoOut)})
}

func (s *Server) setSecret(w http.ResponseWriter, r *http.Request) {
	var req wire.SecretValue
	if err := decode(w, r, 2*secrets.MaxValueBytes, &req); err != nil {
		writeError(w, err)
		return
	}
	info, err := s.secs.Set(r.Context(), r.PathValue("name"), []byte(req.Value))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, secretInfoOut(info))
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	if err := s.secs.Delete(r.Context(), r.PathValue("name")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) grantSecret(w http.ResponseWriter, r *http.Request) {
	var req wire.SecretGrantRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	g, err := s.secs.Grant(r.Context(), r.PathValue("name"), grantIn(req))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, secretGrantOut(g))
}

func (s *Server) listSecretGrants(w http.ResponseWriter, r *http.Request) {
	l, err := s.secs.Grants(r.Context(), r.URL.Query().Get("sandbox"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.SecretGrantList{Grants: mapAll(l, secretGrantOut)})
}

func (s *Server) revokeSecretGrant(w http.ResponseWriter, r *http.Request) {
	if err := s.secs.Revoke(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
