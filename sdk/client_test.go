package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDaemon implements the routes of docs/api.md over an in-memory map,
// on a real unix socket. Exec understands a few made-up commands (see
// exec).
type fakeDaemon struct {
	t    *testing.T
	sock string
	srv  *httptest.Server

	mu        sync.Mutex
	n         int
	sandboxes map[string]*Sandbox
	order     []string // creation order
	execs     map[string][]*Exec
	outputs   map[string][2][]byte // exec id: stdout, stderr
	bodies    []string             // request bodies, in order
	auth      []string             // Authorization headers, in order
	requests  atomic.Int64

	// ack, when set, is waited on by the "stepped" command after each chunk.
	ack chan struct{}
	// override, when set, answers every request instead of the routes.
	override http.HandlerFunc
}

// sockDir is a short directory for a unix socket (paths are limited to
// 108 bytes).
func sockDir(t *testing.T) string {
	d := t.TempDir()
	if len(d) > 80 {
		var err error
		if d, err = os.MkdirTemp("/tmp", "sdk"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	return d
}

func newFake(t *testing.T) *fakeDaemon {
	t.Helper()
	d := &fakeDaemon{t: t, sandboxes: map[string]*Sandbox{}, execs: map[string][]*Exec{}, outputs: map[string][2][]byte{}}
	d.sock = filepath.Join(sockDir(t), "airlock.sock")
	l, err := net.Listen("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	d.srv = httptest.NewUnstartedServer(d.handler())
	d.srv.Listener = l
	d.srv.Start()
	t.Cleanup(d.srv.Close)
	return d
}

func (d *fakeDaemon) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	c, err := New(append([]Option{WithSocket(d.sock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, format string, args ...any) {
	writeJSON(w, status, map[string]string{"code": code, "message": fmt.Sprintf(format, args...)})
}

func (d *fakeDaemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, Health{OK: true, Version: "test", Backend: "native", Cgroup: "v2"})
	})
	mux.HandleFunc("POST /v1/sandboxes", d.create)
	mux.HandleFunc("GET /v1/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		state := r.URL.Query().Get("state")
		out := []*Sandbox{}
		for i := len(d.order) - 1; i >= 0; i-- {
			if sb := d.sandboxes[d.order[i]]; state == "" || sb.State == state {
				out = append(out, sb)
			}
		}
		writeJSON(w, 200, map[string]any{"sandboxes": out})
	})
	mux.HandleFunc("GET /v1/sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if sb := d.get(w, r); sb != nil {
			writeJSON(w, 200, sb)
		}
	})
	mux.HandleFunc("DELETE /v1/sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if sb := d.get(w, r); sb != nil {
			d.mu.Lock()
			sb.State, sb.StopReason, sb.Stopped, sb.Expires = StateStopped, StopDestroyed, time.Now(), time.Time{}
			d.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("POST /v1/sandboxes/{id}/timeout", func(w http.ResponseWriter, r *http.Request) {
		sb := d.get(w, r)
		if sb == nil {
			return
		}
		var req struct {
			TTLSeconds *int64 `json:"ttl_seconds"`
		}
		if err := json.Unmarshal([]byte(d.body(r)), &req); err != nil || req.TTLSeconds == nil || *req.TTLSeconds < 0 {
			writeErr(w, 400, "invalid", "bad ttl_seconds")
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if sb.State != StateRunning {
			writeErr(w, 409, "conflict", "sandbox %q is stopped", sb.ID)
			return
		}
		sb.Expires = time.Time{}
		if *req.TTLSeconds > 0 {
			sb.Expires = time.Now().Add(time.Duration(*req.TTLSeconds) * time.Second).UTC()
		}
		writeJSON(w, 200, sb)
	})
	mux.HandleFunc("POST /v1/sandboxes/{id}/exec", d.exec)
	mux.HandleFunc("GET /v1/sandboxes/{id}/execs", func(w http.ResponseWriter, r *http.Request) {
		if sb := d.get(w, r); sb != nil {
			d.mu.Lock()
			defer d.mu.Unlock()
			execs := d.execs[sb.ID]
			if execs == nil {
				execs = []*Exec{}
			}
			writeJSON(w, 200, map[string]any{"execs": execs})
		}
	})
	mux.HandleFunc("GET /v1/sandboxes/{id}/execs/{eid}/output", func(w http.ResponseWriter, r *http.Request) {
		if d.get(w, r) == nil {
			return
		}
		d.mu.Lock()
		out, ok := d.outputs[r.PathValue("eid")]
		d.mu.Unlock()
		if !ok {
			writeErr(w, 404, "not_found", "exec %q not found", r.PathValue("eid"))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		switch r.URL.Query().Get("stream") {
		case "stdout":
			w.Write(out[0])
		case "stderr":
			w.Write(out[1])
		default:
			writeErr(w, 400, "invalid", "bad stream")
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.requests.Add(1)
		d.mu.Lock()
		d.auth = append(d.auth, r.Header.Get("Authorization"))
		override := d.override
		d.mu.Unlock()
		if override != nil {
			override(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// body reads and records the request body.
func (d *fakeDaemon) body(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	d.bodies = append(d.bodies, string(b))
	d.mu.Unlock()
	return string(b)
}

func (d *fakeDaemon) setOverride(h http.HandlerFunc) {
	d.mu.Lock()
	d.override = h
	d.mu.Unlock()
}

func (d *fakeDaemon) lastBody() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.bodies) == 0 {
		return ""
	}
	return d.bodies[len(d.bodies)-1]
}

func (d *fakeDaemon) get(w http.ResponseWriter, r *http.Request) *Sandbox {
	d.mu.Lock()
	defer d.mu.Unlock()
	sb := d.sandboxes[r.PathValue("id")]
	if sb == nil {
		writeErr(w, 404, "not_found", "sandbox %q not found", r.PathValue("id"))
	}
	return sb
}

func (d *fakeDaemon) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Template   string            `json:"template"`
		Limits     *Limits           `json:"limits"`
		TTLSeconds int64             `json:"ttl_seconds"`
		Labels     map[string]string `json:"labels"`
		Env        []string          `json:"env"`
	}
	dec := json.NewDecoder(strings.NewReader(d.body(r)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeErr(w, 400, "invalid", "bad request: %v", err)
		return
	}
	if req.Template == "" {
		req.Template = "host"
	}
	if req.Template != "host" {
		writeErr(w, 404, "not_found", "template %q not found", req.Template)
		return
	}
	lim := Limits{MemoryBytes: 512 << 20, Pids: 256, DiskBytes: 1 << 30, TmpBytes: 256 << 20, Inodes: 200000, NoFile: 4096}
	if req.Limits != nil {
		if req.Limits.MemoryBytes != 0 {
			lim.MemoryBytes = req.Limits.MemoryBytes
		}
		if req.Limits.Pids != 0 {
			lim.Pids = req.Limits.Pids
		}
		lim.CPUs = req.Limits.CPUs
		lim.Lifetime = req.Limits.Lifetime
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	now := time.Now().UTC()
	sb := &Sandbox{
		ID: fmt.Sprintf("sb%04d", d.n), State: StateRunning, Backend: "native", Template: req.Template,
		TemplateVersion: "4ed206e18971", Labels: req.Labels, Limits: lim, Created: now,
		Isolation: Isolation{Boundary: "fake", Namespaces: []string{"user", "pid"}, UIDBase: 1 << 28, Seccomp: "default", LandlockABI: 7, Cgroup: "v2"},
	}
	if req.TTLSeconds > 0 {
		sb.Expires = now.Add(time.Duration(req.TTLSeconds) * time.Second)
	}
	d.sandboxes[sb.ID] = sb
	d.order = append(d.order, sb.ID)
	writeJSON(w, 201, sb)
}

type fakeExecReq struct {
	Argv        []string `json:"argv"`
	Env         []string `json:"env"`
	Cwd         string   `json:"cwd"`
	TimeoutMS   int64    `json:"timeout_ms"`
	Stdin       []byte   `json:"stdin"`
	OutputLimit int64    `json:"output_limit"`
}

// exec runs a made-up command:
//
//	echo ARGS...   prints ARGS; exit 0
//	outerr         stdout "a", stderr "b", stdout "c"; exit 3
//	cat            prints its stdin
//	exit N [LIMIT] exit N, with LIMIT hit
//	request        prints the request it got, as JSON
//	stepped N      N stdout chunks, waiting on d.ack after each
//	failmid        a stdout chunk, then an error event
//	missing        cannot start: 404 before the stream (exit 127)
//	noexec         cannot start: 400 before the stream (exit 126)
//	truncated      a chunk, then the stream ends with no exit
//	garbage        a line that is not JSON
//	nostatus       an exit event without a status
//	unknown        an event of an unknown type, then exit 0
//	hang           a chunk, then waits for the client to go
func (d *fakeDaemon) exec(w http.ResponseWriter, r *http.Request) {
	sb := d.get(w, r)
	if sb == nil {
		return
	}
	var req fakeExecReq
	if err := json.Unmarshal([]byte(d.body(r)), &req); err != nil || len(req.Argv) == 0 {
		writeErr(w, 400, "invalid", "bad exec request")
		return
	}
	d.mu.Lock()
	if sb.State != StateRunning {
		d.mu.Unlock()
		writeErr(w, 409, "conflict", "sandbox %q is stopped", sb.ID)
		return
	}
	d.n++
	rec := &Exec{ID: fmt.Sprintf("e-%d", d.n), SandboxID: sb.ID, Argv: req.Argv, Cwd: req.Cwd, Started: time.Now().UTC()}
	for _, kv := range req.Env {
		rec.EnvNames = append(rec.EnvNames, strings.SplitN(kv, "=", 2)[0])
	}
	d.execs[sb.ID] = append(d.execs[sb.ID], rec)
	d.mu.Unlock()

	fail := func(status, code int, kind, msg string) {
		d.mu.Lock()
		rec.Ended, rec.Status, rec.Error = time.Now().UTC(), &ExitStatus{Code: code}, kind+": "+msg
		d.mu.Unlock()
		writeErr(w, status, kind, "%s", msg)
	}
	switch req.Argv[0] {
	case "missing":
		fail(404, 127, "not_found", req.Argv[0]+": command not found")
		return
	case "noexec":
		fail(400, 126, "invalid", req.Argv[0]+": permission denied")
		return
	}

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	var stdout, stderr bytes.Buffer
	event := func(v map[string]any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
		fl.Flush()
	}
	chunk := func(stream string, data []byte) {
		if stream == "stdout" {
			stdout.Write(data)
		} else {
			stderr.Write(data)
		}
		event(map[string]any{"type": stream, "data": data}) // []byte: base64
	}
	exit := func(st ExitStatus) {
		st.StdoutBytes, st.StderrBytes = int64(stdout.Len()), int64(stderr.Len())
		st.Duration, st.UserTime, st.SystemTime, st.MaxRSSBytes = 1500*time.Millisecond, 2*time.Millisecond, 3*time.Millisecond, 4096
		d.mu.Lock()
		rec.Ended, rec.Status = time.Now().UTC(), &st
		d.outputs[rec.ID] = [2][]byte{stdout.Bytes(), stderr.Bytes()}
		d.mu.Unlock()
		event(map[string]any{"type": "exit", "status": st})
	}
	event(map[string]any{"type": "start", "exec_id": rec.ID, "pid": 2})
	switch req.Argv[0] {
	case "echo":
		chunk("stdout", []byte(strings.Join(req.Argv[1:], " ")+"\n"))
		exit(ExitStatus{})
	case "outerr":
		chunk("stdout", []byte("a"))
		chunk("stderr", []byte("b"))
		chunk("stdout", []byte("c"))
		exit(ExitStatus{Code: 3})
	case "cat":
		if len(req.Stdin) > 0 {
			chunk("stdout", req.Stdin)
		}
		exit(ExitStatus{})
	case "exit":
		code, _ := strconv.Atoi(req.Argv[1])
		st := ExitStatus{Code: code}
		if len(req.Argv) > 2 {
			st.Limit = req.Argv[2]
		}
		exit(st)
	case "request":
		b, _ := json.Marshal(req)
		chunk("stdout", b)
		exit(ExitStatus{})
	case "stepped":
		n, _ := strconv.Atoi(req.Argv[1])
		for i := range n {
			chunk("stdout", []byte(fmt.Sprintf("chunk %d\n", i)))
			select {
			case <-d.ack:
			case <-time.After(5 * time.Second):
				d.t.Errorf("stepped: chunk %d was not delivered to the writer before the next was sent", i)
				return
			}
		}
		exit(ExitStatus{})
	case "failmid":
		chunk("stdout", []byte("partial"))
		event(map[string]any{"type": "error", "code": "internal", "message": "sandbox lost\nsecond line"})
	case "truncated":
		chunk("stdout", []byte("partial"))
	case "garbage":
		w.Write([]byte("this is not json\n"))
	case "nostatus":
		event(map[string]any{"type": "exit"})
	case "unknown":
		event(map[string]any{"type": "progress", "data": "x"})
		exit(ExitStatus{})
	case "hang":
		chunk("stdout", []byte("started"))
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
			d.t.Errorf("hang: the client did not go away")
		}
	default:
		event(map[string]any{"type": "error", "code": "not_found", "message": "unknown fake command"})
	}
}

func TestHealth(t *testing.T) {
	d := newFake(t)
	h, err := d.client(t).Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if *h != (Health{OK: true, Version: "test", Backend: "native", Cgroup: "v2"}) {
		t.Fatalf("health %+v", h)
	}
}

func TestSandboxLifecycle(t *testing.T) {
	ctx := context.Background()
	d := newFake(t)
	c := d.client(t)

	sb, err := c.CreateSandbox(ctx, CreateRequest{
		Template: "host",
		Limits:   Limits{MemoryBytes: 256 << 20, Pids: 64, CPUs: 1.5, Lifetime: 2 * time.Hour},
		TTL:      90*time.Minute + time.Millisecond, // rounds up to whole seconds
		Labels:   map[string]string{"task": "t1"},
		Env:      []string{"A=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := json.Unmarshal([]byte(d.lastBody()), &wire); err != nil {
		t.Fatal(err)
	}
	if wire["ttl_seconds"] != float64(5401) || wire["template"] != "host" || fmt.Sprint(wire["env"]) != "[A=1]" || fmt.Sprint(wire["labels"]) != "map[task:t1]" {
		t.Fatalf("create request %s", d.lastBody())
	}
	lim := wire["limits"].(map[string]any)
	if lim["memory_bytes"] != float64(256<<20) || lim["pids"] != float64(64) || lim["cpus"] != 1.5 || lim["lifetime"] != float64(2*time.Hour) {
		t.Fatalf("limits on the wire %v", lim)
	}
	if sb.ID == "" || sb.State != StateRunning || sb.Limits.MemoryBytes != 256<<20 || sb.Limits.Lifetime != 2*time.Hour || sb.Labels["task"] != "t1" {
		t.Fatalf("created %+v", sb)
	}
	if sb.Isolation.LandlockABI != 7 || sb.Isolation.Cgroup != "v2" || len(sb.Isolation.Namespaces) != 2 {
		t.Fatalf("isolation %+v", sb.Isolation)
	}
	if got := sb.Expires.Sub(sb.Created); got != 5401*time.Second {
		t.Fatalf("expires %s after creation", got)
	}

	// An empty request sends an empty object.
	sb2, err := c.CreateSandbox(ctx, CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if d.lastBody() != "{}" {
		t.Fatalf("empty create request %s", d.lastBody())
	}
	if !sb2.Expires.IsZero() || sb2.Template != "host" {
		t.Fatalf("second sandbox %+v", sb2)
	}

	got, err := c.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != sb.ID || !got.Created.Equal(sb.Created) || got.TemplateVersion != "4ed206e18971" {
		t.Fatalf("get %+v", got)
	}

	list, err := c.ListSandboxes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != sb2.ID || list[1].ID != sb.ID {
		t.Fatalf("list %+v", list)
	}

	sb3, err := c.SetTimeout(ctx, sb.ID, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if d.lastBody() != `{"ttl_seconds":600}` || time.Until(sb3.Expires) < 9*time.Minute {
		t.Fatalf("timeout: sent %s, expires %v", d.lastBody(), sb3.Expires)
	}
	sb3, err = c.SetTimeout(ctx, sb.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.lastBody() != `{"ttl_seconds":0}` || !sb3.Expires.IsZero() {
		t.Fatalf("no TTL: sent %s, expires %v", d.lastBody(), sb3.Expires)
	}
	if _, err := c.SetTimeout(ctx, sb.ID, -time.Second); !IsInvalid(err) {
		t.Fatalf("negative TTL: %v", err)
	}

	if err := c.DestroySandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateStopped || got.StopReason != StopDestroyed || got.Stopped.IsZero() {
		t.Fatalf("after destroy %+v", got)
	}
	running, err := c.ListSandboxes(ctx, StateRunning)
	if err != nil {
		t.Fatal(err)
	}
	if len(running) != 1 || running[0].ID != sb2.ID {
		t.Fatalf("running %+v", running)
	}
	if _, err := c.SetTimeout(ctx, sb.ID, time.Minute); !IsConflict(err) {
		t.Fatalf("timeout of a stopped sandbox: %v", err)
	}
	if _, err := c.Exec(ctx, sb.ID, ExecRequest{Argv: []string{"echo"}}, nil, nil); !IsConflict(err) {
		t.Fatalf("exec in a stopped sandbox: %v", err)
	}

	// unknown ids
	_, err = c.GetSandbox(ctx, "nope")
	var e *Error
	if !IsNotFound(err) || !errors.As(err, &e) || e.Status != 404 || err.Error() != `not_found: sandbox "nope" not found` {
		t.Fatalf("get unknown: %v", err)
	}
	if err := c.DestroySandbox(ctx, "nope"); !IsNotFound(err) {
		t.Fatalf("destroy unknown: %v", err)
	}
	if _, err := c.ListExecs(ctx, "nope"); !IsNotFound(err) {
		t.Fatalf("execs of unknown: %v", err)
	}
	if _, err := c.CreateSandbox(ctx, CreateRequest{Template: "nope"}); !IsNotFound(err) {
		t.Fatalf("unknown template: %v", err)
	}

	// refused before sending
	n := d.requests.Load()
	if _, err := c.GetSandbox(ctx, ""); !IsInvalid(err) {
		t.Fatalf("empty id: %v", err)
	}
	if _, err := c.CreateSandbox(ctx, CreateRequest{TTL: -1}); !IsInvalid(err) {
		t.Fatalf("negative TTL: %v", err)
	}
	if d.requests.Load() != n {
		t.Fatal("a refused request was sent")
	}
}

// An id is one path segment, whatever it holds.
func TestIDIsEscaped(t *testing.T) {
	d := newFake(t)
	_, err := d.client(t).GetSandbox(context.Background(), "../health")
	if !IsNotFound(err) || !strings.Contains(err.Error(), `"../health"`) {
		t.Fatalf("got %v", err)
	}
}

func mustSandbox(t *testing.T, c *Client) string {
	t.Helper()
	sb, err := c.CreateSandbox(context.Background(), CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return sb.ID
}

func TestExecSeparatesStreams(t *testing.T) {
	d := newFake(t)
	c := d.client(t)
	id := mustSandbox(t, c)
	var out, errOut bytes.Buffer
	st, err := c.Exec(context.Background(), id, ExecRequest{Argv: []string{"outerr"}}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "ac" || errOut.String() != "b" {
		t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
	}
	want := ExitStatus{Code: 3, StdoutBytes: 2, StderrBytes: 1, Duration: 1500 * time.Millisecond, UserTime: 2 * time.Millisecond, SystemTime: 3 * time.Millisecond, MaxRSSBytes: 4096}
	if st.ExecID == "" {
		t.Fatal("no exec id")
	}
	st.ExecID = ""
	if *st != want {
		t.Fatalf("status %+v, want %+v", *st, want)
	}

	// nil writers discard
	st, err = c.Exec(context.Background(), id, ExecRequest{Argv: []string{"outerr"}}, nil, nil)
	if err != nil || st.Code != 3 {
		t.Fatalf("nil writers: %v %v", st, err)
	}
	// an unknown event type is skipped
	st, err = c.Exec(context.Background(), id, ExecRequest{Argv: []string{"unknown"}}, nil, nil)
	if err != nil || st.Code != 0 {
		t.Fatalf("unknown event: %v %v", st, err)
	}
	st, err = c.Exec(context.Background(), id, ExecRequest{Argv: []string{"exit", "124", LimitTimeout}}, nil, nil)
	if err != nil || st.Code != 124 || st.Limit != LimitTimeout {
		t.Fatalf("timeout status: %+v %v", st, err)
	}
}

// ackWriter records writes and tells the fake daemon each one arrived.
type ackWriter struct {
	mu     sync.Mutex
	chunks []string
	ack    chan struct{}
}

func (w *ackWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.chunks = append(w.chunks, string(p))
	w.mu.Unlock()
	w.ack <- struct{}{}
	return len(p), nil
}

// Each chunk reaches the writer before the daemon sends the next one.
func TestExecStreamsAsItArrives(t *testing.T) {
	d := newFake(t)
	d.ack = make(chan struct{})
	c := d.client(t, WithTimeout(time.Second)) // the timeout does not cover the stream
	id := mustSandbox(t, c)
	w := &ackWriter{ack: d.ack}
	st, err := c.Exec(context.Background(), id, ExecRequest{Argv: []string{"stepped", "5"}}, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Code != 0 || len(w.chunks) != 5 {
		t.Fatalf("status %+v, chunks %q", st, w.chunks)
	}
	for i, ch := range w.chunks {
		if ch != fmt.Sprintf("chunk %d\n", i) {
			t.Fatalf("chunk %d is %q", i, ch)
		}
	}
}

func TestExecRequestWire(t *testing.T) {
	d := newFake(t)
	c := d.client(t)
	id := mustSandbox(t, c)
	var out bytes.Buffer
	_, err := c.Exec(context.Background(), id, ExecRequest{
		Argv: []string{"request", "x y"}, Env: []string{"A=1", "B=2"}, Cwd: "/workspace/sub",
		Timeout: 1500*time.Microsecond + 1, Stdin: strings.NewReader("in\x00put"), OutputLimit: 1 << 20,
	}, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got fakeExecReq
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Argv) != "[request x y]" || fmt.Sprint(got.Env) != "[A=1 B=2]" || got.Cwd != "/workspace/sub" ||
		got.TimeoutMS != 2 || string(got.Stdin) != "in\x00put" || got.OutputLimit != 1<<20 {
		t.Fatalf("request on the wire %+v", got)
	}
	if !strings.Contains(d.lastBody(), `"stdin":"aW4AcHV0"`) {
		t.Fatalf("stdin is not base64: %s", d.lastBody())
	}

	// no stdin, no timeout: not sent
	out.Reset()
	if _, err := c.Exec(context.Background(), id, ExecRequest{Argv: []string{"request"}}, &out, nil); err != nil {
		t.Fatal(err)
	}
	if body := d.lastBody(); body != `{"argv":["request"]}` {
		t.Fatalf("minimal request %s", body)
	}

	// stdin comes back as sent
	out.Reset()
	in := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if _, err := c.Exec(context.Background(), id, ExecRequest{Argv: []string{"cat"}, Stdin: bytes.NewReader(in)}, &out, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), in) {
		t.Fatalf("cat: got %d bytes back", out.Len())
	}
}

func TestExecRefusedBeforeSending(t *testing.T) {
	d := newFake(t)
	c := d.client(t)
	id := mustSandbox(t, c)
	n := d.requests.Load()
	ctx := context.Background()
	if _, err := c.Exec(ctx, id, ExecRequest{Argv: []string{"cat"}, Stdin: io.LimitReader(zeros{}, MaxStdin+1)}, nil, nil); !IsLimitExceeded(err) {
		t.Fatalf("stdin over the cap: %v", err)
	}
	if _, err := c.Exec(ctx, id, ExecRequest{Argv: []string{"cat"}, Stdin: iotestErr{}}, nil, nil); err == nil || !strings.Contains(err.Error(), "reading stdin") {
		t.Fatalf("stdin read error: %v", err)
	}
	for _, req := range []ExecRequest{{}, {Argv: []string{""}}, {Argv: []string{"x"}, Timeout: -1}, {Argv: []string{"x"}, OutputLimit: -1}} {
		if _, err := c.Exec(ctx, id, req, nil, nil); !IsInvalid(err) {
			t.Fatalf("%+v: %v", req, err)
		}
	}
	if _, err := c.Exec(ctx, "", ExecRequest{Argv: []string{"x"}}, nil, nil); !IsInvalid(err) {
		t.Fatalf("empty id: %v", err)
	}
	if d.requests.Load() != n {
		t.Fatal("a refused request was sent")
	}
	// exactly the cap is sent
	var got atomic.Int64
	d.setOverride(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Store(n)
		w.Write([]byte(`{"type":"exit","status":{"code":0}}` + "\n"))
	})
	if _, err := c.Exec(ctx, id, ExecRequest{Argv: []string{"cat"}, Stdin: io.LimitReader(zeros{}, MaxStdin)}, nil, nil); err != nil {
		t.Fatalf("stdin at the cap: %v", err)
	}
	if got.Load() < MaxStdin*4/3 {
		t.Fatalf("sent %d bytes for %d of stdin", got.Load(), MaxStdin)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestExecErrors(t *testing.T) {
	d := newFake(t)
	c := d.client(t)
	id := mustSandbox(t, c)
	ctx := context.Background()

	// an error event ends the stream: an *Error, after the output so far
	var out bytes.Buffer
	_, err := c.Exec(ctx, id, ExecRequest{Argv: []string{"failmid"}}, &out, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInternal || e.Status != 500 || e.Message != "sandbox lost ..." {
		t.Fatalf("error event: %#v", err)
	}
	if out.String() != "partial" {
		t.Fatalf("output before the error %q", out.String())
	}

	// cannot start: the answer comes before any stream
	_, err = c.Exec(ctx, id, ExecRequest{Argv: []string{"missing"}}, nil, nil)
	if !IsNotFound(err) || err.Error() != "not_found: missing: command not found" {
		t.Fatalf("missing command: %v", err)
	}
	_, err = c.Exec(ctx, id, ExecRequest{Argv: []string{"noexec"}}, nil, nil)
	if !IsInvalid(err) {
		t.Fatalf("not executable: %v", err)
	}
	_, err = c.Exec(ctx, "nope", ExecRequest{Argv: []string{"echo"}}, nil, nil)
	if !IsNotFound(err) || !strings.Contains(err.Error(), "sandbox") {
		t.Fatalf("unknown sandbox: %v", err)
	}

	// broken streams
	_, err = c.Exec(ctx, id, ExecRequest{Argv: []string{"truncated"}}, nil, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated stream: %v", err)
	}
	_, err = c.Exec(ctx, id, ExecRequest{Argv: []string{"garbage"}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "malformed event") {
		t.Fatalf("garbage: %v", err)
	}
	_, err = c.Exec(ctx, id, ExecRequest{Argv: []string{"nostatus"}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "malformed \"exit\" event from the airlock daemon: no status") {
		t.Fatalf("exit without status: %v", err)
	}

	// a failing writer ends the call with its error
	boom := errors.New("disk full")
	_, err = c.Exec(ctx, id, ExecRequest{Argv: []string{"echo", "x"}}, failWriter{boom}, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "writing stdout") {
		t.Fatalf("writer error: %v", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

type funcWriter func([]byte)

func (f funcWriter) Write(p []byte) (int, error) { f(p); return len(p), nil }

func TestExecCanceled(t *testing.T) {
	d := newFake(t)
	c := d.client(t)
	id := mustSandbox(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := c.Exec(ctx, id, ExecRequest{Argv: []string{"hang"}}, funcWriter(func([]byte) { cancel() }), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled exec: %v", err)
	}
}

func TestExecsAndOutput(t *testing.T) {
	d := newFake(t)
	c := d.client(t)
	id := mustSandbox(t, c)
	ctx := context.Background()
	execs, err := c.ListExecs(ctx, id)
	if err != nil || execs == nil || len(execs) != 0 {
		t.Fatalf("no execs yet: %#v %v", execs, err)
	}
	st, err := c.Exec(ctx, id, ExecRequest{Argv: []string{"outerr"}, Env: []string{"SECRET=x"}, Cwd: "/tmp"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, id, ExecRequest{Argv: []string{"missing"}}, nil, nil); !IsNotFound(err) {
		t.Fatal(err)
	}
	execs, err = c.ListExecs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(execs) != 2 {
		t.Fatalf("execs %+v", execs)
	}
	e := execs[0]
	if e.ID != st.ExecID || e.SandboxID != id || e.Cwd != "/tmp" || fmt.Sprint(e.EnvNames) != "[SECRET]" || e.Status == nil || e.Status.Code != 3 || e.Ended.IsZero() || e.Error != "" {
		t.Fatalf("exec record %+v", e)
	}
	if e := execs[1]; e.Status == nil || e.Status.Code != 127 || e.Error != "not_found: missing: command not found" {
		t.Fatalf("failed exec record %+v", e)
	}

	for stream, want := range map[string]string{"": "ac", Stdout: "ac", Stderr: "b"} {
		b, err := c.ExecOutput(ctx, id, st.ExecID, stream)
		if err != nil || string(b) != want {
			t.Fatalf("output %q: %q %v", stream, b, err)
		}
	}
	if _, err := c.ExecOutput(ctx, id, st.ExecID, "both"); !IsInvalid(err) {
		t.Fatalf("bad stream: %v", err)
	}
	if _, err := c.ExecOutput(ctx, id, "", Stdout); !IsInvalid(err) {
		t.Fatalf("empty exec id: %v", err)
	}
	if _, err := c.ExecOutput(ctx, id, "e-999", Stdout); !IsNotFound(err) {
		t.Fatalf("unknown exec: %v", err)
	}
	if _, err := c.ExecOutput(ctx, "nope", st.ExecID, Stdout); !IsNotFound(err) {
		t.Fatalf("unknown sandbox: %v", err)
	}
}

func TestExecRecordError(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"e","error":"boom"}`: "boom",
		`{"id":"e","error":null}`:   "",
		`{"id":"e"}`:                "",
		`{"id":"e","error":{"code":"not_found","message":"x: nope"}}`: "not_found: x: nope",
		`{"id":"e","error":{"message":"only"}}`:                       "only",
		`{"id":"e","error":{"code":"internal"}}`:                      "internal",
	} {
		var e Exec
		if err := json.Unmarshal([]byte(in), &e); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if e.ID != "e" || e.Error != want {
			t.Fatalf("%s: %+v", in, e)
		}
	}
	var e Exec
	if err := json.Unmarshal([]byte(`{"id":"e","error":42}`), &e); err == nil {
		t.Fatal("a number as error was accepted")
	}
	// encoding keeps the string form
	b, _ := json.Marshal(Exec{ID: "e", Error: "x"})
	if !strings.Contains(string(b), `"error":"x"`) || strings.Contains(string(b), "ended") {
		t.Fatalf("encoded %s", b)
	}
}

// Durations are integers of nanoseconds on the wire, like Go's
// time.Duration in the daemon.
func TestDurationsAreNanoseconds(t *testing.T) {
	var st ExitStatus
	if err := json.Unmarshal([]byte(`{"code":0,"duration":1500000000,"user_time":1000,"system_time":2,"max_rss_bytes":7}`), &st); err != nil {
		t.Fatal(err)
	}
	if st.Duration != 1500*time.Millisecond || st.UserTime != time.Microsecond || st.SystemTime != 2 || st.MaxRSSBytes != 7 {
		t.Fatalf("%+v", st)
	}
	var sb Sandbox
	if err := json.Unmarshal([]byte(`{"id":"x","limits":{"lifetime":3600000000000},"created":"2026-11-29T20:00:00Z"}`), &sb); err != nil {
		t.Fatal(err)
	}
	if sb.Limits.Lifetime != time.Hour || sb.Created.Year() != 2026 || !sb.Expires.IsZero() {
		t.Fatalf("%+v", sb)
	}
}

func TestCeilDiv(t *testing.T) {
	for _, c := range []struct {
		d, unit time.Duration
		want    int64
	}{{0, time.Second, 0}, {-5, time.Second, 0}, {1, time.Second, 1}, {time.Second, time.Second, 1}, {time.Second + 1, time.Second, 2}, {1500 * time.Microsecond, time.Millisecond, 2}} {
		if got := ceilDiv(c.d, c.unit); got != c.want {
			t.Errorf("ceilDiv(%s, %s) = %d, want %d", c.d, c.unit, got, c.want)
		}
	}
}

// Answers that are not what the API promises.
func TestMalformedAnswers(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		check   func(error) bool
		msg     string
	}{
		{"json 404", func(w http.ResponseWriter, r *http.Request) { writeErr(w, 404, "not_found", "gone") }, IsNotFound, "not_found: gone"},
		{"code only", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 409, map[string]string{"code": "conflict"}) }, IsConflict, "conflict: HTTP 409 Conflict"},
		{"plain 404", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "404 page not found", 404) }, IsNotFound, "not_found: 404 page not found"},
		{"empty 409", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(409) }, IsConflict, "conflict: HTTP 409 Conflict"},
		{"html 502", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			w.Write([]byte("<html><body>bad gateway</body></html>"))
		}, func(err error) bool { return isCode(err, CodeInternal) }, "internal: HTTP 502 Bad Gateway"},
		{"multi-line", func(w http.ResponseWriter, r *http.Request) { writeErr(w, 400, "invalid", "first\nsecond") }, IsInvalid, "invalid: first ..."},
		{"413", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "too big", http.StatusRequestEntityTooLarge)
		}, IsLimitExceeded, "limit_exceeded: too big"},
		{"denied", func(w http.ResponseWriter, r *http.Request) { writeErr(w, 403, "denied", "no") }, IsDenied, "denied: no"},
		{"unsupported", func(w http.ResponseWriter, r *http.Request) { writeErr(w, 501, "unsupported", "no pause") }, IsUnsupported, "unsupported: no pause"},
		{"garbage 200", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{not json")) }, nil, "malformed answer"},
		{"empty 200", func(w http.ResponseWriter, r *http.Request) {}, nil, "malformed answer"},
		{"wrong type", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"id": 42}`)) }, nil, "malformed answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newFake(t)
			d.setOverride(tc.handler)
			_, err := d.client(t).GetSandbox(ctx, "x")
			if err == nil {
				t.Fatal("no error")
			}
			if tc.check != nil {
				if !tc.check(err) || err.Error() != tc.msg {
					t.Fatalf("got %q", err)
				}
			} else if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "GET /v1/sandboxes/x: ") {
				t.Fatalf("got %q", err)
			}
		})
	}

	t.Run("create without id", func(t *testing.T) {
		d := newFake(t)
		d.setOverride(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 201, map[string]string{}) })
		if _, err := d.client(t).CreateSandbox(ctx, CreateRequest{}); err == nil || !strings.Contains(err.Error(), "no sandbox id") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("list null", func(t *testing.T) {
		d := newFake(t)
		d.setOverride(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"sandboxes":null}`)) })
		l, err := d.client(t).ListSandboxes(ctx, "")
		if err != nil || l == nil || len(l) != 0 {
			t.Fatalf("got %#v %v", l, err)
		}
	})
	t.Run("exec long line", func(t *testing.T) {
		d := newFake(t)
		d.setOverride(func(w http.ResponseWriter, r *http.Request) {
			w.Write(bytes.Repeat([]byte("x"), maxEventLine+10))
		})
		c := d.client(t)
		_, err := c.Exec(ctx, "x", ExecRequest{Argv: []string{"x"}}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "longer than") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("exec error event without code", func(t *testing.T) {
		d := newFake(t)
		d.setOverride(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"type":"error"}` + "\n")) })
		_, err := d.client(t).Exec(ctx, "x", ExecRequest{Argv: []string{"x"}}, nil, nil)
		if !isCode(err, CodeInternal) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("exec bad base64", func(t *testing.T) {
		d := newFake(t)
		d.setOverride(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"type":"stdout","data":"!!!"}` + "\n")) })
		_, err := d.client(t).Exec(ctx, "x", ExecRequest{Argv: []string{"x"}}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), `malformed "stdout" event`) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestSocketMissing(t *testing.T) {
	ctx := context.Background()
	dir := sockDir(t)
	path := filepath.Join(dir, "airlock.sock")
	want := "cannot reach the airlock daemon at " + path + ": is `airlock serve` running?"

	c, err := New(WithSocket(path))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Health(ctx)
	if err == nil || err.Error() != want {
		t.Fatalf("missing socket: %v", err)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("does not wrap the cause: %v", err)
	}
	// every call says the same, exec too
	if _, err := c.Exec(ctx, "x", ExecRequest{Argv: []string{"x"}}, nil, nil); err == nil || err.Error() != want {
		t.Fatalf("exec: %v", err)
	}

	// a socket nobody listens on any more
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := c.ListSandboxes(ctx, ""); err == nil || err.Error() != want {
		t.Fatalf("stale socket: %v", err)
	}

	// the default comes from $AIRLOCK_SOCKET
	t.Setenv(SocketEnv, filepath.Join(dir, "env.sock"))
	c, err = New()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Health(ctx); err == nil || !strings.Contains(err.Error(), "at "+filepath.Join(dir, "env.sock")+":") {
		t.Fatalf("env socket: %v", err)
	}
	t.Setenv(SocketEnv, "")
	c, _ = New()
	if _, err := c.Health(ctx); err == nil || !strings.Contains(err.Error(), DefaultSocket) {
		t.Fatalf("default socket: %v", err)
	}
}

func TestSocketPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores socket permissions")
	}
	d := newFake(t)
	if err := os.Chmod(d.sock, 0); err != nil {
		t.Fatal(err)
	}
	_, err := d.client(t).Health(context.Background())
	if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), d.sock) {
		t.Fatalf("got %v", err)
	}
}

func TestBaseURLAndAPIKey(t *testing.T) {
	d := newFake(t)
	tcp := httptest.NewServer(d.handler())
	defer tcp.Close()
	c, err := New(WithBaseURL(tcp.URL+"/"), WithAPIKey("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	auth := d.auth[len(d.auth)-1]
	d.mu.Unlock()
	if auth != "Bearer s3cret" {
		t.Fatalf("Authorization %q", auth)
	}
	// no key, no header
	if _, err := d.client(t).Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	auth = d.auth[len(d.auth)-1]
	d.mu.Unlock()
	if auth != "" {
		t.Fatalf("Authorization %q without a key", auth)
	}

	for _, opts := range [][]Option{
		{WithBaseURL("ftp://x")}, {WithBaseURL("http://")}, {WithBaseURL("://")}, {WithBaseURL("http://x?a=b")},
		{WithBaseURL("http://x"), WithSocket("/s")}, {WithAPIKey("a\nb")}, {WithTimeout(-1)},
	} {
		if _, err := New(opts...); err == nil {
			t.Errorf("New accepted %d bad options", len(opts))
		}
	}

	// an unreachable TCP daemon
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, _ = New(WithBaseURL("http://" + addr))
	if _, err := c.Health(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "cannot reach the airlock daemon at http://"+addr) {
		t.Fatalf("unreachable TCP: %v", err)
	}
}

func TestWithHTTPClient(t *testing.T) {
	d := newFake(t)
	// no transport: the socket's is filled in, on a copy
	hc := &http.Client{}
	c := d.client(t, WithHTTPClient(hc))
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hc.Transport != nil {
		t.Fatal("the caller's client was changed")
	}
	// a transport: used as is
	var used atomic.Bool
	hc = &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		used.Store(true)
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(`{"ok":true,"version":"rt"}`)), Header: http.Header{}}, nil
	})}
	c = d.client(t, WithHTTPClient(hc))
	h, err := c.Health(context.Background())
	if err != nil || !used.Load() || h.Version != "rt" {
		t.Fatalf("custom transport: %+v %v", h, err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestWithTimeout(t *testing.T) {
	d := newFake(t)
	release := make(chan struct{})
	defer close(release)
	d.setOverride(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	c := d.client(t, WithTimeout(50*time.Millisecond))
	start := time.Now()
	_, err := c.Health(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer within 50ms") {
		t.Fatalf("got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the timeout did not end the call")
	}
	if _, err := c.Exec(context.Background(), "x", ExecRequest{Argv: []string{"x"}}, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exec: %v", err)
	}

	// the body is covered too, except exec's stream
	d.setOverride(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.Write([]byte(`{"ok":`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	if _, err := c.Health(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow body: %v", err)
	}
	d.setOverride(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.Write([]byte(`{"type":"start","exec_id":"e-1"}` + "\n"))
		w.(http.Flusher).Flush()
		time.Sleep(150 * time.Millisecond)
		w.Write([]byte(`{"type":"exit","status":{"code":7}}` + "\n"))
	})
	st, err := c.Exec(context.Background(), "x", ExecRequest{Argv: []string{"x"}}, nil, nil)
	if err != nil || st.Code != 7 || st.ExecID != "e-1" {
		t.Fatalf("slow stream: %+v %v", st, err)
	}
}

func TestErrorType(t *testing.T) {
	e := &Error{Status: 404, Code: CodeNotFound, Message: "x"}
	if e.Error() != "not_found: x" || (&Error{Code: "internal"}).Error() != "internal" {
		t.Fatal(e.Error())
	}
	wrapped := fmt.Errorf("ctx: %w", e)
	if !IsNotFound(wrapped) || IsConflict(wrapped) || IsInvalid(wrapped) || IsNotFound(errors.New("not_found")) || IsNotFound(nil) {
		t.Fatal("Is* helpers")
	}
	for code, status := range map[string]int{CodeInvalid: 400, CodeNotFound: 404, CodeConflict: 409, CodeDenied: 403, CodeLimitExceeded: 429, CodeUnsupported: 501, CodeInternal: 500, "new_kind": 500} {
		if got := codeStatus(code); got != status {
			t.Errorf("codeStatus(%s) = %d, want %d", code, got, status)
		}
	}
}
