package api

import (
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/wire"
)

// The secret routes are the operator's: refused over TCP, so that an agent
// holding an API key can neither read the list nor grant itself a secret.
// No route ever returns a value.
func (s *Server) secretRoutes() {
	s.mux.HandleFunc("GET /v1/secrets", s.listSecrets)
	s.mux.HandleFunc("PUT /v1/secrets/{name}", s.setSecret)
	s.mux.HandleFunc("DELETE /v1/secrets/{name}", s.deleteSecret)
	s.mux.HandleFunc("POST /v1/secrets/{name}/grants", s.grantSecret)
	s.mux.HandleFunc("GET /v1/secret-grants", s.listSecretGrants)
	s.mux.HandleFunc("DELETE /v1/secret-grants/{id}", s.revokeSecretGrant)
}

func secretsOnly(r *http.Request) bool {
	p := r.URL.Path
	return strings.HasPrefix(p, "/v1/secrets") || strings.HasPrefix(p, "/v1/secret-grants")
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	l, err := s.m.Secrets(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.SecretList{Secrets: mapAll(l, secretInfoOut)})
}

func (s *Server) setSecret(w http.ResponseWriter, r *http.Request) {
	var req wire.SecretValue
	if err := decode(w, r, 2*manager.MaxSecretBytes, &req); err != nil {
		writeError(w, err)
		return
	}
	info, err := s.m.SetSecret(r.Context(), r.PathValue("name"), []byte(req.Value))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, secretInfoOut(info))
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	if err := s.m.DeleteSecret(r.Context(), r.PathValue("name")); err != nil {
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
	g, err := s.m.GrantSecret(r.Context(), r.PathValue("name"), grantIn(req))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, secretGrantOut(g))
}

func (s *Server) listSecretGrants(w http.ResponseWriter, r *http.Request) {
	l, err := s.m.SecretGrants(r.Context(), r.URL.Query().Get("sandbox"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.SecretGrantList{Grants: mapAll(l, secretGrantOut)})
}

func (s *Server) revokeSecretGrant(w http.ResponseWriter, r *http.Request) {
	if err := s.m.RevokeSecretGrant(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
