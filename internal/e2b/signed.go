package e2b

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Signed file URLs (the SDKs' files.downloadUrl and uploadUrl): a GET or
// POST of /files that carries no access token but a signature in its
// query, so that a browser or curl can fetch or send one file without
// the sandbox's token. E2B's protocol (SDK source, signature.ts):
//
//	signature = "v1_" + base64(sha256(path ":" op ":" user ":" token [":" exp]))
//
// with the padding cut, op "read" (GET) or "write" (POST), user the
// username parameter ("" without one), token the sandbox's access token
// and exp the signature_expiration parameter (Unix seconds) when there is
// one. Without one the URL lasts as long as the sandbox. The signature
// covers the path parameter exactly as sent (before it is resolved), so
// a URL for one path is refused for any other spelling of it. A signed
// upload without a path writes to the parts' file names, as in E2B: the
// signer granted any path, still under the sandbox's policy.

// sigLen is the length of a well-formed signature: "v1_" and the 43
// characters of an unpadded base64 SHA-256.
const sigLen = 3 + 43

// signedFile is what a signed /files request asks for and how it is
// signed.
type signedFile struct {
	path, op, user string
	sig            string
	exp            *int64 // nil: no expiration
}

// isSigned says whether r is a signed file request: one that names a
// signature. Whether it is well formed is signedOf's to say.
func isSigned(r *http.Request) bool {
	_, ok := r.URL.Query()["signature"]
	return ok
}

// signedOf parses a signed /files request, or says why it cannot be one
// (a message for E2B's 401/400 answer). A parameter given twice is
// refused: the one verified must be the one served.
func signedOf(r *http.Request) (*signedFile, int, string) {
	if r.URL.Path != "/files" {
		return nil, http.StatusUnauthorized, "a signature grants only GET or POST /files: other calls need the sandbox's X-Access-Token"
	}
	sf := &signedFile{}
	switch r.Method {
	case http.MethodGet:
		sf.op = "read"
	case http.MethodPost:
		sf.op = "write"
	default:
		return nil, http.StatusMethodNotAllowed, "a signed /files URL is for GET (download) or POST (upload)"
	}
	q := r.URL.Query()
	for _, k := range []string{"signature", "signature_expiration", "path", "username"} {
		if len(q[k]) > 1 {
			return nil, http.StatusBadRequest, fmt.Sprintf("the %s parameter is given %d times: once", k, len(q[k]))
		}
	}
	sf.path, sf.user, sf.sig = q.Get("path"), q.Get("username"), q.Get("signature")
	if !wellFormed(sf.sig) {
		return nil, http.StatusUnauthorized, "invalid signature"
	}
	if v, ok := q["signature_expiration"]; ok {
		exp, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil || exp < 0 {
			return nil, http.StatusBadRequest, "signature_expiration: Unix seconds"
		}
		sf.exp = &exp
	}
	return sf, 0, ""
}

// wellFormed says whether sig has the shape of a v1 signature, before
// anything is hashed: a huge or odd one costs nothing.
func wellFormed(sig string) bool {
	if len(sig) != sigLen || sig[:3] != "v1_" {
		return false
	}
	_, err := base64.RawStdEncoding.DecodeString(sig[3:])
	return err == nil
}

// signFile is the signature E2B's SDKs make for a file URL.
func signFile(path, op, user, token string, exp *int64) string {
	raw := path + ":" + op + ":" + user + ":" + token
	if exp != nil {
		raw += ":" + strconv.FormatInt(*exp, 10)
	}
	sum := sha256.Sum256([]byte(raw))
	return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// matches says whether sf is signed with token (constant time in the
// signature).
func (sf *signedFile) matches(token string) bool {
	want := signFile(sf.path, sf.op, sf.user, token, sf.exp)
	return subtle.ConstantTimeCompare([]byte(sf.sig), []byte(want)) == 1
}

// expired says whether sf's expiration has passed at now.
func (sf *signedFile) expired(now time.Time) bool {
	return sf.exp != nil && now.Unix() > *sf.exp
}

// checkSigned authorises a signed request to sandbox id: the signature
// must be made with id's token and not have expired, and the sandbox
// must be live (a URL outlives nothing: after kill it is refused). It
// answers the refusal itself; false: refused. It returns the key whose
// token made the signature.
func (s *Server) checkSigned(w http.ResponseWriter, r *http.Request, id string) (string, bool) {
	sf, status, msg := signedOf(r)
	if sf == nil {
		writeAPIError(w, status, msg)
		return "", false
	}
	keyID, ok := s.keyOfToken(id, sf.matches)
	if !ok {
		writeAPIError(w, http.StatusUnauthorized, "invalid signature")
		return "", false
	}
	if sf.expired(time.Now()) {
		writeAPIError(w, http.StatusUnauthorized, "signature is already expired")
		return "", false
	}
	if !s.isLive(r.Context(), id) {
		writeAPIError(w, http.StatusNotFound, fmt.Sprintf("sandbox %s is not running", id))
		return "", false
	}
	return keyID, true
}

// isLive says whether sandbox id exists and has not stopped.
func (s *Server) isLive(ctx context.Context, id string) bool {
	sb, err := s.sbx.Get(ctx, id)
	return err == nil && sb.State != "stopped"
}

// bySignature finds the sandbox a signed request on the shared sandbox
// URL is for: the SDKs build file URLs on E2B_SANDBOX_URL without the
// sandbox's id (they name it only in a header, which a plain fetch of
// the URL does not send), so the id is the one live sandbox whose token
// made the signature. Every live sandbox is tried, each in constant
// time; "": none.
func (s *Server) bySignature(ctx context.Context, sf *signedFile) string {
	found := ""
	for _, st := range []string{"running", "paused"} {
		l, err := s.sbx.List(ctx, st)
		if err != nil {
			s.cfg.Logf("e2b: signed URL: list %s sandboxes: %v", st, err)
			continue
		}
		for _, sb := range l {
			if _, ok := s.keyOfToken(sb.ID, sf.matches); ok && found == "" {
				found = sb.ID
			}
		}
	}
	return found
}

// serveSharedSigned serves a signed /files request that names no
// sandbox (no header, no sandbox host): the signature says which.
func (s *Server) serveSharedSigned(w http.ResponseWriter, r *http.Request) {
	sf, status, msg := signedOf(r)
	if sf == nil {
		writeAPIError(w, status, msg)
		return
	}
	id := s.bySignature(r.Context(), sf)
	if id == "" {
		writeAPIError(w, http.StatusUnauthorized, "invalid signature (it is not the signature of any running sandbox's URL)")
		return
	}
	s.serveEnvd(w, r, id)
}
