package wire

import "time"

// APIKeyRequest is the body of POST /v1/apikeys (optional).
type APIKeyRequest struct {
	// Name is the key's, for the operator.
	Name string `json:"name,omitempty"`
	// Format is "airlock" (the default: ak_...) or "e2b" (e2b_ and 40 hex
	// digits, for the E2B SDKs).
	Format string `json:"format,omitempty"`
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
	// Key is the key, shown this once.
	Key string `json:"key,omitempty"`
}

// APIKeyList is the answer of GET /v1/apikeys.
type APIKeyList struct {
	// APIKeys are the keys' records.
	APIKeys []APIKey `json:"apikeys"`
}
