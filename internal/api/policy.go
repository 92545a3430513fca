package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/wire"
)

// The policy routes: a sandbox's effective policy, what it would decide,
// the approvals it held, and the decisions on them. Deciding is a
// reviewer's (of the approval's project; never of a request its own key
// made: the approvals module refuses that), break-glass an admin's; an
// agent's key decides nothing.
func (s *Server) policyRoutes() {
	s.handle("GET /v1/sandboxes/{id}/policy", access{role: tenant.Agent, kind: tenant.Sandbox}, s.getPolicy)
	s.handle("POST /v1/sandboxes/{id}/policy/check", access{role: tenant.Agent, kind: tenant.Sandbox}, s.checkPolicy)
	s.handle("POST /v1/sandboxes/{id}/breakglass", access{role: tenant.Admin, kind: tenant.Sandbox}, s.breakGlass)
	s.handle("GET /v1/approvals", access{role: tenant.Agent}, s.listApprovals)
	s.handle("GET /v1/approvals/{id}", access{role: tenant.Agent, kind: tenant.Approval}, s.getApproval)
	s.handle("POST /v1/approvals/{id}/approve", access{role: tenant.Reviewer, kind: tenant.Approval}, s.approve)
	s.handle("POST /v1/approvals/{id}/deny", access{role: tenant.Reviewer, kind: tenant.Approval}, s.deny)
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	p, err := s.pol.Policy(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	raw, err := json.Marshal(p)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PolicyAnswer{Version: p.Version(), Policy: raw})
}

func (s *Server) checkPolicy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.CheckRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Argv) == 0 {
		writeError(w, fmt.Errorf("argv must name a command: %w", errdefs.ErrInvalid))
		return
	}
	d, err := s.pol.Check(r.Context(), id, req.Argv, req.Cwd)
	if err != nil {
		writeError(w, err)
		return
	}
	out, err := decisionOut(d)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) breakGlass(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.BreakGlassRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	d, err := reqcheck.Seconds("for_seconds", req.ForSeconds, approvals.MaxBreakGlass)
	if err != nil {
		writeError(w, err)
		return
	}
	bg, err := s.appr.BreakGlass(r.Context(), id, req.Reason, d)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, breakGlassOut(bg))
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if sb := q.Get("sandbox"); sb != "" {
		if err := validID(sb); err != nil {
			writeError(w, err)
			return
		}
	}
	list, err := s.appr.List(r.Context(), q.Get("sandbox"), q.Get("state"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ApprovalList{Approvals: mapAll(list, approvalOut)})
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	a, err := s.appr.Get(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalOut(a))
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.ApproveRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, maxJSONBody, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	d, err := reqcheck.Seconds("for_seconds", req.ForSeconds, approvals.MaxGrant)
	if err != nil {
		writeError(w, err)
		return
	}
	a, err := s.appr.Approve(r.Context(), id, approvals.ApproveRequest{Scope: policy.GrantScope(req.Scope), For: d, Reason: req.Reason})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalOut(a))
}

func (s *Server) deny(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.DenyRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	a, err := s.appr.Deny(r.Context(), id, req.Reason)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalOut(a))
}
