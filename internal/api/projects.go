package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/projects"
	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/wire"
)

// Projects is what the API uses of the projects module.
type Projects interface {
	Create(ctx context.Context, name string) (*projects.Project, error)
	List(ctx context.Context) ([]*projects.Project, error)
	Get(ctx context.Context, id string) (*projects.Project, error)
	Remove(ctx context.Context, id string) error
	Policy(ctx context.Context, id string) (*policy.Layer, error)
	SetPolicy(ctx context.Context, id string, l policy.Layer) (*policy.Layer, error)
	Settings(ctx context.Context, id string) (projects.Settings, error)
	SetSettings(ctx context.Context, id string, s projects.Settings) (projects.Settings, error)
}

// noProjects is a daemon without projects.
type noProjects struct{}

var errNoProjects = fmt.Errorf("this daemon keeps no projects: %w", errdefs.ErrUnsupported)

func (noProjects) Create(context.Context, string) (*projects.Project, error) {
	return nil, errNoProjects
}
func (noProjects) List(context.Context) ([]*projects.Project, error) { return nil, errNoProjects }
func (noProjects) Get(context.Context, string) (*projects.Project, error) {
	return nil, errNoProjects
}
func (noProjects) Remove(context.Context, string) error { return errNoProjects }
func (noProjects) Policy(context.Context, string) (*policy.Layer, error) {
	return nil, errNoProjects
}
func (noProjects) SetPolicy(context.Context, string, policy.Layer) (*policy.Layer, error) {
	return nil, errNoProjects
}
func (noProjects) Settings(context.Context, string) (projects.Settings, error) {
	return projects.Settings{}, errNoProjects
}
func (noProjects) SetSettings(context.Context, string, projects.Settings) (projects.Settings, error) {
	return projects.Settings{}, errNoProjects
}

func (s *Server) projectRoutes() {
	s.handle("POST /v1/projects", access{role: tenant.Operator}, s.createProject)
	s.handle("GET /v1/projects", access{role: tenant.Agent}, s.listProjects)
	s.handle("GET /v1/projects/{id}", access{role: tenant.Agent, kind: tenant.Project}, s.getProject)
	s.handle("DELETE /v1/projects/{id}", access{role: tenant.Operator, kind: tenant.Project}, s.removeProject)
	s.handle("GET /v1/projects/{id}/usage", access{role: tenant.Agent, kind: tenant.Project}, s.projectUsage)
	// an admin only lowers its project's (the quotas module decides)
	s.handle("PUT /v1/projects/{id}/quotas", access{role: tenant.Admin, kind: tenant.Project}, s.setQuotas)
	s.handle("GET /v1/projects/{id}/policy", access{role: tenant.Agent, kind: tenant.Project}, s.projectPolicy)
	// only tightens the policy file (the projects module decides)
	s.handle("PUT /v1/projects/{id}/policy", access{role: tenant.Admin, kind: tenant.Project}, s.setProjectPolicy)
	s.handle("GET /v1/projects/{id}/settings", access{role: tenant.Agent, kind: tenant.Project}, s.projectSettings)
	s.handle("PUT /v1/projects/{id}/settings", access{role: tenant.Admin, kind: tenant.Project}, s.setProjectSettings)
}

func (s *Server) answerProjectSettings(w http.ResponseWriter, id string, set projects.Settings, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ProjectSettings{Project: id, DefaultTemplate: set.DefaultTemplate, MaxLifetimeSeconds: set.MaxLifetimeSeconds})
}

func (s *Server) projectSettings(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	set, err := s.projects.Settings(r.Context(), id)
	s.answerProjectSettings(w, id, set, err)
}

func (s *Server) setProjectSettings(w http.ResponseWriter, r *http.Request) {
	var req wire.ProjectSettingsRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	id := r.PathValue("id")
	set, err := s.projects.SetSettings(r.Context(), id, projects.Settings{DefaultTemplate: req.DefaultTemplate, MaxLifetimeSeconds: req.MaxLifetimeSeconds})
	s.answerProjectSettings(w, id, set, err)
}

// projectPolicyOut is project id's layer l as the API shows it.
func projectPolicyOut(id string, l *policy.Layer) (wire.ProjectPolicy, error) {
	out := wire.ProjectPolicy{Project: id}
	if l == nil {
		return out, nil
	}
	b, err := json.Marshal(l)
	if err != nil {
		return out, err
	}
	out.Policy = &wire.PolicyLayer{}
	return out, json.Unmarshal(b, out.Policy)
}

func (s *Server) answerProjectPolicy(w http.ResponseWriter, id string, l *policy.Layer, err error) {
	var out wire.ProjectPolicy
	if err == nil {
		out, err = projectPolicyOut(id, l)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) projectPolicy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	l, err := s.projects.Policy(r.Context(), id)
	s.answerProjectPolicy(w, id, l, err)
}

func (s *Server) setProjectPolicy(w http.ResponseWriter, r *http.Request) {
	var req wire.PolicyLayer
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	l, err := policyLayerIn(&req)
	if err != nil {
		writeError(w, err)
		return
	}
	id := r.PathValue("id")
	set, err := s.projects.SetPolicy(r.Context(), id, *l)
	s.answerProjectPolicy(w, id, set, err)
}

func projectOut(p *projects.Project) wire.Project {
	return wire.Project{ID: p.ID, Created: p.Created, Removed: p.Removed}
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	var req wire.ProjectRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	p, err := s.projects.Create(r.Context(), req.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, projectOut(p))
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) {
	l, err := s.projects.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ProjectList{Projects: mapAll(l, projectOut)})
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request) {
	p, err := s.projects.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, projectOut(p))
}

func (s *Server) removeProject(w http.ResponseWriter, r *http.Request) {
	if err := s.projects.Remove(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
