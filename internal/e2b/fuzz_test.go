package e2b

import (
	"bytes"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/reqcheck"
)

// FuzzCreateRequest: whatever E2B create body the door accepts, the
// sandbox it asks for has a lifetime in (0, max] under a maximum (and in
// [0, MaxRequestDuration] without one), its timeout count agreeing,
// computed without overflow.
func FuzzCreateRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"templateID":"base","timeout":300}`, `{"timeout":9223372037}`, `{"timeout":18446744074}`, `{"timeout":-1}`,
		`{"metadata":{"k":"v"},"envVars":{"A":"B"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, max := range []time.Duration{24 * time.Hour, 0} {
			req, err := parseCreate(bytes.NewReader(body), "host")
			if err != nil {
				continue
			}
			ttl, err := sandbox.CheckCreate(req, max)
			if err != nil {
				continue // Create refuses it: a 400, never a sandbox
			}
			bound := max
			if bound == 0 {
				bound = reqcheck.MaxDuration
			}
			if req.TTLSeconds < 0 || req.TTLSeconds > int64(bound/time.Second) || ttl < 0 || ttl > bound || (max > 0 && ttl == 0) {
				t.Fatalf("%q: accepted with timeout %d, lifetime %s under a maximum of %s", body, req.TTLSeconds, ttl, max)
			}
		}
	})
}
