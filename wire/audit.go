package wire

import (
	"encoding/json"
	"time"
)

// AuditEvent is one event of the daemon's hash-chained audit log.
type AuditEvent struct {
	// Seq is its place in the chain.
	Seq int64 `json:"seq"`
	// Time is when it was recorded.
	Time time.Time `json:"time"`
	// SandboxID is the sandbox it is about, if any.
	SandboxID string `json:"sandbox,omitempty"`
	// TaskID is the task it is about, if any.
	TaskID string `json:"task,omitempty"`
	// ExecID is the exec it is about, if any.
	ExecID string `json:"exec,omitempty"`
	// Project is the project it is of: its sandbox's, else the
	// requester's; none for the daemon's and the operator's own, and
	// for events written before events had a project.
	Project string `json:"project,omitempty"`
	// Actor is who acted: operator, operator:NAME, apikey:ID or airlock.
	Actor string `json:"actor"`
	// Kind is the event's kind (sandbox.create, exec.start, ...).
	Kind string `json:"kind"`
	// Payload is the kind's fields, redacted.
	Payload json.RawMessage `json:"payload"`
	// Prev is the previous event's hash.
	Prev string `json:"prev"`
	// Hash is this event's SHA-256 over a canonical encoding.
	Hash string `json:"hash"`
}

// AuditEventList is the answer of GET /v1/audit.
type AuditEventList struct {
	// Events, in order.
	Events []AuditEvent `json:"events"`
}

// AuditReport is the answer of GET /v1/audit/verify.
type AuditReport struct {
	// Events is how many events were checked.
	Events int64 `json:"events"`
	// Head is the last event's sequence number.
	Head int64 `json:"head_seq"`
	// Hash is the last event's hash.
	Hash string `json:"head_hash"`
	// Blobs is how many blobs were checked.
	Blobs int `json:"blobs"`
	// Purged is how many blobs were purged (and so not checked).
	Purged int `json:"blobs_purged"`
	// Problems are what did not verify; empty: the chain is whole.
	Problems []AuditProblem `json:"problems"`
}

// AuditProblem is one thing in the audit log that did not verify.
type AuditProblem struct {
	// Seq is the event's sequence number.
	Seq int64 `json:"seq"`
	// What says what is wrong.
	What string `json:"what"`
}

// PurgeRequest is the body of POST /v1/purge.
type PurgeRequest struct {
	// OlderThanSeconds: what is older than this is removed.
	OlderThanSeconds int64 `json:"older_than_seconds"`
}

// PurgeResult is the answer of POST /v1/purge.
type PurgeResult struct {
	// Before is the cut-off time.
	Before time.Time `json:"before"`
	// TaskResults is how many finished tasks' results were removed.
	TaskResults int `json:"task_results"`
	// Outputs is how many stored outputs were removed.
	Outputs int64 `json:"outputs"`
	// AuditBlobs is how many audit blobs were removed.
	AuditBlobs int64 `json:"audit_blobs"`
}

// AuditPublicKey is the answer of GET /v1/audit/pubkey: the key that signs
// the daemon's audit checkpoints and review bundles (the daemon also
// writes it next to its key, as audit.pub). Verify bundles with it; the
// private key never leaves the daemon's host.
type AuditPublicKey struct {
	// Algorithm is ed25519.
	Algorithm string `json:"algorithm"`
	// PublicKey is the key, base64 (standard alphabet).
	PublicKey string `json:"public_key"`
}
