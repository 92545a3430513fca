package wire

import "time"

// APIKeyRequest is the body of POST /v1/apikeys (optional).
type APIKeyRequest struct {
	// Name is the key's, for the operator.
	Name string `json:"name,omitempty"`
	// Format is "airlock" (the default: ak_...) or "e2b" (e2b_ and 40 hex
	// digits, for the E2B SDKs).
	Format string `json:"format,omitempty"`
	// Project is the key's: "" the caller's own (the operator's: the
	// default project). A project admin makes keys of its own only.
	Project string `json:"project,omitempty"`
	// Role is "agent" (the default), "reviewer" or "admin"; never above
	// the caller's own.
	Role string `json:"role,omitempty"`
}

// APIKeyRotateRequest is the body of POST /v1/apikeys/{id}/rotate
// (optional): a new key like the old, which ends after the overlap.
type APIKeyRotateRequest struct {
	// Format of the new key, as APIKeyRequest's.
	Format string `json:"format,omitempty"`
	// OverlapSeconds: the old key works this long more (0: it ends now;
	// at most 30 days).
	OverlapSeconds int64 `json:"overlap_seconds,omitempty"`
}

// APIKey is an API key's record; Key is set only in the answer that
// created it (its SHA-256 is all the daemon keeps).
type APIKey struct {
	// ID names the key in records (never the key itself).
	ID string `json:"id"`
	// Name is the operator's.
	Name string `json:"name"`
	// Created is when it was made.
	Created time.Time `json:"created"`
	// Project is the one the key acts for.
	Project string `json:"project,omitempty"`
	// Role is what it may do there: agent, reviewer or admin.
	Role string `json:"role,omitempty"`
	// Expires: it stops working then (a rotated key's overlap).
	Expires *time.Time `json:"expires,omitempty"`
	// Key is the key, shown this once.
	Key string `json:"key,omitempty"`
}

// APIKeyList is the answer of GET /v1/apikeys.
type APIKeyList struct {
	// APIKeys are the keys' records.
	APIKeys []APIKey `json:"apikeys"`
}
