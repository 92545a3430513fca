package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/quotas"
	"github.com/airlock-dev/airlock/wire"
)

// Quotas is what the API uses of the quotas module (quotas.Quotas).
type Quotas interface {
	Usage(ctx context.Context, id string) (*quotas.Report, error)
	SetQuotas(ctx context.Context, id string, s quotas.Settings) (*quotas.Report, error)
}

// noQuotas is a daemon without the quotas module.
type noQuotas struct{}

var errNoQuotas = fmt.Errorf("this daemon keeps no quotas: %w", errdefs.ErrUnsupported)

func (noQuotas) Usage(context.Context, string) (*quotas.Report, error) { return nil, errNoQuotas }
func (noQuotas) SetQuotas(context.Context, string, quotas.Settings) (*quotas.Report, error) {
	return nil, errNoQuotas
}

func projectUsageOut(r *quotas.Report) wire.ProjectUsage {
	q, u := r.Quotas, r.Usage
	return wire.ProjectUsage{
		Project: r.Project,
		Quotas:  wire.ProjectQuotas{Sandboxes: q.Sandboxes, MemoryBytes: q.MemoryBytes, CPUs: q.CPUs, DiskBytes: q.DiskBytes, ExecsPerMinute: q.ExecsPerMinute, StoredOutputBytes: q.StoredOutputBytes, EgressBytesPerDay: q.EgressBytesPerDay},
		Set:     wire.QuotaSettings(r.Set),
		Usage:   wire.ProjectUsageFigures{Sandboxes: u.Sandboxes, MemoryBytes: u.MemoryBytes, CPUs: u.CPUs, DiskBytes: u.DiskBytes, ExecsLastMinute: u.ExecsLastMinute, StoredOutputBytes: u.StoredOutputBytes, EgressBytesLastDay: u.EgressBytesLastDay},
	}
}

func (s *Server) projectUsage(w http.ResponseWriter, r *http.Request) {
	rep, err := s.quotas.Usage(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, projectUsageOut(rep))
}

func (s *Server) setQuotas(w http.ResponseWriter, r *http.Request) {
	var req wire.QuotaSettings
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	rep, err := s.quotas.SetQuotas(r.Context(), r.PathValue("id"), quotas.Settings(req))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, projectUsageOut(rep))
}
