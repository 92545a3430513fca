package api

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/wire"
)

// The egress routes: a sandbox's effective egress policy, a runtime layer
// over it (over TCP only tighter), its proxy CA, and the kill switch
// (the operator's: refused over TCP).
func (s *Server) egressRoutes() {
	s.handle("GET /v1/egress", access{role: tenant.Agent}, s.egressStatus)
	s.handle("POST /v1/egress/cut", access{role: tenant.Operator}, s.egressCut)
	s.handle("GET /v1/sandboxes/{id}/egress", access{role: tenant.Agent, kind: tenant.Sandbox}, s.getEgress)
	s.handle("PUT /v1/sandboxes/{id}/egress", access{role: tenant.Agent, kind: tenant.Sandbox}, s.setEgress)
	s.handle("GET /v1/sandboxes/{id}/egress/ca", access{role: tenant.Agent, kind: tenant.Sandbox}, s.egressCA)
	s.handle("POST /v1/sandboxes/{id}/egress/test", access{role: tenant.Agent, kind: tenant.Sandbox}, s.egressTest)
}

// Network is what the API uses of the sandboxes' network module
// (sandboxnet.Net): the egress status and kill switch, and a sandbox's
// egress policy, runtime layer, usage and proxy CA.
type Network interface {
	EgressStatus() (enabled, cut bool)
	CutEgress(ctx context.Context, on bool) error
	EgressPolicy(ctx context.Context, id string) (*egress.Policy, error)
	EgressUsage(id string) *egress.Usage
	SetEgress(ctx context.Context, id string, layer egress.Policy, tightenOnly bool) (*egress.Policy, error)
	EgressCA(id string) ([]byte, error)
	ExplainEgress(ctx context.Context, id, dest string) (*egress.Explanation, error)
}

// noNetwork is a daemon without its network module: no proxy, and a
// sandbox's egress is not known (unsupported, not an empty policy).
type noNetwork struct{}

var errNoNetwork = fmt.Errorf("this daemon has no network module: %w", errdefs.ErrUnsupported)

func (noNetwork) EgressStatus() (bool, bool)            { return false, false }
func (noNetwork) CutEgress(context.Context, bool) error { return errNoNetwork }
func (noNetwork) EgressUsage(string) *egress.Usage      { return nil }
func (noNetwork) EgressCA(string) ([]byte, error)       { return nil, errNoNetwork }
func (noNetwork) ExplainEgress(context.Context, string, string) (*egress.Explanation, error) {
	return nil, errNoNetwork
}
func (noNetwork) EgressPolicy(context.Context, string) (*egress.Policy, error) {
	return nil, errNoNetwork
}
func (noNetwork) SetEgress(context.Context, string, egress.Policy, bool) (*egress.Policy, error) {
	return nil, errNoNetwork
}

func (s *Server) egressStatus(w http.ResponseWriter, r *http.Request) {
	on, cut := s.net.EgressStatus()
	writeJSON(w, http.StatusOK, wire.EgressStatus{Enabled: on, Cut: cut})
}

func (s *Server) egressCut(w http.ResponseWriter, r *http.Request) {
	var req wire.EgressCutRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.On == nil {
		writeError(w, fmt.Errorf(`"on" (true: cut every sandbox's egress; false: restore it) is required: %w`, errdefs.ErrInvalid))
		return
	}
	if err := s.net.CutEgress(r.Context(), *req.On); err != nil {
		writeError(w, err)
		return
	}
	s.egressStatus(w, r)
}

func (s *Server) getEgress(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	p, err := s.net.EgressPolicy(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	// The policy, and what the sandbox's egress has recorded against its
	// audit budget (with the cut, once it used it up).
	writeJSON(w, http.StatusOK, struct {
		*egress.Policy
		Usage *wire.EgressUsage `json:"usage,omitempty"`
	}{p, usageOut(s.net.EgressUsage(id))})
}

func (s *Server) setEgress(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		writeError(w, fmt.Errorf("read body: %v: %w", err, errdefs.ErrInvalid))
		return
	}
	layer, err := egress.ParseJSON(body)
	if err != nil {
		writeError(w, err)
		return
	}
	p, err := s.net.SetEgress(r.Context(), id, *layer, isRemote(r))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) egressCA(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	if _, err := s.net.EgressPolicy(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	pem, err := s.net.EgressCA(id)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write(pem)
}

// egressTest says what a sandbox's proxy would decide for a destination,
// without connecting: the refusal's reason before the agent hits it.
func (s *Server) egressTest(w http.ResponseWriter, r *http.Request) {
	var req wire.EgressTestRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Destination == "" {
		writeError(w, fmt.Errorf(`"destination" (a URL, or host:port for a tunnel) is required: %w`, errdefs.ErrInvalid))
		return
	}
	x, err := s.net.ExplainEgress(r.Context(), r.PathValue("id"), req.Destination)
	if err != nil {
		writeError(w, err)
		return
	}
	out := wire.EgressTest{Target: x.Target, Mode: x.Mode, Decision: x.Decision, Rule: x.Rule, Reason: x.Reason, Brokered: x.Brokered}
	for _, a := range x.Addrs {
		out.Addrs = append(out.Addrs, a.String())
	}
	writeJSON(w, http.StatusOK, out)
}
