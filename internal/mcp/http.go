package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/airlock-dev/airlock/sdk"
)

// maxBody bounds one HTTP message.
const maxBody = 8 << 20

// HTTP is the streamable HTTP transport: each POST carries one JSON-RPC
// message (or a batch) and is answered with application/json; a
// notification is answered 202. The server sends nothing unasked, so GET
// (a server-to-client stream) is 405, which the protocol allows. client
// gives the airlock client for a request (the daemon's in-process one,
// carrying the caller's identity).
func HTTP(version string, client func(r *http.Request) *sdk.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
		case http.MethodDelete:
			w.WriteHeader(http.StatusOK) // sessions hold no state here
			return
		default:
			w.Header().Set("Allow", "POST, DELETE")
			http.Error(w, "this MCP endpoint answers POST only (no server-initiated stream)", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "message too large", http.StatusRequestEntityTooLarge)
			return
		}
		s := &Server{Client: client(r), Version: version}
		var batch []json.RawMessage
		isBatch := json.Unmarshal(body, &batch) == nil
		if !isBatch {
			batch = []json.RawMessage{body}
		}
		var out []*response
		var mu sync.Mutex
		var wg sync.WaitGroup
		initialize := false
		for _, msg := range batch {
			var head struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(msg, &head)
			initialize = initialize || head.Method == "initialize"
			wg.Add(1)
			go func() {
				defer wg.Done()
				if resp := s.Handle(r.Context(), msg); resp != nil {
					mu.Lock()
					out = append(out, resp)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if initialize {
			var b [16]byte
			_, _ = rand.Read(b[:])
			w.Header().Set("Mcp-Session-Id", hex.EncodeToString(b[:]))
		}
		if len(out) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if isBatch {
			_ = json.NewEncoder(w).Encode(out)
			return
		}
		_ = json.NewEncoder(w).Encode(out[0])
	})
}

// InProcess is a RoundTripper that hands requests straight to an
// http.Handler (the daemon's own API), streaming the answer back: the MCP
// endpoint's tool calls go through the same API, policy and audit, with
// the caller's context (identity, TCP or socket) intact.
type InProcess struct{ Handler http.Handler }

// RoundTrip serves req with the handler.
func (t InProcess) RoundTrip(req *http.Request) (*http.Response, error) {
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
