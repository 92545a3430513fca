package sdk

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/wire"
)

// AuditEvent is one event of the daemon's hash-chained audit log.
type AuditEvent = wire.AuditEvent

// AuditFilter selects events; zero fields select all. Kind "exec" also
// matches "exec.start", "exec.end", ...
type AuditFilter struct {
	Sandbox, Task, Exec, Kind string
	// Project: only this project's events (the operator's choice; a
	// key's query holds its own project's events only).
	Project      string
	Since, Until time.Time
	After        int64 // events after this sequence number
	Limit        int   // default 1000, at most 10000
}

// AuditReport is the result of recomputing the chain.
type AuditReport = wire.AuditReport

// AuditProblem is one thing in the audit log that did not verify.
type AuditProblem = wire.AuditProblem

// AuditEvents queries the audit log: a reviewer's or admin's key reads
// its project's events, the unix socket every project's.
func (c *Client) AuditEvents(ctx context.Context, f AuditFilter) ([]AuditEvent, error) {
	q := url.Values{}
	for k, v := range map[string]string{"sandbox": f.Sandbox, "task": f.Task, "exec": f.Exec, "kind": f.Kind, "project": f.Project} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	if f.After > 0 {
		q.Set("after", strconv.FormatInt(f.After, 10))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out wire.AuditEventList
	if err := c.call(ctx, http.MethodGet, "/v1/audit", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Events, nil
}

// VerifyAudit has the daemon recompute its whole chain (unix socket only).
func (c *Client) VerifyAudit(ctx context.Context) (*AuditReport, error) {
	var r AuditReport
	if err := c.call(ctx, http.MethodGet, "/v1/audit/verify", nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// AuditPublicKey is the public key that signs the daemon's checkpoints
// and review bundles: what a reviewer verifies a bundle with.
func (c *Client) AuditPublicKey(ctx context.Context) (*wire.AuditPublicKey, error) {
	var k wire.AuditPublicKey
	if err := c.call(ctx, http.MethodGet, "/v1/audit/pubkey", nil, nil, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// TaskBundle writes a task's signed review bundle (tar.gz) to w.
func (c *Client) TaskBundle(ctx context.Context, id string, w io.Writer) (int64, error) {
	if id == "" {
		return 0, invalidf("empty task id")
	}
	p := "/v1/tasks/" + url.PathEscape(id) + "/bundle"
	a, err := c.request(ctx, http.MethodGet, p, nil, nil, "application/gzip", true)
	if err != nil {
		return 0, err
	}
	defer a.close()
	n, err := io.Copy(w, a.Body)
	if err != nil {
		return n, a.readErr("GET "+p, err)
	}
	return n, nil
}

// PurgeResult says what a purge removed.
type PurgeResult = wire.PurgeResult

// Purge removes task results, stored outputs and audit blobs older than d
// (unix socket only); the purge is itself recorded.
func (c *Client) Purge(ctx context.Context, d time.Duration) (*PurgeResult, error) {
	if d <= 0 {
		return nil, invalidf("purge needs a positive age")
	}
	var r PurgeResult
	if err := c.call(ctx, http.MethodPost, "/v1/purge", nil, wire.PurgeRequest{OlderThanSeconds: ceilDiv(d, time.Second)}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
