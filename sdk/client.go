package sdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/wire"
)

// DefaultSocket is the daemon's socket when neither WithSocket nor
// $AIRLOCK_SOCKET says otherwise.
const DefaultSocket = "/run/airlock/airlock.sock"

// SocketEnv names the environment variable that overrides DefaultSocket.
const SocketEnv = "AIRLOCK_SOCKET"

// Error codes, as the API sends them (Error.Code).
const (
	CodeInvalid       = wire.CodeInvalid
	CodeNotFound      = wire.CodeNotFound
	CodeConflict      = wire.CodeConflict
	CodeDenied        = wire.CodeDenied
	CodeLimitExceeded = wire.CodeLimitExceeded
	CodeUnsupported   = wire.CodeUnsupported
	CodeInternal      = wire.CodeInternal
	// The policy's refusals: a command denied by policy or by a human, one
	// held for approval (not waited for), one not approved in time.
	CodePolicyDenied    = wire.CodePolicyDenied
	CodeApprovalDenied  = wire.CodeApprovalDenied
	CodeApprovalPending = wire.CodeApprovalPending
	CodeApprovalTimeout = wire.CodeApprovalTimeout
)

// Error is an error answered by the daemon, or a request the client
// refused to send.
type Error struct {
	// Status is the HTTP status. For an error event inside an exec stream
	// it is the status the code stands for (404 for not_found, ...); it is
	// 0 when the client itself refused the request.
	Status int
	// Code is one of the Code* constants. When the daemon's answer had no
	// code (a proxy's page, say), it is derived from Status.
	Code string
	// Message is one line, safe to show.
	Message string
	// Rules names the policy rules that stopped a command; ApprovalID the
	// approval it is held for (or was refused by).
	Rules      []string
	ApprovalID string
	// Quota is the quota a quota_exceeded answer names, with the
	// project's usage of it (nil otherwise).
	Quota *wire.QuotaHit
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

func isCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsNotFound reports whether err is a not_found error (an unknown sandbox
// or exec, a missing command).
func IsNotFound(err error) bool { return isCode(err, CodeNotFound) }

// IsConflict reports whether err is a conflict error (wrong state, already
// exists).
func IsConflict(err error) bool { return isCode(err, CodeConflict) }

// IsInvalid reports whether err is an invalid error (a bad request).
func IsInvalid(err error) bool { return isCode(err, CodeInvalid) }

// IsDenied reports whether err is a denied error (policy, authentication).
func IsDenied(err error) bool { return isCode(err, CodeDenied) }

// IsLimitExceeded reports whether err is a limit_exceeded error (a quota or
// a size limit).
func IsLimitExceeded(err error) bool { return isCode(err, CodeLimitExceeded) }

// IsUnsupported reports whether err is an unsupported error.
func IsUnsupported(err error) bool { return isCode(err, CodeUnsupported) }

// IsPolicyDenied reports whether the policy, or a human asked by it,
// refused a command.
func IsPolicyDenied(err error) bool {
	return isCode(err, CodePolicyDenied) || isCode(err, CodeApprovalDenied)
}

// IsApprovalPending reports whether a command is held for a human; the
// error's ApprovalID names the approval.
func IsApprovalPending(err error) bool { return isCode(err, CodeApprovalPending) }

// IsApprovalTimeout reports whether a held command was not approved in
// time.
func IsApprovalTimeout(err error) bool { return isCode(err, CodeApprovalTimeout) }

func invalidf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

var statusCodes = map[int]string{
	http.StatusBadRequest:            CodeInvalid,
	http.StatusUnauthorized:          CodeDenied,
	http.StatusForbidden:             CodeDenied,
	http.StatusNotFound:              CodeNotFound,
	http.StatusConflict:              CodeConflict,
	http.StatusRequestEntityTooLarge: CodeLimitExceeded,
	http.StatusTooManyRequests:       CodeLimitExceeded,
	http.StatusNotImplemented:        CodeUnsupported,
	http.StatusRequestTimeout:        CodeApprovalTimeout,
}

func codeStatus(code string) int {
	for s, c := range statusCodes {
		if c == code && s != http.StatusUnauthorized && s != http.StatusRequestEntityTooLarge {
			return s
		}
	}
	return http.StatusInternalServerError
}

// Option configures a Client.
type Option func(*options)

type options struct {
	socket  string
	baseURL string
	apiKey  string
	actor   string
	hc      *http.Client
	timeout time.Duration
}

// WithSocket talks to the daemon on the unix socket at path (default
// $AIRLOCK_SOCKET, else DefaultSocket).
func WithSocket(path string) Option { return func(o *options) { o.socket = path } }

// WithBaseURL talks to the daemon over TCP at u ("https://host:port"),
// instead of a unix socket. The API's /v1 paths are appended to u.
func WithBaseURL(u string) Option { return func(o *options) { o.baseURL = u } }

// WithActor names the person behind the requests (X-Airlock-Actor), for
// the record of approvals and overrides made on the unix socket.
func WithActor(name string) Option { return func(o *options) { o.actor = name } }

type clientKey struct{}

// ClientHeader carries ViaClient's name on a request.
const ClientHeader = wire.ClientHeader

// ViaClient returns ctx naming the program the calls made with it come
// through (an MCP client's "name/version"), sent as ClientHeader and
// added to the daemon's record of each call next to the actor. The name
// is asserted, not authenticated; it is cleaned as wire.CleanClient does
// (control and format characters dropped, at most wire.MaxClient bytes),
// and "" after cleaning names none.
func ViaClient(ctx context.Context, name string) context.Context {
	if name = wire.CleanClient(name); name == "" {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, name)
}

// ClientName is the name ViaClient put on ctx, "" if none.
func ClientName(ctx context.Context) string {
	c, _ := ctx.Value(clientKey{}).(string)
	return c
}

// WithAPIKey sends "Authorization: Bearer key" with every request.
func WithAPIKey(key string) Option { return func(o *options) { o.apiKey = key } }

// WithHTTPClient sends every request with hc. If hc.Transport is nil, a
// copy of hc gets the client's own transport (the unix socket, or TCP with
// WithBaseURL); otherwise hc's transport is used as is.
func WithHTTPClient(hc *http.Client) Option { return func(o *options) { o.hc = hc } }

// WithTimeout bounds each call: a call that has not finished after d fails.
// For Exec it bounds only the wait for the daemon's answer, not the output
// stream, which ExecRequest.Timeout and the context bound. 0 (the default):
// only the context bounds a call.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Client talks to an airlock daemon. It is safe for concurrent use.
type Client struct {
	hc      *http.Client
	base    string // scheme://host[/prefix], no trailing slash
	where   string // the socket path or base URL, for messages
	apiKey  string
	actor   string
	timeout time.Duration
}

// New makes a Client. It does not contact the daemon; call Health for that.
func New(opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.timeout < 0 {
		return nil, fmt.Errorf("sdk: negative timeout %s", o.timeout)
	}
	if o.baseURL != "" && o.socket != "" {
		return nil, errors.New("sdk: WithSocket and WithBaseURL exclude each other")
	}
	if strings.ContainsAny(o.apiKey, "\r\n") {
		return nil, errors.New("sdk: the API key contains a line break")
	}
	c := &Client{apiKey: o.apiKey, actor: o.actor, timeout: o.timeout}
	var tr *http.Transport
	if o.baseURL != "" {
		u, err := url.Parse(o.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("sdk: base URL %q: want http(s)://host[:port][/prefix]", o.baseURL)
		}
		c.base = strings.TrimRight(o.baseURL, "/")
		c.where = c.base
		tr = http.DefaultTransport.(*http.Transport).Clone()
		dial := tr.DialContext
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, &dialError{where: c.where, err: err}
			}
			return conn, nil
		}
	} else {
		path := o.socket
		if path == "" {
			path = os.Getenv(SocketEnv)
		}
		if path == "" {
			path = DefaultSocket
		}
		c.base = "http://airlock"
		c.where = path
		tr = &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				conn, err := d.DialContext(ctx, "unix", path)
				if err != nil {
					return nil, &dialError{where: path, err: err}
				}
				return conn, nil
			},
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     30 * time.Second,
		}
	}
	switch {
	case o.hc == nil:
		c.hc = &http.Client{Transport: tr}
	case o.hc.Transport == nil:
		hc := *o.hc
		hc.Transport = tr
		c.hc = &hc
	default:
		c.hc = o.hc
	}
	return c, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// dialError is a failure to connect to the daemon.
type dialError struct {
	where string
	err   error
}

func (e *dialError) Error() string {
	switch {
	case errors.Is(e.err, syscall.EACCES), errors.Is(e.err, syscall.EPERM):
		return fmt.Sprintf("cannot reach the airlock daemon at %s: permission denied (the socket is for its owner only)", e.where)
	case errors.Is(e.err, syscall.ENOENT), errors.Is(e.err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot reach the airlock daemon at %s: is `airlock serve` running?", e.where)
	}
	return fmt.Sprintf("cannot reach the airlock daemon at %s: is `airlock serve` running? (%v)", e.where, e.err)
}

func (e *dialError) Unwrap() error { return e.err }

// answer is a 2xx answer being read.
type answer struct {
	*http.Response
	ctx  context.Context // the request's: its cause says why a read failed
	done func()
}

func (a *answer) close() {
	a.Body.Close()
	a.done()
}

// readErr describes a failure to read the answer's body.
func (a *answer) readErr(what string, err error) error {
	if cause := context.Cause(a.ctx); cause != nil {
		return fmt.Errorf("%s: %w", what, cause)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// request sends one request and returns the answer if it is a 2xx; any
// other answer becomes an *Error. The client's timeout covers reading the
// answer too, except with stream set, when it covers only the wait for the
// answer's header.
func (c *Client) request(ctx context.Context, method, path string, query url.Values, body any, accept string, stream bool) (*answer, error) {
	var rd io.Reader
	ctype := "application/json"
	if raw, ok := body.(rawBody); ok {
		rd, ctype, body = raw.r, raw.ctype, struct{}{}
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return nil, e
			}
			return nil, fmt.Errorf("sdk: encoding the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	what := method + " " + path
	ctx, cancel := context.WithCancelCause(ctx)
	stop := func() bool { return true } // false: the timeout fired
	if c.timeout > 0 {
		timeout := fmt.Errorf("the airlock daemon at %s did not answer within %s: %w", c.where, c.timeout, context.DeadlineExceeded)
		t := time.AfterFunc(c.timeout, func() { cancel(timeout) })
		stop = t.Stop
	}
	done := func() {
		stop()
		cancel(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		done()
		return nil, fmt.Errorf("sdk: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "airlock-sdk")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	if c.actor != "" {
		req.Header.Set("X-Airlock-Actor", c.actor)
	}
	if v := ClientName(ctx); v != "" {
		req.Header.Set(ClientHeader, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		defer done()
		if cause := context.Cause(ctx); cause != nil {
			return nil, fmt.Errorf("%s: %w", what, cause)
		}
		var de *dialError
		if errors.As(err, &de) {
			return nil, de
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s: airlock daemon at %s: %w", what, c.where, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := readError(resp)
		resp.Body.Close()
		done()
		return nil, e
	}
	if stream && !stop() {
		resp.Body.Close()
		done()
		return nil, fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
	return &answer{Response: resp, ctx: ctx, done: done}, nil
}

// rawBody is a request body sent as it is, not as JSON.
type rawBody struct {
	r     io.Reader
	ctype string
}

// readError turns a non-2xx answer into an *Error.
func readError(resp *http.Response) *Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Status: resp.StatusCode}
	var w wire.Error
	isJSON := json.Unmarshal(b, &w) == nil
	if isJSON {
		e.Code, e.Message, e.Rules, e.ApprovalID, e.Quota = w.Code, oneLine(w.Message), w.Rules, w.ApprovalID, w.Quota
	}
	if e.Code == "" {
		e.Code = statusCodes[resp.StatusCode]
		if e.Code == "" {
			e.Code = CodeInternal
		}
	}
	if e.Message == "" {
		// not our JSON: a proxy's page, or nothing
		if !isJSON && !strings.Contains(resp.Header.Get("Content-Type"), "html") {
			e.Message = oneLine(string(b))
		}
		if e.Message == "" {
			e.Message = fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		}
	}
	return e
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " ..."
	}
	if len(s) > 300 {
		s = s[:300] + " ..."
	}
	return s
}

// call sends a JSON request and decodes a JSON answer into out (unless out
// is nil).
func (c *Client) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	a, err := c.request(ctx, method, path, query, body, "application/json", false)
	if err != nil {
		return err
	}
	defer a.close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(a.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(a.Body, 64<<20)).Decode(out); err != nil {
		if context.Cause(a.ctx) != nil {
			return a.readErr(method+" "+path, err)
		}
		return fmt.Errorf("%s %s: malformed answer from the airlock daemon: %v", method, path, err)
	}
	return nil
}

func sandboxPath(id string, rest ...string) (string, error) {
	if id == "" {
		return "", invalidf("empty sandbox id")
	}
	p := "/v1/sandboxes/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p, nil
}

// Health asks the daemon how it is.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.call(ctx, http.MethodGet, "/v1/health", nil, nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// CreateSandbox creates a sandbox and returns it once it is running.
func (c *Client) CreateSandbox(ctx context.Context, req CreateRequest) (*Sandbox, error) {
	var sb Sandbox
	if err := c.call(ctx, http.MethodPost, "/v1/sandboxes", nil, req, &sb); err != nil {
		return nil, err
	}
	if sb.ID == "" {
		return nil, errors.New("POST /v1/sandboxes: malformed answer from the airlock daemon: no sandbox id")
	}
	return &sb, nil
}

// ListSandboxes lists sandboxes, newest first. A non-empty state
// (StateRunning, StatePaused, StateStopped) keeps only the sandboxes in
// that state.
func (c *Client) ListSandboxes(ctx context.Context, state string) ([]Sandbox, error) {
	var q url.Values
	if state != "" {
		q = url.Values{"state": {state}}
	}
	var w wire.SandboxList
	if err := c.call(ctx, http.MethodGet, "/v1/sandboxes", q, nil, &w); err != nil {
		return nil, err
	}
	if w.Sandboxes == nil {
		w.Sandboxes = []Sandbox{}
	}
	return w.Sandboxes, nil
}

// GetSandbox returns one sandbox, running or stopped.
func (c *Client) GetSandbox(ctx context.Context, id string) (*Sandbox, error) {
	p, err := sandboxPath(id)
	if err != nil {
		return nil, err
	}
	var sb Sandbox
	if err := c.call(ctx, http.MethodGet, p, nil, nil, &sb); err != nil {
		return nil, err
	}
	return &sb, nil
}

// DestroySandbox kills everything in a sandbox and removes it. Its record
// stays, in state "stopped".
func (c *Client) DestroySandbox(ctx context.Context, id string) error {
	p, err := sandboxPath(id)
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodDelete, p, nil, nil, nil)
}

// DestroySandboxNoWait is DestroySandbox answered once no command can
// start in the sandbox any more: the daemon tears it down after answering
// (and records that as a destroy), so the caller does not wait for it.
// A daemon that cannot answers IsUnsupported.
func (c *Client) DestroySandboxNoWait(ctx context.Context, id string) error {
	p, err := sandboxPath(id)
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodDelete, p, url.Values{"wait": {"false"}}, nil, nil)
}

// SetTimeout makes a sandbox expire ttl from now (rounded up to whole
// seconds); 0 removes its own time to live, leaving the daemon's maximum
// lifetime (counted from creation), if it has one, as the bound. A ttl
// that goes past that bound is refused (IsInvalid).
func (c *Client) SetTimeout(ctx context.Context, id string, ttl time.Duration) (*Sandbox, error) {
	p, err := sandboxPath(id, "timeout")
	if err != nil {
		return nil, err
	}
	if ttl < 0 {
		return nil, invalidf("negative TTL %s", ttl)
	}
	n := ceilDiv(ttl, time.Second)
	body := wire.TimeoutRequest{TTLSeconds: &n}
	var sb Sandbox
	if err := c.call(ctx, http.MethodPost, p, nil, body, &sb); err != nil {
		return nil, err
	}
	return &sb, nil
}

// maxEventLine bounds one line of an exec stream.
const maxEventLine = 32 << 20

// execEvent is one line of an exec stream. Type is decoded first, and the
// rest by type, so that an event this client does not know is skipped
// whatever its fields.
type execEvent struct {
	Type string `json:"type"`
}

// Exec runs a command in a sandbox. Its output is written to stdout and
// stderr (nil: discarded) as the daemon streams it. Exec returns the
// command's exit status, whatever its code; an error means the command
// could not be started (IsNotFound: no such command or sandbox), or the
// daemon reported an error, or the stream broke. A write error on stdout
// or stderr ends the call (and the request) with that error.
func (c *Client) Exec(ctx context.Context, id string, req ExecRequest, stdout, stderr io.Writer) (*ExitStatus, error) {
	p, err := sandboxPath(id, "exec")
	if err != nil {
		return nil, err
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, invalidf("no command given")
	}
	if req.Timeout < 0 {
		return nil, invalidf("negative timeout %s", req.Timeout)
	}
	if req.OutputLimit < 0 {
		return nil, invalidf("negative output limit %d", req.OutputLimit)
	}
	w, err := req.body()
	if err != nil {
		return nil, err
	}
	st, _, err := c.execStream(ctx, p, nil, w, stdout, stderr, req.Started)
	return st, err
}

// execStream posts body to p and reads the NDJSON exec stream that
// answers; passed is set when the exit event says whether tests passed.
func (c *Client) execStream(ctx context.Context, p string, query url.Values, body any, stdout, stderr io.Writer, started func(string)) (_ *ExitStatus, passed *bool, _ error) {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}

	a, err := c.request(ctx, http.MethodPost, p, query, body, "application/x-ndjson", true)
	if err != nil {
		return nil, nil, err
	}
	defer a.close()

	sc := bufio.NewScanner(a.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	var execID string
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev execEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, nil, fmt.Errorf("exec: malformed event from the airlock daemon: %v", err)
		}
		malformed := func(err error) error {
			return fmt.Errorf("exec: malformed %q event from the airlock daemon: %v", ev.Type, err)
		}
		switch ev.Type {
		case "start":
			var start wire.Event
			if err := json.Unmarshal(line, &start); err != nil {
				return nil, nil, malformed(err)
			}
			execID = start.ExecID
			if started != nil {
				started(execID)
			}
		case "stdout", "stderr":
			var chunk wire.Event
			if err := json.Unmarshal(line, &chunk); err != nil {
				return nil, nil, malformed(err)
			}
			w := stdout
			if ev.Type == "stderr" {
				w = stderr
			}
			if _, err := w.Write(chunk.Data); err != nil {
				return nil, nil, fmt.Errorf("exec: writing %s: %w", ev.Type, err)
			}
		case "exit":
			var exit wire.Event
			if err := json.Unmarshal(line, &exit); err != nil {
				return nil, nil, malformed(err)
			}
			if exit.Status == nil {
				return nil, nil, malformed(errors.New("no status"))
			}
			exit.Status.ExecID = execID
			return exit.Status, exit.Passed, nil
		case "error":
			var f wire.Event
			if err := json.Unmarshal(line, &f); err != nil {
				return nil, nil, malformed(err)
			}
			if f.Code == "" {
				f.Code = CodeInternal
			}
			return nil, nil, &Error{Status: codeStatus(f.Code), Code: f.Code, Message: oneLine(f.Message)}
		default:
			// an event this client does not know: skip it
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, nil, fmt.Errorf("exec: malformed answer from the airlock daemon: an event is longer than %d MiB", maxEventLine>>20)
		}
		return nil, nil, a.readErr("exec: reading the output stream", err)
	}
	if cause := context.Cause(a.ctx); cause != nil {
		return nil, nil, fmt.Errorf("exec: %w", cause)
	}
	return nil, nil, fmt.Errorf("exec: the stream ended before the command's exit status: %w", io.ErrUnexpectedEOF)
}

// ListExecs lists the commands run in a sandbox, oldest first.
func (c *Client) ListExecs(ctx context.Context, id string) ([]Exec, error) {
	p, err := sandboxPath(id, "execs")
	if err != nil {
		return nil, err
	}
	var w wire.ExecList
	if err := c.call(ctx, http.MethodGet, p, nil, nil, &w); err != nil {
		return nil, err
	}
	if w.Execs == nil {
		w.Execs = []Exec{}
	}
	return w.Execs, nil
}

// ExecOutput returns the stored (capped) output of one command: stream is
// Stdout or Stderr ("" means Stdout).
func (c *Client) ExecOutput(ctx context.Context, id, execID, stream string) ([]byte, error) {
	if stream == "" {
		stream = Stdout
	}
	if stream != Stdout && stream != Stderr {
		return nil, invalidf("stream %q: want stdout or stderr", stream)
	}
	if execID == "" {
		return nil, invalidf("empty exec id")
	}
	p, err := sandboxPath(id, "execs", url.PathEscape(execID), "output")
	if err != nil {
		return nil, err
	}
	a, err := c.request(ctx, http.MethodGet, p, url.Values{"stream": {stream}}, nil, "application/octet-stream", false)
	if err != nil {
		return nil, err
	}
	defer a.close()
	b, err := io.ReadAll(a.Body)
	if err != nil {
		return nil, a.readErr("GET "+p+": reading the output", err)
	}
	return b, nil
}

// sandboxAction posts to one of a sandbox's action routes (pause, resume,
// reset) and returns the sandbox as it now is.
func (c *Client) sandboxAction(ctx context.Context, id, action string) (*Sandbox, error) {
	p, err := sandboxPath(id, action)
	if err != nil {
		return nil, err
	}
	var sb Sandbox
	if err := c.call(ctx, http.MethodPost, p, nil, nil, &sb); err != nil {
		return nil, err
	}
	return &sb, nil
}

// PauseSandbox freezes every process of a sandbox (IsConflict if it is
// already paused); nothing runs in it until ResumeSandbox.
func (c *Client) PauseSandbox(ctx context.Context, id string) (*Sandbox, error) {
	return c.sandboxAction(ctx, id, "pause")
}

// ResumeSandbox thaws a paused sandbox.
func (c *Client) ResumeSandbox(ctx context.Context, id string) (*Sandbox, error) {
	return c.sandboxAction(ctx, id, "resume")
}

// ResetSandbox starts a sandbox over from its template: processes killed,
// every file it wrote gone; its id and records stay.
func (c *Client) ResetSandbox(ctx context.Context, id string) (*Sandbox, error) {
	return c.sandboxAction(ctx, id, "reset")
}

// APIKey is an API key's record; Key is set only by CreateAPIKey.
type APIKey = wire.APIKey

// CreateAPIKey makes a key for TCP clients, of a project in a role
// (KeyProject, KeyRole, KeyE2B; without them: the caller's project, an
// agent key). The operator (the unix socket) makes any project's keys;
// a project's admin key only its own project's, of a role no higher
// than its own. The key is returned this once.
func (c *Client) CreateAPIKey(ctx context.Context, name string, opts ...KeyOption) (*APIKey, error) {
	body := wire.APIKeyRequest{Name: name}
	for _, o := range opts {
		o(&body)
	}
	return c.createKey(ctx, body)
}

// CreateE2BAPIKey makes a key shaped as the E2B SDKs expect ("e2b_" and
// 40 hex digits), for E2B_API_KEY against 'airlock serve --e2b-listen'.
// It is an ordinary airlock key: it works on the TCP API too.
func (c *Client) CreateE2BAPIKey(ctx context.Context, name string, opts ...KeyOption) (*APIKey, error) {
	return c.CreateAPIKey(ctx, name, append(opts, KeyE2B())...)
}

func (c *Client) createKey(ctx context.Context, body wire.APIKeyRequest) (*APIKey, error) {
	var k APIKey
	if err := c.call(ctx, http.MethodPost, "/v1/apikeys", nil, body, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// ListAPIKeys lists the keys (never the keys themselves).
func (c *Client) ListAPIKeys(ctx context.Context) ([]APIKey, error) {
	var w wire.APIKeyList
	if err := c.call(ctx, http.MethodGet, "/v1/apikeys", nil, nil, &w); err != nil {
		return nil, err
	}
	if w.APIKeys == nil {
		w.APIKeys = []APIKey{}
	}
	return w.APIKeys, nil
}

// DeleteAPIKey revokes a key.
func (c *Client) DeleteAPIKey(ctx context.Context, id string) error {
	if id == "" {
		return invalidf("empty key id")
	}
	return c.call(ctx, http.MethodDelete, "/v1/apikeys/"+url.PathEscape(id), nil, nil, nil)
}

// Started is a command started in the background.
type Started = wire.ExecStarted

// ExecBackground starts a command and returns at once; it runs on, its
// output is kept (capped, see ExecOutput) and GetExec shows how it ended.
// With openStdin the command's stdin stays open for Input and CloseStdin
// (req.Stdin is then not sent).
func (c *Client) ExecBackground(ctx context.Context, id string, req ExecRequest, openStdin ...bool) (*Started, error) {
	p, err := sandboxPath(id, "exec")
	if err != nil {
		return nil, err
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, invalidf("no command given")
	}
	w, err := req.body()
	if err != nil {
		return nil, err
	}
	w.Background, w.StdinOpen = true, len(openStdin) > 0 && openStdin[0]
	var st Started
	if err := c.call(ctx, http.MethodPost, p, nil, w, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// GetExec returns one exec record (Ended is nil while it runs).
func (c *Client) GetExec(ctx context.Context, id, execID string) (*Exec, error) {
	if execID == "" {
		return nil, invalidf("empty exec id")
	}
	p, err := sandboxPath(id, "execs", url.PathEscape(execID))
	if err != nil {
		return nil, err
	}
	var e Exec
	if err := c.call(ctx, http.MethodGet, p, nil, nil, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// Signal sends a signal (a number, e.g. 9, or a name, e.g. "TERM") to a
// running command's process group.
func (c *Client) Signal(ctx context.Context, id, execID string, signal any) error {
	if execID == "" {
		return invalidf("empty exec id")
	}
	p, err := sandboxPath(id, "execs", url.PathEscape(execID), "signal")
	if err != nil {
		return err
	}
	sig, err := json.Marshal(signal)
	if err != nil {
		return invalidf("signal %v: %v", signal, err)
	}
	return c.call(ctx, http.MethodPost, p, nil, wire.SignalRequest{Signal: sig}, nil)
}

// Snapshot is a snapshot template version.
type Snapshot = wire.Snapshot

// Template is a template sandboxes can be created from.
type Template = wire.Template

// SnapshotSandbox makes a new version of the template name from a running
// sandbox's /workspace and /home/sandbox (files, not processes).
func (c *Client) SnapshotSandbox(ctx context.Context, id, name string) (*Snapshot, error) {
	p, err := sandboxPath(id, "snapshot")
	if err != nil {
		return nil, err
	}
	var s Snapshot
	if err := c.call(ctx, http.MethodPost, p, nil, wire.SnapshotRequest{Name: name}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListTemplates lists the built-in templates and the snapshots.
func (c *Client) ListTemplates(ctx context.Context) ([]Template, error) {
	var w wire.TemplateList
	if err := c.call(ctx, http.MethodGet, "/v1/templates", nil, nil, &w); err != nil {
		return nil, err
	}
	if w.Templates == nil {
		w.Templates = []Template{}
	}
	return w.Templates, nil
}

// ImportTemplate imports an image (an OCI layout directory or an OCI or
// docker archive on the daemon's host, or a registry reference) as the
// template name. Only over the local socket. progress, when set, hears
// of each step as it happens (the answer is then streamed, and the
// client's timeout does not cut a long import short).
func (c *Client) ImportTemplate(ctx context.Context, name, source string, progress func(line string)) (*Template, error) {
	return c.ImportTemplateWith(ctx, TemplateImport{Name: name, Source: source}, progress)
}

// TemplateImport is an import's request: the template's name, its
// source, and the daemon's secret holding the registry credential, if
// the registry wants one.
type TemplateImport = wire.TemplateImportRequest

// ImportTemplateWith is ImportTemplate with every field of the request
// (RegistrySecret: the credential of a registry reference's registry,
// kept as one of the daemon's secrets).
func (c *Client) ImportTemplateWith(ctx context.Context, req TemplateImport, progress func(line string)) (*Template, error) {
	if progress == nil {
		var t Template
		if err := c.call(ctx, http.MethodPost, "/v1/templates", nil, req, &t); err != nil {
			return nil, err
		}
		return &t, nil
	}
	a, err := c.request(ctx, http.MethodPost, "/v1/templates", url.Values{"progress": {"1"}}, req, "application/x-ndjson", true)
	if err != nil {
		return nil, err
	}
	defer a.close()
	dec := json.NewDecoder(io.LimitReader(a.Body, 64<<20))
	for {
		var ev wire.TemplateImportEvent
		if err := dec.Decode(&ev); err != nil {
			return nil, a.readErr("POST /v1/templates", err)
		}
		switch {
		case ev.Error != nil:
			return nil, &Error{Status: wire.Status(ev.Error.Code), Code: ev.Error.Code, Message: oneLine(ev.Error.Message)}
		case ev.Template != nil:
			return ev.Template, nil
		case ev.Progress != "":
			progress(oneLine(ev.Progress))
		}
	}
}

// BuildTemplate builds the template name from the airlock.template file
// at path file, COPY reading below contextDir ("": the file's
// directory); both are absolute paths on the daemon's host (the local
// socket only). Each RUN step runs in a sandbox of the daemon, under its
// policy and egress proxy, on its audit log. progress (may be nil) hears
// each step and the steps' output, one line each.
func (c *Client) BuildTemplate(ctx context.Context, name, file, contextDir string, progress func(line string)) (*wire.TemplateBuild, error) {
	req := wire.TemplateBuildRequest{Name: name, File: file, Context: contextDir}
	if progress == nil {
		var b wire.TemplateBuild
		if err := c.call(ctx, http.MethodPost, "/v1/templates/build", nil, req, &b); err != nil {
			return nil, err
		}
		return &b, nil
	}
	a, err := c.request(ctx, http.MethodPost, "/v1/templates/build", url.Values{"progress": {"1"}}, req, "application/x-ndjson", true)
	if err != nil {
		return nil, err
	}
	defer a.close()
	dec := json.NewDecoder(io.LimitReader(a.Body, 256<<20))
	for {
		var ev wire.TemplateBuildEvent
		if err := dec.Decode(&ev); err != nil {
			return nil, a.readErr("POST /v1/templates/build", err)
		}
		switch {
		case ev.Error != nil:
			return nil, &Error{Status: wire.Status(ev.Error.Code), Code: ev.Error.Code, Message: oneLine(ev.Error.Message)}
		case ev.Build != nil:
			return ev.Build, nil
		case ev.Progress != "":
			progress(oneLine(ev.Progress))
		}
	}
}

// Input writes data to the open stdin of a command started with
// ExecBackground(..., true).
func (c *Client) Input(ctx context.Context, id, execID string, data []byte) error {
	if execID == "" {
		return invalidf("empty exec id")
	}
	p, err := sandboxPath(id, "execs", url.PathEscape(execID), "input")
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, p, nil, wire.InputRequest{Data: data}, nil)
}

// CloseStdin closes that stdin: the command reads end of file.
func (c *Client) CloseStdin(ctx context.Context, id, execID string) error {
	if execID == "" {
		return invalidf("empty exec id")
	}
	p, err := sandboxPath(id, "execs", url.PathEscape(execID), "close-stdin")
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, p, nil, nil, nil)
}

// Resize sets the window of a running command's terminal.
func (c *Client) Resize(ctx context.Context, id, execID string, rows, cols uint16) error {
	if execID == "" {
		return invalidf("empty exec id")
	}
	p, err := sandboxPath(id, "execs", url.PathEscape(execID), "resize")
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, p, nil, wire.ResizeRequest{Rows: rows, Cols: cols}, nil)
}
