package e2b

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/reqcheck"
)

// The in-sandbox API speaks the Connect protocol with JSON messages over
// HTTP/1.1: unary calls are a plain JSON POST; server streams send
// enveloped messages (1 flag byte, 4 length bytes, JSON) and end with an
// end-of-stream envelope (flag 0x02) that carries the error, if any.

const (
	flagCompressed = 0x01
	flagEndStream  = 0x02
	maxMessage     = 4 << 20
)

// rpcError is a Connect error: a code from the Connect set and a message.
type rpcError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

func (e *rpcError) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// The Connect codes used here.
const (
	codeCanceled         = "canceled"
	codeInvalidArgument  = "invalid_argument"
	codeDeadlineExceeded = "deadline_exceeded"
	codeNotFound         = "not_found"
	codePermissionDenied = "permission_denied"
	codeResourceExhaust  = "resource_exhausted"
	codeFailedPrecond    = "failed_precondition"
	codeUnimplemented    = "unimplemented"
	codeInternal         = "internal"
	codeUnavailable      = "unavailable"
	codeUnauthenticated  = "unauthenticated"
	codeUnknown          = "unknown"
)

// httpStatus is the HTTP status a unary call answers an error code with.
func httpStatus(code string) int {
	switch code {
	case codeCanceled:
		return 499
	case codeInvalidArgument, codeFailedPrecond:
		return http.StatusBadRequest
	case codeDeadlineExceeded:
		return http.StatusGatewayTimeout
	case codeNotFound:
		return http.StatusNotFound
	case codePermissionDenied:
		return http.StatusForbidden
	case codeResourceExhaust:
		return http.StatusTooManyRequests
	case codeUnimplemented:
		return http.StatusNotImplemented
	case codeUnavailable:
		return http.StatusServiceUnavailable
	case codeUnauthenticated:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// connectTimeout is the call's Connect-Timeout-Ms (0: none given).
func connectTimeout(r *http.Request) (time.Duration, error) {
	v := r.Header.Get("Connect-Timeout-Ms")
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, errorf(codeInvalidArgument, "Connect-Timeout-Ms %q: a non-negative number of milliseconds", v)
	}
	d, err := reqcheck.Millis("Connect-Timeout-Ms", ms, 0)
	if err != nil {
		return 0, errorf(codeInvalidArgument, "%s", strings.TrimSuffix(err.Error(), ": "+errdefs.ErrInvalid.Error()))
	}
	return d, nil
}

func checkUncompressed(r *http.Request, header string) *rpcError {
	if enc := r.Header.Get(header); enc != "" && enc != "identity" {
		return errorf(codeUnimplemented, "%s %q: only uncompressed messages are accepted", header, enc)
	}
	return nil
}

// readUnary decodes a unary call's JSON request into v.
func readUnary(r *http.Request, v any) *rpcError {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return errorf(codeUnimplemented, "content type %q: this server speaks Connect with JSON messages (application/json)", ct)
	}
	if err := checkUncompressed(r, "Content-Encoding"); err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMessage+1))
	if err != nil {
		return errorf(codeInvalidArgument, "read request: %v", err)
	}
	if len(body) > maxMessage {
		return errorf(codeResourceExhaust, "request message over %d bytes", maxMessage)
	}
	return decodeMessage(body, v)
}

func decodeMessage(body []byte, v any) *rpcError {
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errorf(codeInvalidArgument, "request message: %v", err)
	}
	return nil
}

// writeUnary answers a unary call with a message or an error.
func writeUnary(w http.ResponseWriter, v any, rerr *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	if rerr != nil {
		w.WriteHeader(httpStatus(rerr.Code))
		_ = json.NewEncoder(w).Encode(rerr)
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// readStreamRequest reads the single enveloped request message of a
// server-streaming call.
func readStreamRequest(r *http.Request, v any) *rpcError {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/connect+json") {
		return errorf(codeUnimplemented, "content type %q: this server speaks Connect with JSON messages (application/connect+json)", ct)
	}
	if err := checkUncompressed(r, "Connect-Content-Encoding"); err != nil {
		return err
	}
	var hdr [5]byte
	if _, err := io.ReadFull(r.Body, hdr[:]); err != nil {
		return errorf(codeInvalidArgument, "read request envelope: %v", err)
	}
	if hdr[0]&flagCompressed != 0 {
		return errorf(codeUnimplemented, "compressed request message")
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxMessage {
		return errorf(codeResourceExhaust, "request message over %d bytes", maxMessage)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		return errorf(codeInvalidArgument, "read request message: %v", err)
	}
	return decodeMessage(body, v)
}

// stream writes a server stream's messages, each flushed at once.
type stream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	ended   bool
}

func newStream(w http.ResponseWriter) *stream {
	return &stream{w: w, rc: http.NewResponseController(w)}
}

func (s *stream) begin() {
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", "application/connect+json")
		s.w.WriteHeader(http.StatusOK)
	}
}

func (s *stream) envelope(flags byte, payload []byte) error {
	if err := s.write(flags, payload); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *stream) write(flags byte, payload []byte) error {
	var hdr [5]byte
	hdr[0] = flags
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	_, err := s.w.Write(append(hdr[:], payload...))
	return err
}

// send writes one message.
func (s *stream) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return errors.New("stream ended")
	}
	s.begin()
	return s.envelope(0, b)
}

// end closes the stream, with rerr as its error if not nil; last, if
// not nil, is a final message sent with the end, in one flush.
func (s *stream) end(rerr *rpcError, last ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	s.begin()
	for _, v := range last {
		b, err := json.Marshal(v)
		if err != nil || s.write(0, b) != nil {
			return
		}
	}
	var b []byte
	if rerr != nil {
		b, _ = json.Marshal(map[string]any{"error": rerr})
	} else {
		b = []byte("{}")
	}
	_ = s.envelope(flagEndStream, b)
}
