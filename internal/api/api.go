// Package api serves airlock's HTTP+JSON API (docs/api.md) over the
// manager: request decoding and validation, error kinds mapped to status
// codes in one place (statusFor), and the NDJSON exec stream. It holds no
// state of its own. Only cmd/airlock imports it.
package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/mcp"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/quotas"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/sdk"
	"github.com/airlock-dev/airlock/wire"
)

// Limits on request bodies.
const (
	maxJSONBody = 1 << 20
	// MaxStdin is the largest stdin an exec request may carry.
	MaxStdin    = 16 << 20
	maxExecBody = MaxStdin*4/3 + maxJSONBody
)

// Health is the answer of GET /v1/health; New takes the daemon's (its
// version, backend and cgroup mode).
type Health = wire.Health

// Server is the API's http.Handler.
type Server struct {
	sbx      Sandboxes
	execs    Execs
	hist     ExecRecords
	files    Files
	pol      Policies
	tpl      Templates
	rec      Records
	keys     Keys
	snaps    Snapshots
	images   Images
	builds   Builds
	secs     Secrets
	tasks    Tasks
	appr     Approvals
	net      Network
	audit    AuditLog
	review   Review
	caches   Caches
	pools    Pools
	owners   Owners
	projects Projects
	quotas   Quotas
	rates    *quotas.KeyRates
	health   Health
	mux      *http.ServeMux
	routes   []Route
}

// Keys is what the API uses of the daemon's API keys (apikeys.Keys):
// Of on every TCP request, the rest on the unix socket only.
type Keys interface {
	Create(ctx context.Context, name, format string) (*apikeys.Key, string, error)
	Make(ctx context.Context, req apikeys.Request) (*apikeys.Key, string, error)
	Of(ctx context.Context, key string) (*apikeys.Key, bool)
	Bind(ctx context.Context, k *apikeys.Key) (context.Context, func())
	List(ctx context.Context) ([]*apikeys.Key, error)
	Delete(ctx context.Context, id string) error
	Rotate(ctx context.Context, id, format string, overlap time.Duration) (*apikeys.Key, string, error)
}

// Modules are the feature modules the API calls besides the manager;
// one left nil is a feature this daemon does not have (its calls fail
// closed: no key is valid, no snapshot is made, no task runs).
type Modules struct {
	Keys      Keys
	Snapshots Snapshots
	Secrets   Secrets
	Tasks     Tasks
	Files     Files       // nil: no file route works (noFiles)
	Records   ExecRecords // nil: no exec record is read (noRecords)
	Policies  Policies    // nil: no policy is shown or checked (noPolicies)
	Network   Network     // nil: no egress routes work (noNetwork)
	Audit     AuditLog    // nil: no audit log is kept (noAudit)

	// Approvals nil: nothing is held (the core denies what the policy
	// asks about), decided or overridden (noApprovals).
	Approvals Approvals
	// Review nil: nothing is purged (noReview).
	Review Review
	// Caches nil: no dependency caches are kept (noCaches).
	Caches Caches
	Images Images
	// Builds nil: no template is built (POST /v1/templates/build is
	// unsupported).
	Builds Builds
	// Pools nil: no warm pools (an empty list).
	Pools Pools
	// Owners nil: no projects; a key reaches no object by its id.
	Owners Owners
	// Projects nil: none is made or listed (unsupported).
	Projects Projects
	// Quotas nil: no usage is reported and no quota set (unsupported).
	Quotas Quotas
	// KeyRates bound each API key's requests over TCP (nil: no bound).
	KeyRates *quotas.KeyRates
}

// Images imports image templates (POST /v1/templates; the daemon's
// template/oci import into its store).
type Images interface {
	// Import imports source as the template name; it returns the new
	// template and its pinned digest. registrySecret ("": none) names
	// the secret holding the registry's credential. progress (may be
	// nil) hears of each step, one line each.
	Import(ctx context.Context, name, source, registrySecret string, progress func(string)) (*sandbox.TemplateInfo, string, error)
}

// Snapshots is what the API uses of the snapshot templates
// (snapshots.Snapshots); the manager lists them with the templates.
type Snapshots interface {
	Snapshot(ctx context.Context, id, name string, newOnly bool) (*snapshots.Snapshot, error)
}

// noFiles is a daemon without the file API: no file route works.
type noFiles struct{}

func (noFiles) AgentFiles(context.Context, string) (runtime.Files, error) {
	return nil, fmt.Errorf("this daemon has no file API: %w", errdefs.ErrUnsupported)
}

// noPolicies is a daemon without the policy explain module: no policy is
// shown or checked (every exec is still decided by the core).
type noPolicies struct{}

var errNoPolicies = fmt.Errorf("this daemon does not explain policies: %w", errdefs.ErrUnsupported)

func (noPolicies) Policy(context.Context, string) (*policy.Policy, error) { return nil, errNoPolicies }
func (noPolicies) Check(context.Context, string, []string, string) (*policy.Decision, error) {
	return nil, errNoPolicies
}

// noRecords is a daemon without the exec records module: no record or
// output of an exec is read.
type noRecords struct{}

var errNoRecords = fmt.Errorf("this daemon has no exec records: %w", errdefs.ErrUnsupported)

func (noRecords) Execs(context.Context, string) ([]*sandbox.Exec, error) { return nil, errNoRecords }
func (noRecords) GetExec(context.Context, string, string) (*sandbox.Exec, error) {
	return nil, errNoRecords
}
func (noRecords) Output(context.Context, string, string, string) ([]byte, error) {
	return nil, errNoRecords
}

type noSnapshots struct{}

func (noSnapshots) Snapshot(context.Context, string, string, bool) (*snapshots.Snapshot, error) {
	return nil, fmt.Errorf("snapshots are not configured: %w", errdefs.ErrUnsupported)
}

// noKeys is a daemon without API keys: no key is valid, none is made.
type noKeys struct{}

var errNoKeys = fmt.Errorf("this daemon keeps no API keys: %w", errdefs.ErrUnsupported)

func (noKeys) Create(context.Context, string, string) (*apikeys.Key, string, error) {
	return nil, "", errNoKeys
}
func (noKeys) Make(context.Context, apikeys.Request) (*apikeys.Key, string, error) {
	return nil, "", errNoKeys
}
func (noKeys) Of(context.Context, string) (*apikeys.Key, bool) { return nil, false }
func (noKeys) Bind(ctx context.Context, _ *apikeys.Key) (context.Context, func()) {
	return ctx, func() {}
}
func (noKeys) Rotate(context.Context, string, string, time.Duration) (*apikeys.Key, string, error) {
	return nil, "", errNoKeys
}
func (noKeys) List(context.Context) ([]*apikeys.Key, error) { return nil, errNoKeys }
func (noKeys) Delete(context.Context, string) error         { return errNoKeys }

// New returns the handler over core (the daemon's *manager.Manager) and
// the feature modules.
func New(core Core, mods Modules, h Health) *Server {
	if mods.Keys == nil {
		mods.Keys = noKeys{}
	}
	if mods.Snapshots == nil {
		mods.Snapshots = noSnapshots{}
	}
	if mods.Secrets == nil {
		mods.Secrets = noSecrets{}
	}
	if mods.Tasks == nil {
		mods.Tasks = noTasks{}
	}
	if mods.Policies == nil {
		mods.Policies = noPolicies{}
	}
	if mods.Records == nil {
		mods.Records = noRecords{}
	}
	if mods.Files == nil {
		mods.Files = noFiles{}
	}
	if mods.Approvals == nil {
		mods.Approvals = noApprovals{}
	}
	if mods.Review == nil {
		mods.Review = noReview{}
	}
	if mods.Network == nil {
		mods.Network = noNetwork{}
	}
	if mods.Audit == nil {
		mods.Audit = noAudit{}
	}
	if mods.Caches == nil {
		mods.Caches = noCaches{}
	}
	if mods.Pools == nil {
		mods.Pools = noPools{}
	}
	if mods.Owners == nil {
		mods.Owners = noOwners{}
	}
	if mods.Quotas == nil {
		mods.Quotas = noQuotas{}
	}
	if mods.Projects == nil {
		mods.Projects = noProjects{}
	}
	s := &Server{sbx: core, execs: core, hist: mods.Records, files: mods.Files, pol: mods.Policies, tpl: core, rec: core, keys: mods.Keys, snaps: mods.Snapshots, images: mods.Images, builds: mods.Builds, secs: mods.Secrets, tasks: mods.Tasks, appr: mods.Approvals, net: mods.Network, audit: mods.Audit, review: mods.Review, caches: mods.Caches, pools: mods.Pools, owners: mods.Owners, projects: mods.Projects, quotas: mods.Quotas, rates: mods.KeyRates, health: h, mux: http.NewServeMux()}
	s.handle("GET /v1/health", access{role: tenant.Agent}, s.getHealth)
	s.handle("POST /v1/sandboxes", access{role: tenant.Agent}, s.createSandbox)
	s.handle("GET /v1/sandboxes", access{role: tenant.Agent}, s.listSandboxes)
	s.handle("GET /v1/sandboxes/{id}", access{role: tenant.Agent, kind: tenant.Sandbox}, s.getSandbox)
	s.handle("DELETE /v1/sandboxes/{id}", access{role: tenant.Agent, kind: tenant.Sandbox}, s.deleteSandbox)
	s.handle("POST /v1/sandboxes/{id}/timeout", access{role: tenant.Agent, kind: tenant.Sandbox}, s.setTimeout)
	s.handle("POST /v1/sandboxes/{id}/exec", access{role: tenant.Agent, kind: tenant.Sandbox}, s.exec)
	s.handle("GET /v1/sandboxes/{id}/execs", access{role: tenant.Agent, kind: tenant.Sandbox}, s.listExecs)
	s.handle("GET /v1/sandboxes/{id}/execs/{exec}/output", access{role: tenant.Agent, kind: tenant.Sandbox}, s.output)
	s.handle("GET /v1/sandboxes/{id}/execs/{exec}", access{role: tenant.Agent, kind: tenant.Sandbox}, s.getExec)
	s.handle("POST /v1/sandboxes/{id}/execs/{exec}/signal", access{role: tenant.Agent, kind: tenant.Sandbox}, s.signal)
	s.handle("POST /v1/sandboxes/{id}/execs/{exec}/input", access{role: tenant.Agent, kind: tenant.Sandbox}, s.input)
	s.handle("POST /v1/sandboxes/{id}/execs/{exec}/resize", access{role: tenant.Agent, kind: tenant.Sandbox}, s.resize)
	s.handle("POST /v1/sandboxes/{id}/execs/{exec}/close-stdin", access{role: tenant.Agent, kind: tenant.Sandbox}, s.closeStdin)
	s.handle("POST /v1/sandboxes/{id}/reset", access{role: tenant.Agent, kind: tenant.Sandbox}, s.reset)
	s.handle("POST /v1/sandboxes/{id}/snapshot", access{role: tenant.Agent, kind: tenant.Sandbox}, s.snapshot)
	s.handle("GET /v1/templates", access{role: tenant.Agent}, s.templates)
	s.handle("POST /v1/templates", access{role: tenant.Operator}, s.importTemplate)
	s.handle("POST /v1/templates/build", access{role: tenant.Operator}, s.buildTemplate)
	s.handle("POST /v1/sandboxes/{id}/pause", access{role: tenant.Agent, kind: tenant.Sandbox}, s.pause)
	s.handle("POST /v1/sandboxes/{id}/resume", access{role: tenant.Agent, kind: tenant.Sandbox}, s.resume)
	s.filesRoutes()
	s.taskRoutes()
	s.keyRoutes()
	s.policyRoutes()
	s.auditRoutes()
	s.secretRoutes()
	s.egressRoutes()
	s.cacheRoutes()
	s.poolRoutes()
	s.projectRoutes()
	// MCP over streamable HTTP: its tools call this same API in process,
	// with the caller's context, so nothing is different for them.
	s.mux.Handle("/mcp", mcp.HTTP(h.Version, s.mcpCaller))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("no route %s %s: %w", r.Method, r.URL.Path, errdefs.ErrNotFound))
	})
	return s
}

// mcpCaller names an MCP request's sender: the operator on the socket
// (as the CLI names the person), or the API key over TCP (a digest of
// it: the key itself is never kept), and gives a client acting as them.
func (s *Server) mcpCaller(r *http.Request) (string, func() *sdk.Client) {
	id := "socket:" + r.Header.Get("X-Airlock-Actor")
	if isRemote(r) {
		// The key TCP() authenticated, picked as it picks it: another
		// header's value must not make another identity (each one holds
		// sessions, and their number is bounded).
		key := r.Header.Get("X-API-KEY")
		if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			key = v
		}
		sum := sha256.Sum256([]byte(key))
		id = "tcp:" + hex.EncodeToString(sum[:])
	}
	return id, func() *sdk.Client {
		c, _ := sdk.New(sdk.WithBaseURL("http://airlock"), sdk.WithHTTPClient(&http.Client{Transport: mcp.InProcess{Handler: s, Values: r.Context()}}))
		return c
	}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isRemote(r) {
		// The socket's caller is the operator; the CLI names the person.
		who := "operator"
		if u := r.Header.Get("X-Airlock-Actor"); u != "" && len(u) <= 64 && !strings.ContainsAny(u, "\r\n\x00") {
			who += ":" + u
		}
		// It may decide approvals, so it is shown them unredacted.
		ctx := tenant.With(r.Context(), tenant.OperatorPrincipal)
		r = r.WithContext(sandbox.AsApprover(sandbox.WithActor(ctx, who)))
	}
	if c := r.Header.Get(wire.ClientHeader); c != "" {
		// The program the caller says it acts through (an MCP client):
		// on every event the request makes, beside the actor.
		r = r.WithContext(sandbox.WithClient(r.Context(), c))
	}
	// Reads are not events; an exec records itself (exec.start, .end,
	// .refused, with the actor), so its API call adds nothing but latency.
	if r.Method == http.MethodGet || r.Method == http.MethodHead || (r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/exec")) {
		s.mux.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	s.mux.ServeHTTP(sw, r)
	s.rec.RecordAPI(context.WithoutCancel(r.Context()), r.Method, r.URL.Path, sw.status)
}

// writeError answers err as a wire.Error, with the status of its kind
// (wire.Status: the one place statuses are decided). A command the policy
// stopped also names the rules that did and, when held, its approval.
func writeError(w http.ResponseWriter, err error) {
	kind := errdefs.Kind(err)
	status := wire.Status(kind)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		kind, status = wire.CodeLimitExceeded, http.StatusRequestEntityTooLarge
	}
	var qe *quotas.Error
	if errors.As(err, &qe) {
		writeJSON(w, status, wire.Error{Code: wire.CodeQuotaExceeded, Message: oneLine(qe.Error()),
			Quota: &wire.QuotaHit{Project: qe.Project, Name: qe.Quota, Limit: qe.Limit, Used: qe.Used, Asked: qe.Asked}})
		return
	}
	var pe *sandbox.PolicyError
	if errors.As(err, &pe) {
		writeJSON(w, status, wire.Error{Code: pe.Code, Message: oneLine(pe.Message), Rules: pe.Rules, ApprovalID: pe.Approval})
		return
	}
	writeJSON(w, status, wire.Error{Code: kind, Message: oneLine(message(err))})
}

// message is err's text without the trailing kind ("...: not found"),
// which the code field already says.
func message(err error) string {
	msg := err.Error()
	for _, k := range []error{errdefs.ErrNotFound, errdefs.ErrConflict, errdefs.ErrDenied, errdefs.ErrLimitExceeded, errdefs.ErrUnsupported, errdefs.ErrInvalid, errdefs.ErrPending, errdefs.ErrTimeout} {
		if errors.Is(err, k) {
			msg = strings.TrimSuffix(msg, ": "+k.Error())
		}
	}
	return msg
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 2000 {
		s = s[:2000] + "..."
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly: one object, no unknown fields.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	return decodeJSON(r.Body, v)
}

// decodeJSON is decode's reading of one object from body.
func decodeJSON(body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		if err == io.EOF {
			return fmt.Errorf("empty body: send a JSON object: %w", errdefs.ErrInvalid)
		}
		return fmt.Errorf("malformed JSON: %v: %w", err, errdefs.ErrInvalid)
	}
	if dec.More() {
		return fmt.Errorf("malformed JSON: more than one value: %w", errdefs.ErrInvalid)
	}
	return nil
}

// validID refuses ids that could not have been made by a backend.
func validID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("bad sandbox id: %w", errdefs.ErrInvalid)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("bad sandbox id %q: %w", id, errdefs.ErrInvalid)
		}
	}
	return nil
}

func (s *Server) getHealth(w http.ResponseWriter, r *http.Request) {
	h := s.health
	if err := s.rec.Healthy(); err != nil {
		// Also an error answer (code, message), for clients that read
		// any non-2xx as one.
		h.OK, h.Problem = false, oneLine(message(err))
		h.Code, h.Message = errdefs.Kind(err), h.Problem
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req sandbox.CreateRequest
	if r.ContentLength != 0 {
		var err error
		if req, err = parseCreate(http.MaxBytesReader(w, r.Body, maxJSONBody), s.sbx.MaxLifetime()); err != nil {
			writeError(w, err)
			return
		}
	}
	req.TightenOnly = isRemote(r)
	sb, err := s.sbx.Create(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, sandboxOut(sb))
}

// parseCreate decodes a create body and refuses, before anything else
// is done, a time to live, limits or labels out of bounds under the
// daemon's maximum lifetime (sandbox.CheckCreate; Create checks again).
func parseCreate(body io.Reader, maxLifetime time.Duration) (sandbox.CreateRequest, error) {
	var body1 wire.CreateSandboxRequest
	if err := decodeJSON(body, &body1); err != nil {
		return sandbox.CreateRequest{}, err
	}
	req, err := createIn(body1)
	if err != nil {
		return req, err
	}
	_, err = sandbox.CheckCreate(req, maxLifetime)
	return req, err
}

func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request) {
	list, err := s.sbx.List(r.Context(), r.URL.Query().Get("state"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.SandboxList{Sandboxes: mapAll(list, sandboxOut)})
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	sb, err := s.sbx.Get(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sandboxOut(sb))
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	destroy := s.sbx.Destroy
	switch r.URL.Query().Get("wait") {
	case "", "true":
	case "false":
		// the teardown goes on after the answer (a one-shot run's exit)
		a, ok := s.sbx.(asyncDestroyer)
		if !ok {
			writeError(w, errdefs.Wrap(errdefs.ErrUnsupported, "wait=false: this daemon's sandboxes are destroyed only while the request waits"))
			return
		}
		destroy = a.DestroyAsync
	default:
		writeError(w, errdefs.Wrap(errdefs.ErrInvalid, "wait=%q: use true or false", r.URL.Query().Get("wait")))
		return
	}
	if err := destroy(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// asyncDestroyer is a Sandboxes that can answer a destroy before its
// teardown ends (the manager's DestroyAsync).
type asyncDestroyer interface {
	DestroyAsync(ctx context.Context, id string) error
}

func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.TimeoutRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.TTLSeconds == nil {
		writeError(w, fmt.Errorf("ttl_seconds is required: %w", errdefs.ErrInvalid))
		return
	}
	ttl, err := reqcheck.Seconds("ttl_seconds", *req.TTLSeconds, 0)
	if err != nil {
		writeError(w, err)
		return
	}
	sb, err := s.sbx.SetTTL(r.Context(), id, ttl)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sandboxOut(sb))
}

// approvalWait reads an exec's approval_wait_seconds: the wait, and
// whether not to wait at all.
func approvalWait(req *wire.ExecRequest) (time.Duration, bool, error) {
	if req.ApprovalWaitSeconds == nil {
		return 0, false, nil
	}
	d, err := reqcheck.Seconds("approval_wait_seconds", *req.ApprovalWaitSeconds, sandbox.MaxApprovalWait)
	return d, err == nil && d == 0, err
}

// stream writes NDJSON events, flushed one by one.
type stream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	fl      http.Flusher
	started bool
	broken  bool
}

func (st *stream) begin() {
	if st.started {
		return
	}
	st.started = true
	st.w.Header().Set("Content-Type", "application/x-ndjson")
	st.w.WriteHeader(http.StatusOK)
}

func (st *stream) send(ev wire.Event) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.broken {
		return
	}
	st.begin()
	b, _ := json.Marshal(ev)
	b = append(b, '\n')
	if _, err := st.w.Write(b); err != nil {
		st.broken = true
		return
	}
	if st.fl != nil {
		st.fl.Flush()
	}
}

type streamWriter struct {
	st  *stream
	typ string
}

func (sw streamWriter) Write(p []byte) (int, error) {
	sw.st.send(wire.Event{Type: sw.typ, Data: append([]byte(nil), p...)})
	return len(p), nil
}

// exec runs a command: decode and check the request, then run it in the
// background (202 with its id) or streamed as NDJSON events.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.ExecRequest
	if err := decode(w, r, maxExecBody, &req); err != nil {
		writeError(w, err)
		return
	}
	mreq, err := execRequest(&req)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.Background {
		s.execBackground(w, r, id, mreq)
		return
	}
	s.execStream(w, r, id, mreq)
}

// execRequest checks an exec's wire body and makes the manager's request
// of it (Background unset: the caller decides).
func execRequest(req *wire.ExecRequest) (sandbox.ExecRequest, error) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return sandbox.ExecRequest{}, fmt.Errorf("argv must name a command: %w", errdefs.ErrInvalid)
	}
	timeout, err := reqcheck.Millis("timeout_ms", req.TimeoutMS, 0)
	if err != nil {
		return sandbox.ExecRequest{}, err
	}
	if req.OutputLimit < 0 {
		return sandbox.ExecRequest{}, fmt.Errorf("output_limit: %d must not be negative: %w", req.OutputLimit, errdefs.ErrInvalid)
	}
	wait, noWait, err := approvalWait(req)
	if err != nil {
		return sandbox.ExecRequest{}, err
	}
	var stdin io.Reader
	if req.Stdin != "" {
		b, err := base64.StdEncoding.DecodeString(req.Stdin)
		if err != nil {
			return sandbox.ExecRequest{}, fmt.Errorf("stdin is not base64: %w", errdefs.ErrInvalid)
		}
		if len(b) > MaxStdin {
			return sandbox.ExecRequest{}, fmt.Errorf("stdin is larger than %d bytes: %w", MaxStdin, errdefs.ErrLimitExceeded)
		}
		stdin = strings.NewReader(string(b))
	}
	return sandbox.ExecRequest{
		OpenStdin: req.StdinOpen, TTY: req.TTY, Rows: req.Rows, Cols: req.Cols,
		Argv: req.Argv, Env: req.Env, Cwd: req.Cwd, Timeout: timeout,
		Stdin: stdin, OutputLimit: req.OutputLimit, ApprovalWait: wait, NoWait: noWait,
	}, nil
}

// execBackground starts a command that runs on: 202 with its id and pid.
func (s *Server) execBackground(w http.ResponseWriter, r *http.Request, id string, req sandbox.ExecRequest) {
	req.Background = true
	var pid int
	execID, _, err := s.execs.Exec(r.Context(), id, req, func(_ string, p int) { pid = p }, nil, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, wire.ExecStarted{ExecID: execID, PID: pid})
}

// execStream runs a command with its events streamed: start, output,
// then exit, or an error event once started (a plain error before).
func (s *Server) execStream(w http.ResponseWriter, r *http.Request, id string, req sandbox.ExecRequest) {
	fl, _ := w.(http.Flusher)
	st := &stream{w: w, fl: fl}
	_, status, err := s.execs.Exec(r.Context(), id, req, func(execID string, pid int) {
		st.send(wire.Event{Type: wire.EventStart, ExecID: execID, PID: pid})
	}, streamWriter{st, "stdout"}, streamWriter{st, "stderr"})
	if err != nil {
		st.mu.Lock()
		started := st.started
		st.mu.Unlock()
		if !started {
			writeError(w, err) // could not start: a plain error answer
			return
		}
		st.send(wire.Event{Type: wire.EventError, Code: errdefs.Kind(err), Message: oneLine(message(err))})
		return
	}
	st.send(wire.Event{Type: wire.EventExit, Status: exitOut(status)})
}

func (s *Server) listExecs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	list, err := s.hist.Execs(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ExecList{Execs: mapAll(list, execOut)})
}

func (s *Server) output(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	stream := r.URL.Query().Get("stream")
	if stream == "" {
		stream = "stdout"
	}
	if stream != "stdout" && stream != "stderr" {
		writeError(w, fmt.Errorf("stream %q: use stdout or stderr: %w", stream, errdefs.ErrInvalid))
		return
	}
	b, err := s.hist.Output(r.Context(), id, r.PathValue("exec"), stream)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request)  { s.pauseResume(w, r, true) }
func (s *Server) resume(w http.ResponseWriter, r *http.Request) { s.pauseResume(w, r, false) }

func (s *Server) pauseResume(w http.ResponseWriter, r *http.Request, pause bool) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var sb *sandbox.Sandbox
	var err error
	if pause {
		sb, err = s.sbx.Pause(r.Context(), id)
	} else {
		sb, err = s.sbx.Resume(r.Context(), id)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sandboxOut(sb))
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	sb, err := s.sbx.Reset(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sandboxOut(sb))
}

func (s *Server) getExec(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	e, err := s.hist.GetExec(r.Context(), id, r.PathValue("exec"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, execOut(e))
}

// signalNames are the signals the API accepts by name.
var signalNames = map[string]syscall.Signal{
	"SIGKILL": syscall.SIGKILL, "SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGHUP": syscall.SIGHUP,
	"SIGQUIT": syscall.SIGQUIT, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2, "SIGSTOP": syscall.SIGSTOP, "SIGCONT": syscall.SIGCONT,
}

func (s *Server) signal(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.SignalRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	var sig syscall.Signal
	var n int
	var name string
	switch {
	case json.Unmarshal(req.Signal, &n) == nil:
		sig = syscall.Signal(n)
	case json.Unmarshal(req.Signal, &name) == nil:
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		var ok bool
		if sig, ok = signalNames[name]; !ok {
			writeError(w, fmt.Errorf("signal %q: use a number or one of SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGSTOP, SIGCONT: %w", name, errdefs.ErrInvalid))
			return
		}
	default:
		writeError(w, fmt.Errorf("signal: a number or a name is required: %w", errdefs.ErrInvalid))
		return
	}
	if err := s.execs.Running(id, r.PathValue("exec")).Signal(r.Context(), sig); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.SnapshotRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	snap, err := s.snaps.Snapshot(r.Context(), id, req.Name, isRemote(r))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, snapshotOut(snap))
}

func (s *Server) templates(w http.ResponseWriter, r *http.Request) {
	list, err := s.tpl.Templates(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.TemplateList{Templates: mapAll(list, templateOut)})
}

// importTemplate imports an image as a template. Only over the local
// socket: its source may be any path on the daemon's host, read as root.
func (s *Server) importTemplate(w http.ResponseWriter, r *http.Request) {
	if isRemote(r) {
		writeError(w, fmt.Errorf("a template import reads the daemon's host paths: the local socket only: %w", errdefs.ErrDenied))
		return
	}
	if s.images == nil {
		writeError(w, fmt.Errorf("this daemon imports no templates: %w", errdefs.ErrUnsupported))
		return
	}
	var req wire.TemplateImportRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if r.URL.Query().Get("progress") == "1" {
		s.importStreamed(w, r, req)
		return
	}
	info, digest, err := s.images.Import(r.Context(), req.Name, req.Source, req.RegistrySecret, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	out := templateOut(info)
	out.Digest = digest
	writeJSON(w, http.StatusCreated, out)
}

// importStreamed answers an import as newline-delimited JSON events: a
// line per step as it happens, then the template or the error.
func (s *Server) importStreamed(w http.ResponseWriter, r *http.Request, req wire.TemplateImportRequest) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var mu sync.Mutex
	send := func(ev wire.TemplateImportEvent) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(ev)
		_, _ = w.Write(append(b, '\n'))
		_ = rc.Flush()
	}
	info, digest, err := s.images.Import(r.Context(), req.Name, req.Source, req.RegistrySecret, func(line string) {
		send(wire.TemplateImportEvent{Progress: oneLine(line)})
	})
	if err != nil {
		send(wire.TemplateImportEvent{Error: &wire.Error{Code: errdefs.Kind(err), Message: oneLine(message(err))}})
		return
	}
	out := templateOut(info)
	out.Digest = digest
	send(wire.TemplateImportEvent{Template: &out})
}

func (s *Server) input(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.InputRequest
	if err := decode(w, r, maxExecBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.execs.Running(id, r.PathValue("exec")).Input(r.Context(), req.Data); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) closeStdin(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	if err := s.execs.Running(id, r.PathValue("exec")).CloseStdin(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) resize(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	var req wire.ResizeRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.execs.Running(id, r.PathValue("exec")).Resize(r.Context(), req.Rows, req.Cols); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
