package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/reqcheck"
)

func (s *Server) controlRoutes() {
	s.handle("POST /sandboxes", s.create)
	s.handle("POST /v2/sandboxes", s.create)
	s.handle("GET /sandboxes", s.list)
	s.handle("GET /v2/sandboxes", s.list)
	s.handle("GET /sandboxes/{id}", s.get)
	s.handle("DELETE /sandboxes/{id}", s.kill)
	s.handle("POST /sandboxes/{id}/timeout", s.setTimeout)
	s.handle("POST /sandboxes/{id}/pause", s.pause)
	s.handle("POST /sandboxes/{id}/connect", s.connect)
	s.handle("POST /v2/sandboxes/{id}/connect", s.connect)
	s.handle("POST /sandboxes/{id}/resume", s.connect)
	s.handle("PUT /sandboxes/{id}/network", s.updateNetwork)
	s.handle("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, http.StatusNotImplemented, fmt.Sprintf("unsupported: airlock's E2B-compatible API does not serve %s %s", r.Method, r.URL.Path))
	})
}

// sandboxDetail is E2B's sandbox object (create, connect, get, list).
type sandboxDetail struct {
	SandboxID       string            `json:"sandboxID"`
	TemplateID      string            `json:"templateID"`
	Alias           string            `json:"alias,omitempty"`
	ClientID        string            `json:"clientID"`
	EnvdVersion     string            `json:"envdVersion"`
	EnvdAccessToken string            `json:"envdAccessToken,omitempty"`
	StartedAt       *time.Time        `json:"startedAt,omitempty"`
	EndAt           *time.Time        `json:"endAt,omitempty"`
	CPUCount        int               `json:"cpuCount,omitempty"`
	MemoryMB        int64             `json:"memoryMB,omitempty"`
	DiskSizeMB      int64             `json:"diskSizeMB,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	State           string            `json:"state,omitempty"`
	// Domain is where the sandbox's hosts are (Config.Domain): the SDKs
	// reach https://<port>-<id>.<domain> when no E2B_SANDBOX_URL is set.
	Domain string `json:"domain,omitempty"`
	// AllowInternetAccess and Network are what the sandbox's create or
	// last updateNetwork asked for (GET only, as on E2B).
	AllowInternetAccess *bool        `json:"allowInternetAccess,omitempty"`
	Network             *networkInfo `json:"network,omitempty"`
	// Lifecycle is what its timeout's end does (GET only, as on E2B).
	Lifecycle *lifecycleInfo `json:"lifecycle,omitempty"`
}

// clientID names airlock in E2B's clientID field.
const clientID = "airlock"

// withToken is d with sandbox's access token, handed to the caller of
// ctx's key (tokens.go).
func (s *Server) withToken(ctx context.Context, d *sandboxDetail) *sandboxDetail {
	d.EnvdAccessToken = s.handTo(ctx, d.SandboxID)
	return d
}

// detail is what the door shows of sb (no access token: withToken).
func (s *Server) detail(sb *sandbox.Sandbox, full bool) *sandboxDetail {
	d := &sandboxDetail{SandboxID: sb.ID, TemplateID: sb.Template, ClientID: clientID, EnvdVersion: EnvdVersion, Domain: s.cfg.Domain}
	if !full {
		return d
	}
	created := sb.Created
	d.StartedAt, d.EndAt = &created, sb.Expires
	d.Metadata = sb.Labels
	if d.Metadata == nil {
		d.Metadata = map[string]string{}
	}
	d.State = sb.State
	d.CPUCount = goruntime.NumCPU()
	if c := sb.Limits.CPUs; c > 0 {
		d.CPUCount = int(c + 0.999)
	}
	d.MemoryMB = sb.Limits.MemoryBytes >> 20
	d.DiskSizeMB = sb.Limits.DiskBytes >> 20
	return d
}

// decodeBody reads a JSON body, refusing fields airlock does not know:
// an option the caller counts on is never dropped in silence.
func decodeBody(r io.Reader, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if len(body) > 1<<20 {
		return fmt.Errorf("request body over 1 MiB: %w", errdefs.ErrInvalid)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: %v (airlock refuses what it would otherwise ignore): %w", err, errdefs.ErrInvalid)
	}
	if dec.More() {
		return fmt.Errorf("request body: more than one JSON value: %w", errdefs.ErrInvalid)
	}
	return nil
}

// createRequest is E2B's create body. Options airlock does not have are
// decoded only to refuse them when set.
type createRequest struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	Secure              *bool             `json:"secure"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             json.RawMessage   `json:"network"`
	AutoPause           *bool             `json:"autoPause"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory"`
	AutoResume          json.RawMessage   `json:"autoResume"`
	VolumeMounts        json.RawMessage   `json:"volumeMounts"`
	MCP                 json.RawMessage   `json:"mcp"`
	IAM                 json.RawMessage   `json:"iam"`
}

func isSet(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t != "" && t != "null" && t != "{}"
}

// unsupported names an option of the request airlock cannot honour.
func (c *createRequest) unsupported() string {
	switch {
	case isSet(c.VolumeMounts):
		return "volumeMounts: airlock has no volumes"
	case isSet(c.MCP):
		return "mcp: airlock runs no MCP gateway in the sandbox (use 'airlock mcp')"
	case isSet(c.IAM):
		return "iam: airlock brokers secrets through its own policy"
	}
	return ""
}

// parseCreate decodes E2B's create body into airlock's request, refusing
// options airlock does not have and a timeout that is negative or would
// wrap (a bad request, never an unbounded sandbox).
func parseCreate(body io.Reader, defaultTemplate string) (sandbox.CreateRequest, error) {
	cr, _, _, err := parseCreateView(body, defaultTemplate)
	return cr, err
}

// parseCreateView is parseCreate, with what GET shows of the network
// (nil: nothing) and the lifecycle asked for (lifecycle.go).
func parseCreateView(body io.Reader, defaultTemplate string) (sandbox.CreateRequest, *netView, lifecycle, error) {
	var req createRequest
	if err := decodeBody(body, &req); err != nil {
		return sandbox.CreateRequest{}, nil, lifecycle{}, err
	}
	if u := req.unsupported(); u != "" {
		return sandbox.CreateRequest{}, nil, lifecycle{}, fmt.Errorf("unsupported by airlock: %s: %w", u, errdefs.ErrInvalid)
	}
	life, err := parseLifecycle(&req)
	if err != nil {
		return sandbox.CreateRequest{}, nil, lifecycle{}, err
	}
	cr, view, err := createOf(&req, defaultTemplate)
	if err != nil {
		return sandbox.CreateRequest{}, nil, lifecycle{}, err
	}
	cr.PauseOnExpiry = life.pause
	life.ttl = time.Duration(cr.TTLSeconds) * time.Second
	return cr, view, life, nil
}

// createOf is airlock's request for E2B's create body (its lifecycle
// aside).
func createOf(req *createRequest, defaultTemplate string) (sandbox.CreateRequest, *netView, error) {
	tpl := req.TemplateID
	if tpl == "" || tpl == "base" {
		tpl = defaultTemplate
	}
	cr := sandbox.CreateRequest{Template: tpl, Labels: req.Metadata, TightenOnly: true, User: sandboxUser}
	// allow_internet_access true is every SDK's default, not a request:
	// the sandbox's egress is airlock's policy. false is stricter, and
	// honoured by a layer that denies all egress; network rules are a
	// layer that only tightens (network.go).
	// The layer is the sandbox's network layer, which updateNetwork
	// replaces (update.go).
	noInternet := req.AllowInternetAccess != nil && !*req.AllowInternetAccess
	var n *networkRequest
	if isSet(req.Network) {
		var err error
		if n, err = parseNetwork(req.Network); err != nil {
			return sandbox.CreateRequest{}, nil, err
		}
	}
	layer, err := doorLayer(n, noInternet)
	if err != nil {
		return sandbox.CreateRequest{}, nil, err
	}
	cr.NetworkLayer = layer
	if req.Timeout != nil {
		if _, err := reqcheck.Seconds("timeout", *req.Timeout, 0); err != nil {
			return sandbox.CreateRequest{}, nil, err
		}
		cr.TTLSeconds = *req.Timeout
	}
	if err := reqcheck.Labels(req.Metadata); err != nil {
		return sandbox.CreateRequest{}, nil, fmt.Errorf("metadata: %w", err)
	}
	keys := make([]string, 0, len(req.EnvVars))
	for k := range req.EnvVars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cr.Env = append(cr.Env, k+"="+req.EnvVars[k])
	}
	return cr, viewOf(n, req.AllowInternetAccess), nil
}

// noEgressRule names the layer of allow_internet_access: false.
const noEgressRule = "e2b-no-internet-access"

// noEgress is a policy layer that allows no egress at all: no grants,
// and a deny rule (every port) over every address, which wins over any
// allow rule or preset of the daemon's policy.
func noEgress() *netpolicy.Policy {
	return &netpolicy.Policy{
		Grant: []netpolicy.Category{},
		Rules: []netpolicy.Rule{{ID: noEgressRule, Action: netpolicy.Deny, CIDRs: []string{"0.0.0.0/0", "::/0"}}},
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	cr, view, life, err := parseCreateView(r.Body, s.cfg.DefaultTemplate)
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	sb, err := s.sbx.Create(r.Context(), cr)
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	s.setView(sb.ID, view)
	s.lifes.set(sb.ID, life)
	writeJSON(w, http.StatusCreated, s.withToken(r.Context(), s.detail(sb, false)))
}

// live returns a sandbox that has not stopped; a stopped or unknown one
// is E2B's 404.
func (s *Server) live(w http.ResponseWriter, r *http.Request) (*sandbox.Sandbox, bool) {
	id := r.PathValue("id")
	sb, err := s.sbx.Get(r.Context(), id)
	if err == nil && sb.State == "stopped" {
		err = fmt.Errorf("sandbox %s has stopped (%s): %w", id, sb.StopReason, errdefs.ErrNotFound)
	}
	if err != nil {
		if errdefs.Kind(err) == "not_found" {
			s.forget(id)
		}
		writeAPIError(w, apiStatus(err), err.Error())
		return nil, false
	}
	return sb, true
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	sb, ok := s.live(w, r)
	if !ok {
		return
	}
	d := s.withToken(r.Context(), s.detail(sb, true))
	s.showNetwork(d)
	d.Lifecycle = s.lifes.of(sb.ID).info()
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.live(w, r); !ok {
		return
	}
	if err := s.sbx.Destroy(r.Context(), r.PathValue("id")); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	s.forget(r.PathValue("id"))
	w.WriteHeader(http.StatusNoContent)
}

type timeoutRequest struct {
	Timeout *int64 `json:"timeout"`
	Memory  *bool  `json:"memory"`
}

func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request) {
	var req timeoutRequest
	if err := decodeBody(r.Body, &req); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	if req.Timeout == nil {
		writeAPIError(w, http.StatusBadRequest, "timeout (seconds, not negative) is required")
		return
	}
	ttl, err := reqcheck.Seconds("timeout", *req.Timeout, 0)
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	if _, ok := s.live(w, r); !ok {
		return
	}
	if _, err := s.sbx.SetTTL(r.Context(), r.PathValue("id"), ttl); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	var req timeoutRequest
	if err := decodeBody(r.Body, &req); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	if req.Memory != nil && !*req.Memory {
		writeAPIError(w, http.StatusBadRequest, "unsupported by airlock: a pause without memory; airlock freezes the sandbox and keeps its memory")
		return
	}
	sb, ok := s.live(w, r)
	if !ok {
		return
	}
	if sb.State == "paused" {
		writeAPIError(w, http.StatusConflict, fmt.Sprintf("sandbox %s is already paused", sb.ID))
		return
	}
	if _, err := s.sbx.Pause(r.Context(), sb.ID); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// connect resumes a paused sandbox (201) or connects to a running one
// (200). A timeout given only ever extends the sandbox's life, as E2B's
// does: older SDKs send timeout 300 on every connect.
func (s *Server) connect(w http.ResponseWriter, r *http.Request) {
	var req timeoutRequest
	if err := decodeBody(r.Body, &req); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	if req.Memory != nil && !*req.Memory {
		writeAPIError(w, http.StatusBadRequest, "unsupported by airlock: resuming with a reboot; a paused airlock sandbox resumes where it stopped")
		return
	}
	var ttl time.Duration
	if req.Timeout != nil {
		var err error
		if ttl, err = reqcheck.Seconds("timeout", *req.Timeout, 0); err != nil {
			writeAPIError(w, apiStatus(err), err.Error())
			return
		}
	}
	sb, ok := s.live(w, r)
	if !ok {
		return
	}
	status := http.StatusOK
	if sb.State == "paused" {
		var err error
		if sb, err = s.sbx.Resume(r.Context(), sb.ID); err != nil && !errors.Is(err, errdefs.ErrConflict) {
			writeAPIError(w, apiStatus(err), err.Error())
			return
		}
		status = http.StatusCreated
	}
	if sb == nil { // resumed meanwhile by another call
		var err error
		if sb, err = s.sbx.Get(r.Context(), r.PathValue("id")); err != nil {
			writeAPIError(w, apiStatus(err), err.Error())
			return
		}
	}
	// A resume sets the timeout given, as E2B's does; a connect to a
	// running sandbox only ever extends it.
	if req.Timeout != nil && (status == http.StatusCreated || extends(sb, ttl)) {
		var err error
		if sb, err = s.sbx.SetTTL(r.Context(), sb.ID, ttl); err != nil {
			writeAPIError(w, apiStatus(err), err.Error())
			return
		}
	}
	writeJSON(w, status, s.withToken(r.Context(), s.detail(sb, false)))
}

// extends reports whether a timeout of ttl from now ends sandbox sb
// later than it ends now (a sandbox without an end never shortens; a
// ttl of 0, "no timeout", always extends one with an end).
func extends(sb *sandbox.Sandbox, ttl time.Duration) bool {
	if sb.Expires == nil {
		return false
	}
	return ttl == 0 || time.Now().Add(ttl).After(*sb.Expires)
}

// list answers GET /v2/sandboxes (and the older GET /sandboxes):
// running and paused sandboxes, filtered by state, metadata, start time
// and template, newest first unless order=asc, paged by limit and
// nextToken. A parameter it cannot apply is a 400, never ignored.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	lq, msg := parseListQuery(r.URL.Query(), s.cfg.DefaultTemplate)
	if msg != "" {
		writeAPIError(w, http.StatusBadRequest, msg)
		return
	}
	var all []*sandbox.Sandbox
	for _, st := range []string{"running", "paused"} {
		l, err := s.sbx.List(r.Context(), st)
		if err != nil {
			writeAPIError(w, apiStatus(err), err.Error())
			return
		}
		all = append(all, l...)
	}
	keep := map[string]bool{}
	for _, sb := range all {
		keep[sb.ID] = true
	}
	s.pruneViews(keep)
	s.lifes.prune(keep)
	s.handed.prune(keep)
	sortByStart(all, lq.asc)
	out := []*sandboxDetail{}
	for _, sb := range all {
		if lq.matches(sb) {
			d := s.detail(sb, true)
			out = append(out, d)
		}
	}
	start := min(lq.start, len(out))
	page := out[start:]
	if len(page) > lq.limit {
		page = page[:lq.limit]
		w.Header().Set("X-Next-Token", strconv.Itoa(start+lq.limit))
	}
	writeJSON(w, http.StatusOK, page)
}

// sortByStart orders sandboxes by start time (ties by id), oldest first
// when asc, else newest first.
func sortByStart(all []*sandbox.Sandbox, asc bool) {
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if !asc {
			a, b = b, a
		}
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return a.ID < b.ID
	})
}

// listQuery is what a list asks for: states (none: both), metadata to
// match, the earliest start, the template, the order and the page.
type listQuery struct {
	states       map[string]bool
	meta         url.Values
	after        time.Time
	template     string
	asc          bool
	limit, start int
}

// listParams are the list parameters airlock applies; any other is
// refused.
var listParams = map[string]bool{"state": true, "metadata": true, "startedAfter": true, "template": true, "order": true, "limit": true, "nextToken": true}

// parseListQuery reads a list's query, or says (msg) why it is a bad
// request. defaultTemplate is what "base" stands for.
func parseListQuery(q url.Values, defaultTemplate string) (lq listQuery, msg string) {
	lq = listQuery{states: map[string]bool{}, limit: 100}
	for k := range q {
		if !listParams[k] {
			return lq, fmt.Sprintf("unsupported by airlock: list filter %q (airlock applies state, metadata, startedAfter, template, order, limit, nextToken)", k)
		}
	}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			switch st = strings.TrimSpace(st); st {
			case "running", "paused":
				lq.states[st] = true
			case "":
			default:
				return lq, fmt.Sprintf("state %q: running or paused", st)
			}
		}
	}
	if v := q.Get("metadata"); v != "" {
		var err error
		if lq.meta, err = url.ParseQuery(v); err != nil {
			return lq, "metadata: key=value pairs joined by &, URL-encoded"
		}
	}
	if msg := lq.parseFilters(q, defaultTemplate); msg != "" {
		return lq, msg
	}
	return lq, lq.parsePage(q)
}

// parseFilters reads startedAfter, template and order.
func (lq *listQuery) parseFilters(q url.Values, defaultTemplate string) string {
	if v := q.Get("startedAfter"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return "startedAfter: an RFC 3339 time (2006-01-02T15:04:05Z)"
		}
		lq.after = t
	}
	if lq.template = q.Get("template"); lq.template == "base" {
		lq.template = defaultTemplate
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		lq.asc = true
	default:
		return "order: asc or desc"
	}
	return ""
}

// parsePage reads limit and nextToken.
func (lq *listQuery) parsePage(q url.Values) string {
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return "limit: 1 to 1000"
		}
		lq.limit = n
	}
	if v := q.Get("nextToken"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return "nextToken: use the X-Next-Token of the previous page"
		}
		lq.start = n
	}
	return ""
}

// matches reports whether a listed sandbox is one the query asks for.
func (lq listQuery) matches(sb *sandbox.Sandbox) bool {
	if sb.State == "stopped" || (len(lq.states) > 0 && !lq.states[sb.State]) {
		return false
	}
	if sb.Created.Before(lq.after) || (lq.template != "" && sb.Template != lq.template) {
		return false
	}
	for k, vs := range lq.meta {
		if got, ok := sb.Labels[k]; !ok || got != vs[0] {
			return false
		}
	}
	return true
}
