package api

import (
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/wire"
)

// Tasks is what the API uses of the tasks module (tasks.Tasks); its
// methods are the /v1/tasks routes'.
type Tasks interface {
	Start(ctx context.Context, req tasks.TaskRequest) (*tasks.Task, error)
	Get(ctx context.Context, id string) (*tasks.Task, error)
	List(ctx context.Context) ([]*tasks.Task, error)
	Test(ctx context.Context, id string, timeout time.Duration, started func(string, int), stdout, stderr io.Writer) (*tasks.TestRun, error)
	Diff(ctx context.Context, id string) (*tasks.Diff, error)
	Finish(ctx context.Context, id string, keep bool) (*tasks.FinishResult, error)
	Export(ctx context.Context, id string, w io.Writer) error
}

// noTasks is a daemon without tasks: every task call fails.
type noTasks struct{}

var errNoTasks = fmt.Errorf("tasks are not configured: %w", errdefs.ErrUnsupported)

func (noTasks) Start(context.Context, tasks.TaskRequest) (*tasks.Task, error) { return nil, errNoTasks }
func (noTasks) Get(context.Context, string) (*tasks.Task, error)              { return nil, errNoTasks }
func (noTasks) List(context.Context) ([]*tasks.Task, error)                   { return nil, errNoTasks }
func (noTasks) Test(context.Context, string, time.Duration, func(string, int), io.Writer, io.Writer) (*tasks.TestRun, error) {
	return nil, errNoTasks
}
func (noTasks) Diff(context.Context, string) (*tasks.Diff, error) { return nil, errNoTasks }
func (noTasks) Finish(context.Context, string, bool) (*tasks.FinishResult, error) {
	return nil, errNoTasks
}
func (noTasks) Export(context.Context, string, io.Writer) error { return errNoTasks }

func (s *Server) taskRoutes() {
	s.handle("POST /v1/tasks", access{role: tenant.Agent}, s.startTask)
	s.handle("GET /v1/tasks", access{role: tenant.Agent}, s.listTasks)
	s.handle("GET /v1/tasks/{id}", access{role: tenant.Agent, kind: tenant.Task}, s.getTask)
	s.handle("POST /v1/tasks/{id}/test", access{role: tenant.Agent, kind: tenant.Task}, s.testTask)
	s.handle("GET /v1/tasks/{id}/diff", access{role: tenant.Agent, kind: tenant.Task}, s.diffTask)
	s.handle("POST /v1/tasks/{id}/finish", access{role: tenant.Agent, kind: tenant.Task}, s.finishTask)
}

func (s *Server) startTask(w http.ResponseWriter, r *http.Request) {
	var req tasks.TaskRequest
	var err error
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		req, err = s.parseBundleTask(w, r)
	} else {
		req, err = parseTask(http.MaxBytesReader(w, r.Body, maxJSONBody), s.sbx.MaxLifetime())
	}
	if err != nil {
		writeError(w, err)
		return
	}
	// A remote client may not make the daemon (root) read the host's
	// repositories, use its ssh keys or reach its network: only public
	// https and http URLs (Start checks them).
	req.TightenOnly = isRemote(r)
	t, err := s.tasks.Start(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, taskOut(t))
}

// maxBundleBody bounds a multipart task request: the bundle, its request
// and the parts' headers.
const maxBundleBody = wire.MaxBundle + maxJSONBody + 64<<10

// parseBundleTask reads a task request that carries its repository: the
// request part, then the bundle part, whose reader Start consumes (the
// body is streamed, never held whole). Any other part, or another order,
// is refused.
func (s *Server) parseBundleTask(w http.ResponseWriter, r *http.Request) (tasks.TaskRequest, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBundleBody)
	mr, err := r.MultipartReader()
	if err != nil {
		return tasks.TaskRequest{}, errdefs.Wrap(errdefs.ErrInvalid, "multipart body: %v", err)
	}
	next := func(want string) (*multipart.Part, error) {
		p, err := mr.NextPart()
		if err != nil {
			return nil, errdefs.Wrap(errdefs.ErrInvalid, "multipart body: want the part %q: %v", want, err)
		}
		if p.FormName() != want {
			return nil, errdefs.Wrap(errdefs.ErrInvalid, "multipart body: part %q where %q belongs (parts: %q, then %q)", p.FormName(), want, wire.TaskRequestPart, wire.TaskBundlePart)
		}
		return p, nil
	}
	p, err := next(wire.TaskRequestPart)
	if err != nil {
		return tasks.TaskRequest{}, err
	}
	req, err := parseTask(io.LimitReader(p, maxJSONBody), s.sbx.MaxLifetime())
	if err != nil {
		return req, err
	}
	if req.Repo != "" {
		return req, errdefs.Wrap(errdefs.ErrInvalid, "a request with a bundle names no repo")
	}
	if req.Bundle, err = next(wire.TaskBundlePart); err != nil {
		return req, err
	}
	return req, nil
}

// parseTask is parseCreate for a task's body.
func parseTask(body io.Reader, maxLifetime time.Duration) (tasks.TaskRequest, error) {
	var w wire.TaskRequest
	if err := decodeJSON(body, &w); err != nil {
		return tasks.TaskRequest{}, err
	}
	req, err := taskIn(w)
	if err != nil {
		return req, err
	}
	_, err = tasks.Check(req, maxLifetime)
	return req, err
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	list, err := s.tasks.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.TaskList{Tasks: mapAll(list, func(t *tasks.Task) wire.Task { return *taskOut(t) })})
}

func taskID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return "", false
	}
	return id, true
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	t, err := s.tasks.Get(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, taskOut(t))
}

// testTask streams the test run like an exec; the exit event also says
// whether the tests passed.
func (s *Server) testTask(w http.ResponseWriter, r *http.Request) {
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	timeout := 30 * time.Minute
	if v := r.URL.Query().Get("timeout_ms"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			writeError(w, errdefs.Wrap(errdefs.ErrInvalid, "timeout_ms %q: want a positive number", v))
			return
		}
		if timeout, err = reqcheck.Millis("timeout_ms", ms, 0); err != nil {
			writeError(w, err)
			return
		}
	}
	fl, _ := w.(http.Flusher)
	st := &stream{w: w, fl: fl}
	run, err := s.tasks.Test(r.Context(), id, timeout, func(execID string, pid int) {
		st.send(wire.Event{Type: wire.EventStart, ExecID: execID, PID: pid})
	}, streamWriter{st, "stdout"}, streamWriter{st, "stderr"})
	if err != nil {
		st.mu.Lock()
		started := st.started
		st.mu.Unlock()
		if !started {
			writeError(w, err)
			return
		}
		st.send(wire.Event{Type: wire.EventError, Code: errdefs.Kind(err), Message: oneLine(message(err))})
		return
	}
	passed := run.Passed
	st.send(wire.Event{Type: wire.EventExit, Status: exitOut(&run.Status), Passed: &passed})
}

func (s *Server) diffTask(w http.ResponseWriter, r *http.Request) {
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	d, err := s.tasks.Diff(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	if r.URL.Query().Get("format") == "patch" {
		w.Header().Set("Content-Type", "text/x-diff")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(d.Patch))
		return
	}
	writeJSON(w, http.StatusOK, diffOut(d))
}

func (s *Server) finishTask(w http.ResponseWriter, r *http.Request) {
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	keep, _ := strconv.ParseBool(r.URL.Query().Get("keep"))
	res, err := s.tasks.Finish(r.Context(), id, keep)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, finishOut(res))
}
