package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/wire"
)

// remoteKey marks a request that came over TCP.
type remoteKey struct{}

func isRemote(r *http.Request) bool {
	v, _ := r.Context().Value(remoteKey{}).(bool)
	return v
}

// The unix socket (mode 0600) is the local, trusted door: whoever can open
// it is the operator. TCP is for remote clients: every request needs an
// API key (Authorization: Bearer KEY, or X-API-KEY: KEY), and the key
// routes themselves are refused there.

func (s *Server) keyRoutes() {
	s.mux.HandleFunc("POST /v1/apikeys", s.createKey)
	s.mux.HandleFunc("GET /v1/apikeys", s.listKeys)
	s.mux.HandleFunc("DELETE /v1/apikeys/{id}", s.deleteKey)
}

// TCP returns the handler for TCP listeners: API key required, key
// management refused.
func (s *Server) TCP() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if oauthDiscovery(r.URL.Path) {
			// An MCP client answered 401 looks for OAuth here; airlock
			// has none, and says so rather than 401 again (issue 23).
			writeJSON(w, http.StatusNotFound, wire.Error{Code: wire.CodeNotFound, Message: "airlock does not use OAuth: send an API key (Authorization: Bearer KEY)"})
			return
		}
		key := r.Header.Get("X-API-KEY")
		if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			key = v
		}
		k, ok := s.keys.Of(r.Context(), key)
		if key == "" || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
			writeJSON(w, http.StatusUnauthorized, wire.Error{Code: wire.CodeUnauthenticated, Message: "a valid API key is required (Authorization: Bearer KEY)"})
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v1/apikeys") {
			writeJSON(w, http.StatusForbidden, wire.Error{Code: wire.CodeDenied, Message: "API keys are managed on the daemon's unix socket only"})
			return
		}
		if auditOnly(r) {
			writeJSON(w, http.StatusForbidden, wire.Error{Code: wire.CodeDenied, Message: "the audit log and purging are the operator's: use the daemon's unix socket"})
			return
		}
		if egressOperatorOnly(r) {
			writeJSON(w, http.StatusForbidden, wire.Error{Code: wire.CodeDenied, Message: "the egress kill switch is the operator's: use the daemon's unix socket"})
			return
		}
		if cachesOnly(r) {
			writeJSON(w, http.StatusForbidden, wire.Error{Code: wire.CodeDenied, Message: "the dependency caches are the operator's: use the daemon's unix socket"})
			return
		}
		if secretsOnly(r) {
			writeJSON(w, http.StatusForbidden, wire.Error{Code: wire.CodeDenied, Message: "secrets are managed and granted on the daemon's unix socket only"})
			return
		}
		if operatorOnly(r) {
			writeJSON(w, http.StatusForbidden, wire.Error{Code: wire.CodeDenied, Message: "approvals and break-glass are given on the daemon's unix socket only: an agent cannot approve itself"})
			return
		}
		ctx := context.WithValue(r.Context(), remoteKey{}, true)
		// The record names the key (its id, never the key) that acted.
		s.ServeHTTP(w, r.WithContext(sandbox.WithActor(ctx, "apikey:"+k.ID)))
	})
}

// oauthDiscovery: the paths where an OAuth client looks for metadata
// (RFC 9728, RFC 8414, OpenID) and the default endpoints the MCP spec of
// 2025-03-26 fell back to.
func oauthDiscovery(p string) bool {
	return strings.HasPrefix(p, "/.well-known/oauth-") || strings.HasPrefix(p, "/.well-known/openid-configuration") ||
		p == "/register" || p == "/authorize" || p == "/token"
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req wire.APIKeyRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, maxJSONBody, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	k, key, err := s.keys.Create(r.Context(), req.Name, req.Format)
	if err != nil {
		writeError(w, err)
		return
	}
	out := apiKeyOut(k)
	out.Key = key
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := s.keys.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.APIKeyList{APIKeys: mapAll(keys, apiKeyOut)})
}

func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	if err := s.keys.Delete(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
