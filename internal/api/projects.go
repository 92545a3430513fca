package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/internal/errdefs"
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

func (s *Server) projectRoutes() {
	s.handle("POST /v1/projects", access{role: tenant.Operator}, s.createProject)
	s.handle("GET /v1/projects", access{role: tenant.Agent}, s.listProjects)
	s.handle("GET /v1/projects/{id}", access{role: tenant.Agent, kind: tenant.Project}, s.getProject)
	s.handle("DELETE /v1/projects/{id}", access{role: tenant.Operator, kind: tenant.Project}, s.removeProject)
	s.handle("GET /v1/projects/{id}/usage", access{role: tenant.Agent, kind: tenant.Project}, s.projectUsage)
	// an admin only lowers its project's (the quotas module decides)
	s.handle("PUT /v1/projects/{id}/quotas", access{role: tenant.Admin, kind: tenant.Project}, s.setQuotas)
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
