package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
)

// The policy routes: a sandbox's effective policy, what it would decide,
// the approvals it held, and the operator's decisions. Deciding
// (approve, deny, break-glass) is refused over TCP: the agent holds an
// API key and must not approve itself.
func (s *Server) policyRoutes() {
	s.mux.HandleFunc("GET /v1/sandboxes/{id}/policy", s.getPolicy)
	s.mux.HandleFunc("POST /v1/sandboxes/{id}/policy/check", s.checkPolicy)
	s.mux.HandleFunc("POST /v1/sandboxes/{id}/breakglass", s.breakGlass)
	s.mux.HandleFunc("GET /v1/approvals", s.listApprovals)
	s.mux.HandleFunc("GET /v1/approvals/{id}", s.getApproval)
	s.mux.HandleFunc("POST /v1/approvals/{id}/approve", s.approve)
	s.mux.HandleFunc("POST /v1/approvals/{id}/deny", s.deny)
}

func operatorOnly(r *http.Request) bool {
	p := r.URL.Path
	return r.Method == http.MethodPost && (strings.HasPrefix(p, "/v1/approvals/") || strings.HasSuffix(p, "/breakglass"))
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	p, err := s.m.Policy(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"version": p.Version(), "policy": p})
}

func (s *Server) checkPolicy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		Argv []string `json:"argv"`
		Cwd  string   `json:"cwd,omitempty"`
	}
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Argv) == 0 {
		writeError(w, fmt.Errorf("argv must name a command: %w", errdefs.ErrInvalid))
		return
	}
	d, err := s.m.Check(r.Context(), id, req.Argv, req.Cwd)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) breakGlass(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		Reason     string `json:"reason"`
		ForSeconds int64  `json:"for_seconds,omitempty"`
	}
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	d, err := manager.Seconds("for_seconds", req.ForSeconds, manager.MaxBreakGlass)
	if err != nil {
		writeError(w, err)
		return
	}
	bg, err := s.m.BreakGlass(r.Context(), id, req.Reason, d)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, bg)
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if sb := q.Get("sandbox"); sb != "" {
		if err := validID(sb); err != nil {
			writeError(w, err)
			return
		}
	}
	list, err := s.m.Approvals(r.Context(), q.Get("sandbox"), q.Get("state"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": list})
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	a, err := s.m.GetApproval(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		Scope      policy.GrantScope `json:"scope,omitempty"`
		ForSeconds int64             `json:"for_seconds,omitempty"`
		Reason     string            `json:"reason,omitempty"`
	}
	if r.ContentLength != 0 {
		if err := decode(w, r, maxJSONBody, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	d, err := manager.Seconds("for_seconds", req.ForSeconds, manager.MaxGrant)
	if err != nil {
		writeError(w, err)
		return
	}
	a, err := s.m.Approve(r.Context(), id, manager.ApproveRequest{Scope: req.Scope, For: d, Reason: req.Reason})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) deny(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		Reason string `json:"reason"`
	}
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	a, err := s.m.Deny(r.Context(), id, req.Reason)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}
