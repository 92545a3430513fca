package e2b

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/quotas"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// The attack: one key floods the E2B door's control plane. Past its
// burst it is answered 429 in E2B's error shape ({code, message}, which
// the SDKs raise as a rate limit) with Retry-After, before anything runs:
// the refused create makes no sandbox. Another key, of the same project
// or another, is not held back.
func TestE2BKeyRateLimit(t *testing.T) {
	td := newTenantDoor(t)
	td.srv.cfg.Rates = quotas.NewKeyRates(quotas.Rate{PerSecond: 0.001, Burst: 3}, nil)
	red := td.keys["proj-red"][tenant.Agent]
	hdr := func(key string) map[string]string {
		return map[string]string{"X-API-KEY": key, "Content-Type": "application/json"}
	}
	for i := range 3 {
		if resp, b := td.call("GET", "/v2/sandboxes", nil, hdr(red)); resp.StatusCode != 200 {
			t.Fatalf("request %d within the burst: %d %s", i, resp.StatusCode, b)
		}
	}
	resp, b := td.call("POST", "/v2/sandboxes", []byte(`{"templateID":"base","timeout":300}`), hdr(red))
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if resp.StatusCode != 429 || json.Unmarshal(b, &e) != nil || e.Code != 429 || !strings.Contains(e.Message, "rate") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("past the burst: %d %s retry %q", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	resp, b = td.call("GET", "/v2/sandboxes", nil, hdr(td.keys["proj-red"][tenant.Reviewer]))
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("another key of the project: %d %s (the refused create must make no sandbox)", resp.StatusCode, b)
	}
	if resp, _ := td.call("GET", "/v2/sandboxes", nil, hdr(td.keys["proj-blue"][tenant.Agent])); resp.StatusCode != 200 {
		t.Errorf("another project's key was held back: %d", resp.StatusCode)
	}
}
