package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

// maxBody bounds one HTTP message.
const maxBody = 8 << 20

// sessionIdle closes an HTTP session no request has used for this long.
const sessionIdle = time.Hour

// Caller names who sent an HTTP request (the same name for every request
// of one identity: the operator on the socket, one API key over TCP) and
// gives an airlock client that acts as them. It is asked for the client
// once per identity.
type Caller func(r *http.Request) (id string, client func() *sdk.Client)

// HTTP is the streamable HTTP transport, the Go SDK's: sessions (an id
// issued on initialize, checked on every request, ended by DELETE or
// idleness), MCP-Protocol-Version checked, a posted response or
// notification answered 202, server-to-client messages over SSE. Each
// identity has its own sessions: a session id is worth nothing to
// another key. A browser page of another origin is refused (Origin and
// Sec-Fetch-Site, net/http's cross-origin protection), as is a loopback
// request naming another host (DNS rebinding; the SDK's check).
func HTTP(version string, caller Caller) http.Handler {
	var mu sync.Mutex
	handlers := map[string]*identity{}
	handler := func(r *http.Request) *identity {
		id, client := caller(r)
		mu.Lock()
		defer mu.Unlock()
		if h, ok := handlers[id]; ok {
			return h
		}
		if len(handlers) >= 4096 { // keys come and go: forget them all rather than grow
			clear(handlers)
		}
		srv := (&Server{Client: client(), Version: version}).server()
		h := &identity{Handler: mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
			&mcpsdk.StreamableHTTPOptions{SessionTimeout: sessionIdle, MaxRequestBodyBytes: maxBody}), calls: map[callKey]*call{}}
		handlers[id] = h
		return h
	}
	origin := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := origin.Check(r); err != nil {
			http.Error(w, "cross-origin request refused: "+err.Error(), http.StatusForbidden)
			return
		}
		if r.Method != http.MethodPost {
			handler(r).ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "message too large", http.StatusRequestEntityTooLarge)
			return
		}
		session := r.Header.Get("Mcp-Session-Id")
		if session == "" && !sessionless(r) && !isInitialize(body) {
			// The SDK would serve it in a session of its own; the spec
			// (2025-06-18) has a request outside a session 400.
			http.Error(w, "Bad Request: no Mcp-Session-Id (initialize first)", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		handler(r).serve(w, r, session, body)
	})
}

// identity is one caller's SDK handler and the calls of its sessions
// still being answered. The SDK answers a call the client cancelled
// (notifications/cancelled) all the same; the protocol wants no answer,
// so this drops it, as the stdio transport does. Calls are kept per
// identity: another key's cancel, naming this one's session, drops
// nothing.
type identity struct {
	http.Handler
	mu    sync.Mutex
	calls map[callKey]*call
}

type callKey struct {
	session string
	id      jsonrpc.ID
}

// call is one call whose POST is being answered: cancelled once the
// client said so.
type call struct{ cancelled bool }

// serve hands a POST of session to the SDK: a call is tracked while its
// POST answers (and its answer dropped if cancelled meanwhile); a
// cancellation marks the call it names, if that call is being answered.
func (h *identity) serve(w http.ResponseWriter, r *http.Request, session string, body []byte) {
	msg, err := jsonrpc.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	if session == "" || err != nil || !ok {
		h.ServeHTTP(w, r)
		return
	}
	if req.Method == "notifications/cancelled" {
		// Marked before the SDK sees the cancel (and so before it ends
		// the call and writes its answer).
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				h.mu.Lock()
				if c := h.calls[callKey{session, id}]; c != nil {
					c.cancelled = true
				}
				h.mu.Unlock()
			}
		}
	}
	if !req.IsCall() {
		h.ServeHTTP(w, r)
		return
	}
	k, c := callKey{session, req.ID}, &call{}
	h.mu.Lock()
	h.calls[k] = c
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		if h.calls[k] == c { // a reused id's newer call stays
			delete(h.calls, k)
		}
		h.mu.Unlock()
	}()
	h.ServeHTTP(&dropAnswer{ResponseWriter: w, id: req.ID, dropped: func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return c.cancelled
	}}, r)
}

// dropAnswer passes a POST's answer stream on but for the response to
// the call id once dropped() says it was cancelled. The SDK writes each
// server-sent event in one Write.
type dropAnswer struct {
	http.ResponseWriter
	id      jsonrpc.ID
	dropped func() bool
}

func (d *dropAnswer) Write(p []byte) (int, error) {
	if d.dropped() { // parsed only then: most answers are not cancelled
		if id, ok := eventResponse(p); ok && id == d.id {
			return len(p), nil
		}
	}
	return d.ResponseWriter.Write(p)
}

func (d *dropAnswer) Flush() { _ = http.NewResponseController(d.ResponseWriter).Flush() }

func (d *dropAnswer) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// eventResponse is the id of the JSON-RPC response a server-sent event
// (or a JSON answer) carries.
func eventResponse(p []byte) (jsonrpc.ID, bool) {
	data := p
	if i := bytes.Index(p, []byte("data: ")); i >= 0 && (i == 0 || p[i-1] == '\n') {
		data = p[i+len("data: "):]
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			data = data[:j]
		}
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if resp, ok := msg.(*jsonrpc.Response); err == nil && ok {
		return resp.ID, true
	}
	return jsonrpc.ID{}, false
}

// sessionless: a protocol revision without sessions (2026-07-28 and
// later, which the SDK serves as such).
func sessionless(r *http.Request) bool {
	v := r.Header.Get("MCP-Protocol-Version")
	return v >= "2026-07-28"
}

func isInitialize(body []byte) bool {
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == "initialize"
}

// InProcess is a RoundTripper that hands requests straight to an
// http.Handler (the daemon's own API), streaming the answer back: the MCP
// endpoint's tool calls go through the same API, policy and audit, with
// the caller's identity intact. Values, when set, is the context whose
// values (identity, TCP or socket) every request carries; a request's
// own context still decides when it is cancelled.
type InProcess struct {
	Handler http.Handler
	Values  context.Context
}

// valuesOf is ctx with the values of v (ctx's own first).
type valuesOf struct {
	context.Context
	v context.Context
}

func (c valuesOf) Value(k any) any {
	if x := c.Context.Value(k); x != nil {
		return x
	}
	return c.v.Value(k)
}

// RoundTrip serves req with the handler.
func (t InProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Values != nil {
		req = req.WithContext(valuesOf{req.Context(), t.Values})
	}
	pr, pw := io.Pipe()
	rw := &pipeWriter{header: http.Header{}, trailer: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			rw.writeHeader(http.StatusOK)
			rw.trailers()
			pw.Close()
		}()
		t.Handler.ServeHTTP(rw, req)
	}()
	select {
	case <-rw.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: rw.status, Status: http.StatusText(rw.status), Header: rw.sent, Trailer: rw.trailer, Body: pr, Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1}, nil
}

type pipeWriter struct {
	header  http.Header // the handler's, written as it goes
	sent    http.Header // header as it was when the status was written
	trailer http.Header // the response's: filled before the body's EOF
	pw      *io.PipeWriter
	status  int
	once    sync.Once
	ready   chan struct{}
}

// trailers copies the trailers the handler declared (net/http's Trailer
// header, or the TrailerPrefix form) once it has returned: a reader sees
// them after the body's EOF, as over a connection.
func (w *pipeWriter) trailers() {
	for _, v := range w.sent.Values("Trailer") {
		for _, k := range strings.Split(v, ",") {
			if k = http.CanonicalHeaderKey(strings.TrimSpace(k)); k != "" && w.header.Get(k) != "" {
				w.trailer[k] = w.header.Values(k)
			}
		}
	}
	for k, v := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			w.trailer[http.CanonicalHeaderKey(name)] = v
		}
	}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) writeHeader(code int) {
	w.once.Do(func() {
		w.status = code
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) WriteHeader(code int) { w.writeHeader(code) }

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.writeHeader(http.StatusOK)
	return w.pw.Write(b)
}

func (w *pipeWriter) Flush() {}
