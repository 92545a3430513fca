// Package e2b is airlock's door for the E2B SDKs: it serves the wire
// protocol of E2B's control plane (REST+JSON under /sandboxes and
// /v2/sandboxes, key in X-API-KEY) and of its in-sandbox API "envd"
// (Connect RPCs process.Process and filesystem.Filesystem with JSON
// messages, plus GET/POST /files and /health), so that code written for
// E2B runs unmodified against a self-hosted airlock by setting
// E2B_API_URL and E2B_SANDBOX_URL to this listener.
//
// It is a door, not a bypass: every call goes to the manager, so commands
// are classified and allowed, denied or held for approval, file writes
// answer to the write scope and secret-file rules, and everything lands in
// the audit record. Callers are treated as agents: a policy in a create
// request may only tighten. Approving is never possible here.
//
// Routing: with one shared sandbox URL the SDK names the sandbox in the
// E2b-Sandbox-Id header of every in-sandbox request; that request must
// carry the sandbox's access token (X-Access-Token), which create and
// connect return as envdAccessToken. Tokens are an HMAC of the sandbox id
// under a key made at daemon start. With a domain configured, the host
// <port>-<id>.<domain> names the sandbox too; signed file URLs need no
// token (route.go, signed.go).
//
// What E2B has and airlock does not (templates built from Dockerfiles,
// volumes, egress proxies and header transforms, metrics history,
// preview ports) is refused with a clear "unsupported" error,
// never silently ignored. Commands run as the sandbox's unprivileged user;
// asking for user "root" is refused. Relative paths and the default
// working directory are the sandbox user's home, as in E2B.
package e2b

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/usage"
)

// EnvdVersion is the in-sandbox API version airlock reports. The SDKs
// gate features on it: 0.5.7 has stdin close and octet-stream uploads,
// 0.6.2 file metadata (which the door refuses, loudly: files.go), 0.6.3
// watch events with their entry (includeEntry); not 0.6.4's watches of
// network mounts, which airlock has none of.
const EnvdVersion = "0.6.3"

// EnvdPort is the in-sandbox API port the SDKs name in E2b-Sandbox-Port.
const EnvdPort = "49983"

// Config wires a Server.
type Config struct {
	// Manager is the sandbox core (the daemon's *manager.Manager).
	Manager Core
	// Files is the file API (filesapi.API); nil: no file route works.
	Files Files
	// Network replaces a sandbox's network layer (sandboxnet.Net,
	// updateNetwork); nil: updateNetwork is unsupported.
	Network Networks
	// Snapshots makes and lists snapshot templates (snapshots.Snapshots:
	// createSnapshot, listSnapshots, fork); nil: they are unsupported.
	Snapshots Snapshots
	// Redactor redacts the process list (records.Records); nil: the list
	// is refused.
	Redactor Redactor
	// Keys checks the X-API-KEY of every control-plane call
	// (apikeys.Keys).
	Keys interface {
		Of(ctx context.Context, key string) (*apikeys.Key, bool)
		ByID(ctx context.Context, id string) (*apikeys.Key, bool)
		Bind(ctx context.Context, k *apikeys.Key) (context.Context, func())
	}
	// Rates bound each API key's control-plane requests (the daemon's
	// --key-rate and --key-burst, *quotas.KeyRates, shared with the REST
	// API's door); nil: no bound.
	Rates interface {
		Allow(id string) (ok bool, wait time.Duration)
		Limit() (perSecond float64, burst int)
	}
	// Owners finds the project of a sandbox (projects.Projects): a key
	// reaches only its project's sandboxes, another's is not found. nil:
	// a key reaches no sandbox by its id.
	Owners interface {
		OwnerOf(ctx context.Context, kind tenant.Kind, id string) (string, error)
	}
	// DefaultTemplate is the template E2B's default name "base" (and an
	// empty templateID) stands for; "": "host".
	DefaultTemplate string
	// ApprovalWait bounds how long a held command waits for a human before
	// its Start call fails (0: 50s, under the SDKs' 60s request timeout).
	ApprovalWait time.Duration
	// Domain, if set, is the E2B domain of sandbox hosts: a request for
	// <port>-<id>.<Domain> is routed to sandbox id (route.go), and
	// create and connect answer it as the sandbox's domain.
	Domain string
	// Usage reads a sandbox's metrics and tells a sandbox killed under a
	// running command (internal/usage); nil: metrics are refused.
	Usage Usage
	// KeepaliveMax caps the interval of keepalive events in streams.
	KeepaliveMax time.Duration
	Logf         func(format string, args ...any)
}

// Server is the E2B door's http.Handler.
type Server struct {
	cfg      Config
	sbx      Sandboxes
	execs    Execs
	red      Redactor
	fs       Files
	usage    Usage
	tokenKey []byte
	mux      *http.ServeMux // control plane
	envd     *http.ServeMux // in-sandbox API

	mu    sync.Mutex
	procs map[procKey]*proc

	// netMu guards nets, what GET shows of the door's sandboxes'
	// networks (update.go), and serializes network updates.
	netMu sync.Mutex
	nets  map[string]*netView

	wmu      sync.Mutex
	watchers map[string]*pollWatch // the polled directory watchers, by id

	lifes  lifecycles // what the door's creates asked of their timeout (lifecycle.go)
	handed handed     // the keys each sandbox's access token was handed to (tokens.go)

	// routes and envdPatterns are the patterns registered (Routes).
	routes, envdPatterns []string
}

// Routes lists the patterns of the control plane's routes and of the
// in-sandbox API's, as registered: the isolation tests cover each, and
// fail for one added without being covered.
func (s *Server) Routes() (control, envd []string) {
	return append([]string(nil), s.routes...), append([]string(nil), s.envdPatterns...)
}

// handleEnvd registers an in-sandbox API route. Every one is reached
// only through serveEnvd: the sandbox's access token, then the sandbox's
// project's agent as the principal.
func (s *Server) handleEnvd(pattern string, h http.HandlerFunc) {
	s.envdPatterns = append(s.envdPatterns, pattern)
	s.envd.HandleFunc(pattern, h)
}

// New returns the handler.
func New(cfg Config) *Server {
	if cfg.DefaultTemplate == "" {
		cfg.DefaultTemplate = "host"
	}
	if cfg.ApprovalWait <= 0 {
		cfg.ApprovalWait = 50 * time.Second
	}
	if cfg.KeepaliveMax <= 0 {
		cfg.KeepaliveMax = 50 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Files == nil {
		cfg.Files = noFiles{}
	}
	if u, typed := cfg.Usage.(*usage.Usage); cfg.Usage == nil || typed && u == nil {
		// (a nil module would call every command's abnormal end a kill)
		cfg.Usage = noUsage{}
	}
	if cfg.Redactor == nil {
		cfg.Redactor = noRedactor{}
	}
	s := &Server{cfg: cfg, sbx: cfg.Manager, execs: cfg.Manager, red: cfg.Redactor, fs: cfg.Files, usage: cfg.Usage, tokenKey: make([]byte, 32), mux: http.NewServeMux(), envd: http.NewServeMux(), procs: map[procKey]*proc{}, nets: map[string]*netView{}, watchers: map[string]*pollWatch{}}
	_, _ = rand.Read(s.tokenKey)
	s.controlRoutes()
	s.snapshotRoutes()
	s.metricsRoutes()
	s.envdRoutes()
	return s
}

// ServeHTTP routes a request to a sandbox's in-sandbox API (by header,
// host or signature: route.go) or else to the control plane (API key).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.route(w, r) {
		return
	}
	key := r.Header.Get("X-API-KEY")
	var k *apikeys.Key
	ok := false
	if s.cfg.Keys != nil { // none: no key is valid
		k, ok = s.cfg.Keys.Of(r.Context(), key)
	}
	if key == "" || !ok {
		writeAPIError(w, http.StatusUnauthorized, "a valid API key is required in X-API-KEY (create one with 'airlock apikey create --e2b --project P --name NAME')")
		return
	}
	if s.cfg.Rates != nil {
		if ok, wait := s.cfg.Rates.Allow(k.ID); !ok {
			s.rateLimited(w, wait)
			return
		}
	}
	// A revoked key ends its requests in progress; the key's project and
	// role are the caller's (tenant).
	ctx, done := s.cfg.Keys.Bind(r.Context(), k)
	defer done()
	ctx = sandbox.WithActor(tenant.With(ctx, k.Principal()), "apikey:"+k.ID)
	s.mux.ServeHTTP(w, r.WithContext(ctx))
}

// handle registers a control-plane route; one whose path names a
// sandbox ({id}) is answered as for a sandbox that does not exist when
// the sandbox is another project's.
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.routes = append(s.routes, pattern)
	if !strings.Contains(pattern, "/sandboxes/{id}") {
		s.mux.HandleFunc(pattern, h)
		return
	}
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !s.owns(r.Context(), id) {
			writeAPIError(w, http.StatusNotFound, fmt.Sprintf("sandbox %q: not found", id))
			return
		}
		h(w, r)
	})
}

// owns says whether the caller of ctx may reach sandbox id.
func (s *Server) owns(ctx context.Context, id string) bool {
	p := tenant.Of(ctx)
	if p.IsOperator() {
		return true
	}
	if s.cfg.Owners == nil {
		return false
	}
	project, err := s.cfg.Owners.OwnerOf(ctx, tenant.Sandbox, id)
	return err == nil && p.Sees(project)
}

type sandboxKey struct{}

func sandboxOf(r *http.Request) string {
	v, _ := r.Context().Value(sandboxKey{}).(string)
	return v
}

func (s *Server) serveEnvd(w http.ResponseWriter, r *http.Request, id string) {
	if p := r.Header.Get("E2b-Sandbox-Port"); p != "" && p != EnvdPort {
		writeEnvdError(w, r, http.StatusBadGateway, codeUnavailable, fmt.Sprintf("port %s of sandbox %s: only the in-sandbox API (port %s) is served; airlock has no preview ports yet (getHost)", p, id, EnvdPort))
		return
	}
	keyID, ok := s.authEnvd(w, r, id)
	if !ok {
		return
	}
	if err := checkUser(r); err != nil {
		writeEnvdError(w, r, http.StatusForbidden, codePermissionDenied, err.Error())
		return
	}
	ctx, done, ok := s.envdCaller(r.Context(), keyID)
	if !ok {
		writeEnvdError(w, r, http.StatusUnauthorized, codeUnauthenticated, "the API key this access token was made for is no longer valid (revoked or expired): connect with a valid key for a new token")
		return
	}
	defer done()
	r = r.WithContext(context.WithValue(ctx, sandboxKey{}, id))
	if !s.awake(w, r, id) { // a paused sandbox: resumed, or answered as E2B's
		return
	}
	s.envd.ServeHTTP(w, r)
}

// envdCaller is the context of an in-sandbox API call made with a token
// handed to key keyID: that key's principal and actor, ended when the key
// is revoked (done releases it). A door with no keys (its own tests) has
// tokens of no key, the operator's. false: the key is no longer valid.
func (s *Server) envdCaller(ctx context.Context, keyID string) (context.Context, func(), bool) {
	if keyID == "" {
		// never handed by a door with keys: its control plane has none
		return sandbox.WithActor(ctx, "operator"), func() {}, s.cfg.Keys == nil
	}
	if s.cfg.Keys == nil {
		return nil, nil, false
	}
	k, ok := s.cfg.Keys.ByID(ctx, keyID)
	if !ok {
		return nil, nil, false
	}
	ctx, done := s.cfg.Keys.Bind(ctx, k)
	return sandbox.WithActor(tenant.With(ctx, k.Principal()), "apikey:"+k.ID), done, true
}

// checkUser checks the user a request asks to act as (HTTP Basic user
// name, or the files calls' username parameter): only the sandbox user.
func checkUser(r *http.Request) error {
	names := []string{r.URL.Query().Get("username")}
	if u, _, ok := r.BasicAuth(); ok {
		names = append(names, u)
	}
	for _, n := range names {
		switch n {
		case "", UserName:
		default:
			return fmt.Errorf("user %q: airlock runs every command and file operation as the sandbox's unprivileged user %q (home %s); other users, root included, are not available: there is no root and no sudo in an airlock sandbox", n, UserName, Home)
		}
	}
	return nil
}

// writeAPIError answers a control-plane call with E2B's error shape.
// rateLimited answers a key past its rate in E2B's error shape (429 is
// what the SDKs raise as a RateLimitError), with when to try again.
func (s *Server) rateLimited(w http.ResponseWriter, wait time.Duration) {
	secs := max(1, int64(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	per, burst := s.cfg.Rates.Limit()
	writeAPIError(w, http.StatusTooManyRequests, fmt.Sprintf("rate limited: this API key sent more than %g requests a second (%d at once; airlock serve --key-rate, --key-burst): retry in %d s", per, burst, secs))
}

func writeAPIError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"code": status, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeEnvdError answers an in-sandbox request: Connect calls get a
// Connect error, plain HTTP calls E2B's {code,message}.
func writeEnvdError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/connect+json"):
		st := newStream(w)
		st.end(&rpcError{Code: code, Message: msg})
	case isProcedure(r.URL.Path):
		writeUnary(w, nil, &rpcError{Code: code, Message: msg})
	default:
		writeAPIError(w, status, msg)
	}
}

// isProcedure says whether path names a Connect procedure
// ("/package.Service/Method").
func isProcedure(path string) bool {
	svc, method, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return ok && strings.Contains(svc, ".") && method != "" && !strings.Contains(method, "/")
}

// apiStatus maps a manager error to an HTTP status for the control plane.
func apiStatus(err error) int {
	switch errdefs.Kind(err) {
	case "invalid":
		return http.StatusBadRequest
	case "not_found":
		return http.StatusNotFound
	case "conflict":
		return http.StatusConflict
	case "denied", "pending":
		return http.StatusForbidden
	case "limit_exceeded":
		return http.StatusTooManyRequests
	case "unsupported":
		return http.StatusNotImplemented
	case "timeout":
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// rpcCode maps a manager error to a Connect code.
func rpcCode(err error) string {
	var pe *sandbox.PolicyError
	if errors.As(err, &pe) {
		return codePermissionDenied
	}
	switch errdefs.Kind(err) {
	case "invalid":
		return codeInvalidArgument
	case "not_found":
		return codeNotFound
	case "conflict":
		return codeFailedPrecond
	case "denied", "pending":
		return codePermissionDenied
	case "limit_exceeded":
		return codeResourceExhaust
	case "unsupported":
		return codeUnimplemented
	case "timeout":
		return codeDeadlineExceeded
	}
	if errors.Is(err, context.Canceled) {
		return codeCanceled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return codeDeadlineExceeded
	}
	return codeInternal
}

func rpcErr(err error) *rpcError {
	return &rpcError{Code: rpcCode(err), Message: oneLine(err.Error())}
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 2000 {
		s = s[:2000] + "..."
	}
	return s
}

// noFiles is a door without the file API: no file route works.
type noFiles struct{}

func (noFiles) AgentFiles(context.Context, string) (runtime.Files, error) {
	return nil, fmt.Errorf("this daemon has no file API: %w", errdefs.ErrUnsupported)
}

// noRedactor is a door without the exec records module: what a client
// once sent is never answered unredacted.
type noRedactor struct{}

func (noRedactor) RedactedJSON(any) (json.RawMessage, error) {
	return nil, fmt.Errorf("this door cannot redact what it would answer: %w", errdefs.ErrUnsupported)
}
