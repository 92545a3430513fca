package api

import (
	"bytes"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/reqcheck"
)

// fuzzMaxLifetimes: a daemon with serve's default bound, and one without.
var fuzzMaxLifetimes = []time.Duration{24 * time.Hour, 0}

// boundedLifetime fails t unless a request the decoder accepted gets a
// lifetime in (0, max] (or [0, MaxRequestDuration] with no max), as
// Create computes it, and its count agrees, computed without overflow.
func boundedLifetime(t *testing.T, body []byte, ttlSeconds int64, req sandbox.CreateRequest, max time.Duration) {
	t.Helper()
	ttl, err := sandbox.CheckCreate(req, max)
	if err != nil {
		t.Fatalf("%q: the decoder accepted what Create refuses: %v", body, err)
	}
	bound := max
	if bound == 0 {
		bound = reqcheck.MaxDuration
	}
	if ttlSeconds < 0 || ttlSeconds > int64(bound/time.Second) {
		t.Fatalf("%q: ttl_seconds %d accepted under a bound of %s", body, ttlSeconds, bound)
	}
	if ttl < 0 || ttl > bound || (max > 0 && ttl == 0) {
		t.Fatalf("%q: accepted with a lifetime of %s under a maximum of %s", body, ttl, max)
	}
	if req.Limits.Lifetime < 0 || req.Limits.Lifetime > bound {
		t.Fatalf("%q: limits.lifetime %s accepted under a bound of %s", body, req.Limits.Lifetime, bound)
	}
}

func FuzzCreateRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"ttl_seconds":9223372037}`, `{"ttl_seconds":18446744074}`, `{"ttl_seconds":3600,"limits":{"lifetime":-1}}`,
		`{"limits":{"memory_bytes":-1,"cpus":1e308}}`, `{"labels":{"a":"b"},"env":["A=B"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, max := range fuzzMaxLifetimes {
			req, err := parseCreate(bytes.NewReader(body), max)
			if err != nil {
				continue
			}
			boundedLifetime(t, body, req.TTLSeconds, req, max)
		}
	})
}

func FuzzTaskRequest(f *testing.F) {
	for _, s := range []string{`{"repo":"/r"}`, `{"repo":"/r","ttl_seconds":9223372037}`, `{"repo":"/r","ttl_seconds":-1}`, `{"repo":"/r","limits":{"lifetime":9223372036854775807}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, max := range fuzzMaxLifetimes {
			req, err := parseTask(bytes.NewReader(body), max)
			if err != nil {
				continue
			}
			// The sandbox StartTask asks Create for.
			boundedLifetime(t, body, req.TTLSeconds, sandbox.CreateRequest{Limits: req.Limits, TTLSeconds: req.TTLSeconds}, max)
		}
	})
}
