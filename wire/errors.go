package wire

import "net/http"

// Error codes (Error.Code). The first ones are the kinds of every error;
// the policy codes say why a command was stopped.
const (
	CodeInvalid       = "invalid"
	CodeNotFound      = "not_found"
	CodeConflict      = "conflict"
	CodeDenied        = "denied"
	CodeLimitExceeded = "limit_exceeded"
	CodeUnsupported   = "unsupported"
	CodeInternal      = "internal"
	// CodePending: the operation waits for an approval that was not given.
	CodePending = "pending"
	// CodeTimeout: the operation or its request body took too long.
	CodeTimeout = "timeout"
	// CodeUnauthenticated: a TCP request without a valid API key.
	CodeUnauthenticated = "unauthenticated"
	// CodeQuotaExceeded: a create or command past one of its project's
	// quotas (Error.Quota says which, with the figures); 429.
	CodeQuotaExceeded = "quota_exceeded"
	// CodeRateLimited: an API key sent more requests than the daemon's
	// rate per key (airlock serve --key-rate); 429 with Retry-After.
	CodeRateLimited = "rate_limited"

	// The policy's refusals of a command: denied by the policy or by a
	// human, held for approval (not waited for), not approved in time.
	CodePolicyDenied    = "policy_denied"
	CodeApprovalDenied  = "approval_denied"
	CodeApprovalPending = "approval_pending"
	CodeApprovalTimeout = "approval_timeout"
)

// Status is the HTTP status an error of the given kind is answered with
// (internal/api decides statuses here; a body too large is 413 instead).
func Status(code string) int {
	switch code {
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict:
		return http.StatusConflict
	case CodeDenied:
		return http.StatusForbidden
	case CodeLimitExceeded, CodeQuotaExceeded, CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeUnsupported:
		return http.StatusNotImplemented
	case CodePending:
		// Not an acceptance: nothing ran. The code (approval_pending) and
		// approval_id say what to wait for before retrying.
		return http.StatusForbidden
	case CodeTimeout:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// Error is the body of every error answer.
type Error struct {
	// Code is the error's code (the tables of Errors above; the Code
	// constants).
	Code string `json:"code"`
	// Message is one line, safe to show.
	Message string `json:"message"`
	// Rules are the ids of the policy rules that stopped a command.
	Rules []string `json:"rules,omitempty"`
	// ApprovalID names the approval a command is held for (or was refused
	// by).
	ApprovalID string `json:"approval_id,omitempty"`
	// Quota is the quota a quota_exceeded answer hit, with the project's
	// usage of it.
	Quota *QuotaHit `json:"quota,omitempty"`
}

// QuotaHit is the quota a create or command would have passed. Figures
// are bytes for memory_bytes and disk_bytes, cores for cpus, and counts
// otherwise.
type QuotaHit struct {
	// Project is the project whose quota it is.
	Project string `json:"project"`
	// Name is the quota's: sandboxes, memory_bytes, cpus, disk_bytes,
	// execs_per_minute or stored_output_bytes.
	Name string `json:"name"`
	// Limit is the quota in force.
	Limit float64 `json:"limit"`
	// Used is what the project holds now (its live sandboxes' limits, or
	// the commands it started in the last 60 seconds).
	Used float64 `json:"used"`
	// Asked is what the refused request would have added.
	Asked float64 `json:"asked"`
}
