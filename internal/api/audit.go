package api

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/review"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/wire"
)

// The audit routes: the record, its verification and purging are the
// operator's (unix socket only); a task's bundle anyone with access to
// the task may fetch.
func (s *Server) auditRoutes() {
	s.handle("GET /v1/audit", access{role: tenant.Operator}, s.auditQuery)
	s.handle("GET /v1/audit/verify", access{role: tenant.Operator}, s.auditVerify)
	s.handle("GET /v1/audit/pubkey", access{role: tenant.Agent}, s.auditPubkey)
	s.handle("GET /v1/audit/blobs/{hash}", access{role: tenant.Operator}, s.auditBlob)
	s.handle("POST /v1/purge", access{role: tenant.Operator}, s.purge)
	s.handle("GET /v1/tasks/{id}/bundle", access{role: tenant.Reviewer, kind: tenant.Task}, s.taskBundle)
}

// AuditLog is what the API reads of the audit log (audit.Log): events,
// blobs, and the verification against the daemon's checkpoint.
type AuditLog interface {
	Query(ctx context.Context, f store.AuditFilter) ([]*audit.Event, error)
	Blob(ctx context.Context, hash string) ([]byte, error)
	Verify(ctx context.Context) (*audit.Report, error)
	PublicKey() ed25519.PublicKey
}

// noAudit is a daemon that keeps no audit log.
type noAudit struct{}

var errNoAudit = fmt.Errorf("no audit log is kept: %w", errdefs.ErrUnsupported)

func (noAudit) Query(context.Context, store.AuditFilter) ([]*audit.Event, error) {
	return nil, errNoAudit
}
func (noAudit) Blob(context.Context, string) ([]byte, error)  { return nil, errNoAudit }
func (noAudit) Verify(context.Context) (*audit.Report, error) { return nil, errNoAudit }
func (noAudit) PublicKey() ed25519.PublicKey                  { return nil }

// auditPubkey is the public key that signs checkpoints and bundles.
func (s *Server) auditPubkey(w http.ResponseWriter, r *http.Request) {
	pub := s.audit.PublicKey()
	if pub == nil {
		writeError(w, errNoAudit)
		return
	}
	writeJSON(w, http.StatusOK, wire.AuditPublicKey{Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(pub)})
}

func (s *Server) auditQuery(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.AuditFilter{SandboxID: q.Get("sandbox"), TaskID: q.Get("task"), ExecID: q.Get("exec"), Kind: q.Get("kind")}
	var err error
	parseTime := func(name string) time.Time {
		v := q.Get(name)
		if v == "" || err != nil {
			return time.Time{}
		}
		t, perr := time.Parse(time.RFC3339Nano, v)
		if perr != nil {
			err = fmt.Errorf("%s: want an RFC 3339 time: %w", name, errdefs.ErrInvalid)
		}
		return t
	}
	f.Since, f.Until = parseTime("since"), parseTime("until")
	if v := q.Get("after"); v != "" && err == nil {
		if f.AfterSeq, err = strconv.ParseInt(v, 10, 64); err != nil {
			err = fmt.Errorf("after: want a sequence number: %w", errdefs.ErrInvalid)
		}
	}
	f.Limit = 1000
	if v := q.Get("limit"); v != "" && err == nil {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > 10000 {
			err = fmt.Errorf("limit: 1 to 10000: %w", errdefs.ErrInvalid)
		}
		f.Limit = n
	}
	if err != nil {
		writeError(w, err)
		return
	}
	events, err := s.audit.Query(r.Context(), f)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.AuditEventList{Events: mapAll(events, auditEventOut)})
}

func (s *Server) auditVerify(w http.ResponseWriter, r *http.Request) {
	rep, err := s.audit.Verify(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, auditReportOut(rep))
}

func (s *Server) auditBlob(w http.ResponseWriter, r *http.Request) {
	h := r.PathValue("hash")
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		writeError(w, fmt.Errorf("blob hash: 64 hex digits: %w", errdefs.ErrInvalid))
		return
	}
	data, err := s.audit.Blob(r.Context(), h)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

func (s *Server) purge(w http.ResponseWriter, r *http.Request) {
	var req wire.PurgeRequest
	if err := decode(w, r, maxJSONBody, &req); err != nil {
		writeError(w, err)
		return
	}
	d, err := reqcheck.Seconds("older_than_seconds", req.OlderThanSeconds, 0)
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := s.review.Purge(r.Context(), d)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, purgeOut(res))
}

func (s *Server) taskBundle(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return
	}
	// Built in memory first: an error must be an error answer, not half a
	// bundle.
	var buf bytes.Buffer
	if err := s.tasks.Export(r.Context(), id, &buf); err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", `attachment; filename="`+id+`-bundle.tar.gz"`)
	_, _ = w.Write(buf.Bytes())
}

// statusWriter remembers the status for the record; it keeps Flush for
// the exec stream.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (sw *statusWriter) WriteHeader(code int) {
	if sw.status == 0 {
		sw.status = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	return sw.ResponseWriter.Write(b)
}

func (sw *statusWriter) Flush() {
	if f, ok := sw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Review is what the API uses of the review module (review.Review).
type Review interface {
	// Purge removes what is older than d (results, stored output, audit
	// blobs), keeping the records and the audit chain.
	Purge(ctx context.Context, d time.Duration) (*review.PurgeResult, error)
}

// noReview is a daemon without the review module: nothing is purged.
type noReview struct{}

func (noReview) Purge(context.Context, time.Duration) (*review.PurgeResult, error) {
	return nil, fmt.Errorf("this daemon has no review module: nothing to purge: %w", errdefs.ErrUnsupported)
}
