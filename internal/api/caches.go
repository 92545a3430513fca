package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/depcache"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/wire"
)

// Caches is what the API uses of the dependency caches
// (depcache.Caches).
type Caches interface {
	List(ctx context.Context) ([]depcache.Entry, error)
	Clear(ctx context.Context, project, ecosystem string) ([]depcache.Entry, error)
}

// noCaches is a daemon without dependency caches.
type noCaches struct{}

func (noCaches) List(context.Context) ([]depcache.Entry, error) {
	return nil, fmt.Errorf("this daemon keeps no dependency caches (airlock serve --dep-cache): %w", errdefs.ErrUnsupported)
}

func (noCaches) Clear(context.Context, string, string) ([]depcache.Entry, error) {
	return noCaches{}.List(context.Background())
}

func (s *Server) cacheRoutes() {
	s.handle("GET /v1/caches", access{role: tenant.Operator}, s.listCaches)
	s.handle("POST /v1/caches/clear", access{role: tenant.Operator}, s.clearCaches)
}

func (s *Server) listCaches(w http.ResponseWriter, r *http.Request) {
	l, err := s.caches.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.CacheList{Caches: cacheEntriesOut(l)})
}

func (s *Server) clearCaches(w http.ResponseWriter, r *http.Request) {
	var req wire.CacheClearRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if strings.IndexByte(req.Project, 0) >= 0 || len(req.Project) > 4096 {
		writeError(w, fmt.Errorf("project: %w", errdefs.ErrInvalid))
		return
	}
	l, err := s.caches.Clear(r.Context(), req.Project, req.Ecosystem)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.CacheClearResult{Cleared: cacheEntriesOut(l)})
}

func cacheEntriesOut(l []depcache.Entry) []wire.CacheEntry {
	out := make([]wire.CacheEntry, 0, len(l))
	for _, e := range l {
		out = append(out, wire.CacheEntry{Project: e.Project, Ecosystem: e.Ecosystem, Files: e.Files, Bytes: e.Bytes})
	}
	return out
}
