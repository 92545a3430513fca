package e2b

import (
	"bytes"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/reqcheck"
)

// FuzzCreateRequest: whatever E2B create body the door accepts, the
// sandbox it asks for has a lifetime in (0, max] under a maximum (and in
// [0, MaxRequestDuration] without one), its timeout count agreeing,
// computed without overflow.
func FuzzCreateRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"templateID":"base","timeout":300}`, `{"timeout":9223372037}`, `{"timeout":18446744074}`, `{"timeout":-1}`,
		`{"metadata":{"k":"v"},"envVars":{"A":"B"}}`,
		`{"network":{"denyOut":["0.0.0.0/0","198.51.100.7:25"],"allowOut":["api.example.test","[2001:db8::1]"]}}`,
		`{"allow_internet_access":false,"network":{"allowOut":["*.example.test"]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, max := range []time.Duration{24 * time.Hour, 0} {
			req, err := parseCreate(bytes.NewReader(body), "host")
			if err != nil {
				continue
			}
			tightensOnly(t, body, req)
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

// tightensOnly fails unless an accepted body's egress layer can only
// narrow the daemon's policy: deny rules alone, no grant, preset or
// secret.
func tightensOnly(t *testing.T, body []byte, req sandbox.CreateRequest) {
	if req.Policy != nil {
		t.Fatalf("%q: a policy layer %+v", body, req.Policy)
	}
	if req.NetworkLayer == nil {
		return
	}
	eg := req.NetworkLayer
	if len(eg.Grant) > 0 || len(eg.Presets) > 0 || len(eg.Secrets) > 0 {
		t.Fatalf("%q: a layer that grants: %+v", body, eg)
	}
	for _, r := range eg.Rules {
		if r.Action != netpolicy.Deny {
			t.Fatalf("%q: a layer with allow rule %+v", body, r)
		}
	}
	if err := eg.Check(); err != nil {
		t.Fatalf("%q: accepted a layer that does not check: %v", body, err)
	}
}

// FuzzNetworkUpdate: whatever updateNetwork body the door accepts, its
// layer only narrows: deny rules alone, no grant, preset or secret, and
// it passes the narrowing check over any ceiling (here, the public web
// and loopback open with one deny rule).
func FuzzNetworkUpdate(f *testing.F) {
	for _, s := range []string{`{}`, `{"allow_internet_access":false}`, `{"allow_internet_access":true,"denyOut":["203.0.113.0/24"]}`,
		`{"denyOut":["0.0.0.0/0","198.51.100.7:25"],"allowOut":["api.example.test","[2001:db8::1]"]}`,
		`{"allow_internet_access":false,"allowOut":["*.example.test"],"rules":{}}`} {
		f.Add([]byte(s))
	}
	ceiling := netpolicy.Policy{Grant: []netpolicy.Category{netpolicy.PublicWeb}, Rules: []netpolicy.Rule{
		{ID: "lo", Action: netpolicy.Allow, CIDRs: []string{"127.0.0.0/8"}},
		{ID: "op-deny", Action: netpolicy.Deny, CIDRs: []string{"127.0.9.0/24"}}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		l, _, err := parseUpdate(bytes.NewReader(body))
		if err != nil || l == nil {
			return
		}
		tightensOnly(t, body, sandbox.CreateRequest{NetworkLayer: l})
		if _, err := ceiling.NarrowedBy(*l); err != nil {
			t.Fatalf("%q: an accepted layer the ceiling refuses: %v", body, err)
		}
	})
}
