package api

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/quotas"
	"github.com/airlock-dev/airlock/internal/tenant"

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
// API key (Authorization: Bearer KEY, or X-API-KEY: KEY), which makes its
// caller that key's project and role (tenant.Principal); the routes' access
// (access.go) decides the rest.

func (s *Server) keyRoutes() {
	s.handle("POST /v1/apikeys", access{role: tenant.Admin}, s.createKey)
	s.handle("GET /v1/apikeys", access{role: tenant.Admin}, s.listKeys)
	s.handle("DELETE /v1/apikeys/{id}", access{role: tenant.Admin, kind: tenant.APIKey}, s.deleteKey)
	s.handle("POST /v1/apikeys/{id}/rotate", access{role: tenant.Admin, kind: tenant.APIKey}, s.rotateKey)
}

// TCP returns the handler for TCP listeners: an API key required, its
// project and role on the request.
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
		if ok, wait := s.rates.Allow(k.ID); !ok {
			rateLimited(w, s.rates, wait)
			return
		}
		// A revoked key ends its requests in progress, streams included.
		ctx, done := s.keys.Bind(r.Context(), k)
		defer done()
		ctx = tenant.With(context.WithValue(ctx, remoteKey{}, true), k.Principal())
		if k.Role.AtLeast(tenant.Reviewer) {
			ctx = sandbox.AsApprover(ctx)
		}
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
	role, err := keyRole(req.Role)
	if err != nil {
		writeError(w, err)
		return
	}
	k, key, err := s.keys.Make(r.Context(), apikeys.Request{Name: req.Name, Format: req.Format, Project: req.Project, Role: role})
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

func keyRole(s string) (tenant.Role, error) {
	if s == "" {
		return tenant.Agent, nil
	}
	return tenant.ParseKeyRole(s)
}

func (s *Server) rotateKey(w http.ResponseWriter, r *http.Request) {
	var req wire.APIKeyRotateRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, maxJSONBody, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	k, key, err := s.keys.Rotate(r.Context(), r.PathValue("id"), req.Format, time.Duration(req.OverlapSeconds)*time.Second)
	if err != nil {
		writeError(w, err)
		return
	}
	out := apiKeyOut(k)
	out.Key = key
	writeJSON(w, http.StatusCreated, out)
}

// rateLimited answers a request past its key's rate (429, rate_limited)
// with when to try again.
func rateLimited(w http.ResponseWriter, r *quotas.KeyRates, wait time.Duration) {
	secs := max(1, int64(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	per, burst := r.Limit()
	writeJSON(w, http.StatusTooManyRequests, wire.Error{Code: wire.CodeRateLimited,
		Message: fmt.Sprintf("this API key sent more than %g requests a second (%d at once; airlock serve --key-rate, --key-burst): retry in %d s", per, burst, secs)})
}
