package e2b

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"

	"github.com/airlock-dev/airlock/internal/tenant"
)

// A sandbox's access token (envdAccessToken) is made for the key it was
// handed to, by create, connect, getInfo or fork: the HMAC of both. A
// call of the in-sandbox API with it acts as that key (its project and
// role, its id as the record's actor, so a reviewer never approves a
// command it ran there), and stops working, streams included, once the
// key is revoked or expires (issue 22). Which keys were handed a
// sandbox's token is kept in memory: a daemon's restart ends every
// sandbox, and its token key is new.

// handed is, per sandbox, the keys its token was handed to.
type handed struct {
	mu sync.Mutex
	m  map[string]map[string]bool
}

func (h *handed) add(sandboxID, keyID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]map[string]bool{}
	}
	if h.m[sandboxID] == nil {
		h.m[sandboxID] = map[string]bool{}
	}
	h.m[sandboxID][keyID] = true
}

func (h *handed) keys(sandboxID string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.m[sandboxID]))
	for k := range h.m[sandboxID] {
		out = append(out, k)
	}
	return out
}

// prune forgets the sandboxes not in keep (the live ones).
func (h *handed) prune(keep map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.m {
		if !keep[id] {
			delete(h.m, id)
		}
	}
}

// token is sandbox sandboxID's access token for key keyID.
func (s *Server) token(sandboxID, keyID string) string {
	h := hmac.New(sha256.New, s.tokenKey)
	h.Write([]byte("envd-access\x00" + sandboxID + "\x00" + keyID))
	return "ea_" + hex.EncodeToString(h.Sum(nil))
}

// handTo is the token of sandbox id for the caller of ctx's key, noted
// as handed to it.
func (s *Server) handTo(ctx context.Context, id string) string {
	keyID := tenant.Of(ctx).KeyID
	s.handed.add(id, keyID)
	return s.token(id, keyID)
}

// keyOfToken is the key that sandbox id's token matching match was
// handed to; every handed key is tried, each in constant time.
func (s *Server) keyOfToken(id string, match func(token string) bool) (string, bool) {
	found, ok := "", false
	for _, k := range s.handed.keys(id) {
		if match(s.token(id, k)) && !ok {
			found, ok = k, true
		}
	}
	return found, ok
}

// tokenIs matches a token presented in a header.
func tokenIs(presented string) func(string) bool {
	return func(t string) bool { return subtle.ConstantTimeCompare([]byte(presented), []byte(t)) == 1 }
}
