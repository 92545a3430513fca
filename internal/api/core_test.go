package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/wire"
)

// The daemon's manager is a Core.
var _ Core = (*manager.Manager)(nil)

// oneSandbox is a Core that knows one sandbox and answers nothing else:
// its embedded Core is nil, so a route reaching any other method panics.
type oneSandbox struct {
	Core
	sb sandbox.Sandbox
}

func (f oneSandbox) Get(_ context.Context, id string) (*sandbox.Sandbox, error) {
	if id != f.sb.ID {
		return nil, fmt.Errorf("sandbox %s: %w", id, errdefs.ErrNotFound)
	}
	sb := f.sb
	return &sb, nil
}

// TestServesAnyCore: the API depends on its interfaces, not on the
// manager: over a fake core, GET /v1/sandboxes/{id} answers the fake's
// sandbox as the wire's, and its error with the kind's status.
func TestServesAnyCore(t *testing.T) {
	srv := New(oneSandbox{sb: sandbox.Sandbox{ID: "sb-1", State: "running", Template: "host"}}, Modules{}, Health{OK: true})
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/sandboxes/sb-1", nil))
	var got wire.Sandbox
	if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != http.StatusOK || err != nil || got.ID != "sb-1" || got.State != "running" || got.Template != "host" {
		t.Errorf("GET sb-1: %d %s (%v)", rec.Code, rec.Body, err)
	}
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/sandboxes/sb-2", nil))
	var e wire.Error
	if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != http.StatusNotFound || err != nil || e.Code != wire.CodeNotFound {
		t.Errorf("GET sb-2: %d %s (%v)", rec.Code, rec.Body, err)
	}
}
