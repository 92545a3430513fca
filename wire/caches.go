package wire

// CacheEntry is one project's dependency cache of one ecosystem, as
// GET /v1/caches lists them and POST /v1/caches/clear names what it
// removed.
type CacheEntry struct {
	// Project is the repository the cache is kept for (a URL without its
	// credentials, or an absolute local path).
	Project string `json:"project"`
	// Ecosystem is "go", "npm" or "pip".
	Ecosystem string `json:"ecosystem"`
	// Files is how many files the cache holds.
	Files int `json:"files"`
	// Bytes is their total size.
	Bytes int64 `json:"bytes"`
}

// CacheList is the answer of GET /v1/caches.
type CacheList struct {
	// Caches are every project's caches, by project then ecosystem.
	Caches []CacheEntry `json:"caches"`
}

// CacheClearRequest is the body of POST /v1/caches/clear.
type CacheClearRequest struct {
	// Project is the project whose caches go ("": every project's).
	Project string `json:"project,omitempty"`
	// Ecosystem is the ecosystem whose caches go ("": every one).
	Ecosystem string `json:"ecosystem,omitempty"`
}

// CacheClearResult is the answer of POST /v1/caches/clear.
type CacheClearResult struct {
	// Cleared are the caches removed.
	Cleared []CacheEntry `json:"cleared"`
}
