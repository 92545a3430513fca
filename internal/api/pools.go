package api

import (
	"net/http"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/pool"
	"github.com/airlock-dev/airlock/wire"
)

// Pools is what the API uses of the warm pools (pool.Pools).
type Pools interface {
	List() []pool.Status
}

// noPools is a daemon without warm pools: the list is empty.
type noPools struct{}

func (noPools) List() []pool.Status { return nil }

func (s *Server) poolRoutes() {
	s.handle("GET /v1/pools", access{role: tenant.Agent}, s.listPools)
}

func (s *Server) listPools(w http.ResponseWriter, _ *http.Request) {
	l := s.pools.List()
	out := make([]wire.Pool, 0, len(l))
	for _, p := range l {
		out = append(out, wire.Pool{Template: p.Template, Backend: p.Backend, Min: p.Min, Max: p.Max, Target: p.Target,
			Ready: p.Ready, Filling: p.Filling, Created: p.Created, Claimed: p.Claimed, Misses: p.Misses, Failed: p.Failed,
			Discarded: p.Discarded, LastError: p.LastError})
	}
	writeJSON(w, http.StatusOK, wire.PoolList{Pools: out})
}
