package review

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/bundle"
)

// A bundle's network requests are read from the egress record: one per
// CONNECT or request, the bytes and status of its connection added from
// its close or response, a refusal after it opened (SNI) shown as the
// decision, and counted refusals as one entry with their count; what is
// not a request (DNS, an unreadable payload) is left out.
func TestNetworkRequestsFromTheEgressRecord(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	id := r.sandbox(t)
	now := time.Now().UTC().Truncate(time.Second)
	for _, e := range []struct {
		kind string
		p    map[string]any
	}{
		{"egress.connect", map[string]any{"time": now, "exec": "e-1", "conn": 1, "decision": "allow", "rule": "preset:npm", "host": "registry.example.test", "port": 443}},
		{"egress.close", map[string]any{"conn": 1, "bytes_up": 10, "bytes_down": 200}},
		{"egress.request", map[string]any{"time": now, "exec": "e-1", "conn": 2, "decision": "allow", "method": "GET", "host": "plain.example.test", "port": 80}},
		{"egress.response", map[string]any{"conn": 2, "status": 200, "bytes_down": 5}},
		{"egress.connect", map[string]any{"time": now, "conn": 3, "decision": "allow", "host": "sni.example.test", "port": 443}},
		{"egress.close", map[string]any{"conn": 3, "decision": "deny", "rule": "sni"}},
		{"egress.close", map[string]any{"conn": 99, "bytes_up": 1}}, // of no request
		{"egress.refused.summary", map[string]any{"of": "egress.connect", "last": now, "host": "no.example.test", "port": 443, "count": 7}},
		{"egress.refused.summary", map[string]any{"of": "egress.dns", "count": 3}},
		{"egress.dns", map[string]any{"host": "dns.example.test"}},
	} {
		r.record(t, audit.Entry{SandboxID: id, Kind: e.kind, Payload: e.p})
	}
	got, err := r.rv.networkRequests(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []bundle.NetworkRequest{
		{Time: now, ExecID: "e-1", Host: "registry.example.test", Port: 443, Method: "CONNECT", Decision: "allow", Rule: "preset:npm", BytesOut: 10, BytesIn: 200},
		{Time: now, ExecID: "e-1", Host: "plain.example.test", Port: 80, Method: "GET", Decision: "allow", Status: 200, BytesIn: 5},
		{Time: now, Host: "sni.example.test", Port: 443, Method: "CONNECT", Decision: "deny", Rule: "sni"},
		{Time: now, Host: "no.example.test", Port: 443, Method: "CONNECT", Decision: "deny", Count: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("requests: %+v", got)
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) {
			t.Errorf("%d: time %v", i, got[i].Time)
		}
		got[i].Time = want[i].Time
		if got[i] != want[i] {
			t.Errorf("%d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	// None: an empty list, never nil (no request could leave).
	if got, err := r.rv.networkRequests(ctx, r.sandbox(t)); err != nil || got == nil || len(got) != 0 {
		t.Errorf("no requests: %v %v", got, err)
	}
}
