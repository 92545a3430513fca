package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/templatebuild"
	"github.com/airlock-dev/airlock/wire"
)

// Builds builds templates (POST /v1/templates/build; the daemon's
// templatebuild.Service: RUN steps in its own sandboxes).
type Builds interface {
	// Build builds template name from the build file at path file (on the
	// daemon's host), COPY reading below contextDir; progress (may be nil)
	// hears each step and the RUN steps' output, one line each.
	Build(ctx context.Context, name, file, contextDir string, progress func(string)) (*templatebuild.Result, error)
}

func buildOut(r *templatebuild.Result) wire.TemplateBuild {
	t := templateOut(r.Template)
	t.Digest = r.Digest
	return wire.TemplateBuild{Template: t, Cached: r.Cached, Built: r.Built, Same: r.Same}
}

// buildTemplate builds a template. Only over the local socket: its file
// and context are paths on the daemon's host, read as root.
func (s *Server) buildTemplate(w http.ResponseWriter, r *http.Request) {
	if isRemote(r) {
		writeError(w, fmt.Errorf("a template build reads the daemon's host paths: the local socket only: %w", errdefs.ErrDenied))
		return
	}
	if s.builds == nil {
		writeError(w, fmt.Errorf("this daemon builds no templates: %w", errdefs.ErrUnsupported))
		return
	}
	var req wire.TemplateBuildRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if r.URL.Query().Get("progress") == "1" {
		s.buildStreamed(w, r, req)
		return
	}
	res, err := s.builds.Build(r.Context(), req.Name, req.File, req.Context, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	code := http.StatusCreated
	if res.Same {
		code = http.StatusOK
	}
	writeJSON(w, code, buildOut(res))
}

// buildStreamed answers a build as newline-delimited JSON events: a line
// per step and per line of the steps' output, then the build or the error.
func (s *Server) buildStreamed(w http.ResponseWriter, r *http.Request, req wire.TemplateBuildRequest) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var mu sync.Mutex
	send := func(ev wire.TemplateBuildEvent) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(ev)
		_, _ = w.Write(append(b, '\n'))
		_ = rc.Flush()
	}
	res, err := s.builds.Build(r.Context(), req.Name, req.File, req.Context, func(line string) {
		send(wire.TemplateBuildEvent{Progress: oneLine(line)})
	})
	if err != nil {
		send(wire.TemplateBuildEvent{Error: &wire.Error{Code: errdefs.Kind(err), Message: oneLine(message(err))}})
		return
	}
	out := buildOut(res)
	send(wire.TemplateBuildEvent{Build: &out})
}
