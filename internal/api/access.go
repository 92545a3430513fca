package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Every route is registered through handle with its access: the least
// role it needs and, when its path names an object, that object's kind.
// The guard is the API's one place for tenancy (issue 22):
//   - a role below the route's is refused (403) before any lookup, so the
//     refusal says nothing of the object;
//   - an object of another project is answered exactly as one that does
//     not exist (404, the same message), and the handler never runs.
//
// The operator (the unix socket) passes both. Lists are confined by the
// core and the modules (tenant.Scope). The routes are kept (Routes) so a
// test covers each, and fails for one added without its access.

// access is what a route needs.
type access struct {
	role tenant.Role
	// kind is what the path value param ("" : "id") names; "": nothing
	// a project owns.
	kind  tenant.Kind
	param string
}

// Route is a registered route and what it needs, for the tests.
type Route struct {
	Pattern string
	Role    tenant.Role
	Kind    tenant.Kind
	Param   string
}

// Owners finds the project that owns an object (projects.Projects).
type Owners interface {
	OwnerOf(ctx context.Context, kind tenant.Kind, id string) (string, error)
}

// noOwners is a daemon without projects: no object is any key's, so a
// key reaches none (the operator still reaches all).
type noOwners struct{}

func (noOwners) OwnerOf(_ context.Context, kind tenant.Kind, id string) (string, error) {
	return "", fmt.Errorf("%s %q: %w", kind, id, errdefs.ErrNotFound)
}

// Routes lists every route with its access.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

func (s *Server) handle(pattern string, a access, h http.HandlerFunc) {
	if a.role == "" {
		panic("api: route " + pattern + " has no role")
	}
	if a.kind != "" && a.param == "" {
		a.param = "id"
	}
	s.routes = append(s.routes, Route{Pattern: pattern, Role: a.role, Kind: a.kind, Param: a.param})
	s.mux.HandleFunc(pattern, s.guard(pattern, a, h))
}

func (s *Server) guard(pattern string, a access, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := tenant.Of(r.Context())
		if !p.Role.AtLeast(a.role) {
			writeError(w, fmt.Errorf("%s needs the %s role (this key is %s): %w", pattern, a.role, p.Role, errdefs.ErrDenied))
			return
		}
		if a.kind != "" && !p.IsOperator() {
			id := r.PathValue(a.param)
			project, err := s.owners.OwnerOf(r.Context(), a.kind, id)
			if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				writeError(w, err)
				return
			}
			if err != nil || !p.Sees(project) {
				writeError(w, fmt.Errorf("%s %q: %w", a.kind, id, errdefs.ErrNotFound))
				return
			}
		}
		h(w, r)
	}
}
