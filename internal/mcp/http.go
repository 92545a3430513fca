package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

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
	handlers := map[string]http.Handler{}
	handler := func(r *http.Request) http.Handler {
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
		h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
			&mcpsdk.StreamableHTTPOptions{SessionTimeout: sessionIdle, MaxRequestBodyBytes: maxBody})
		handlers[id] = h
		return h
	}
	origin := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := origin.Check(r); err != nil {
			http.Error(w, "cross-origin request refused: "+err.Error(), http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && !sessionless(r) {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
			if err != nil {
				http.Error(w, "message too large", http.StatusRequestEntityTooLarge)
				return
			}
			if !isInitialize(body) {
				// The SDK would serve it in a session of its own; the
				// spec (2025-06-18) has a request outside a session 400.
				http.Error(w, "Bad Request: no Mcp-Session-Id (initialize first)", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		handler(r).ServeHTTP(w, r)
	})
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
	rw := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			rw.writeHeader(http.StatusOK)
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
	return &http.Response{StatusCode: rw.status, Status: http.StatusText(rw.status), Header: rw.header, Body: pr, Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1}, nil
}

type pipeWriter struct {
	header http.Header
	pw     *io.PipeWriter
	status int
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) writeHeader(code int) {
	w.once.Do(func() {
		w.status = code
		close(w.ready)
	})
}

func (w *pipeWriter) WriteHeader(code int) { w.writeHeader(code) }

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.writeHeader(http.StatusOK)
	return w.pw.Write(b)
}

func (w *pipeWriter) Flush() {}
