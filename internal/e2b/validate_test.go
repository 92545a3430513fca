package e2b

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/reqcheck"
)

// The E2B door's timeout is seconds too: a count that wraps a Duration
// (9223372037 goes negative, 18446744074 to 0.29 s) is a 400 naming the
// field at create, set-timeout and connect, never a sandbox without an
// expiry under --max-lifetime.
func TestE2BTimeoutOverflowIsRefused(t *testing.T) {
	d := newDoor(t, func(c *stack.Config) { c.MaxLifetime = time.Hour })
	id, _ := d.create()
	hdr := map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"}
	for _, n := range []string{"9223372037", "18446744074", "9223372036854775807"} {
		for _, path := range []string{"/sandboxes", "/v2/sandboxes", "/sandboxes/" + id + "/timeout", "/sandboxes/" + id + "/connect"} {
			body := `{"timeout":` + n + `}`
			if !strings.Contains(path, id) {
				body = `{"templateID":"base","timeout":` + n + `}`
			}
			resp, b := d.call("POST", path, []byte(body), hdr)
			if resp.StatusCode != 400 || !strings.Contains(string(b), "timeout") {
				t.Errorf("POST %s timeout %s: %d %s, want 400 naming timeout", path, n, resp.StatusCode, b)
			}
		}
	}
	list, err := d.m.List(context.Background(), "running")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Errorf("%d sandboxes running, want only the first", len(list))
	}
	for _, sb := range list {
		if sb.Expires == nil || sb.Expires.After(sb.Created.Add(time.Hour)) {
			t.Errorf("sandbox %s expires %v: past the maximum lifetime", sb.ID, sb.Expires)
		}
	}
}

// E2B metadata becomes the sandbox's labels: bounded the same way.
func TestE2BMetadataIsBounded(t *testing.T) {
	d := newDoor(t)
	hdr := map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"}
	resp, b := d.call("POST", "/sandboxes", []byte(`{"metadata":{"k":"`+strings.Repeat("v", reqcheck.MaxLabelValueBytes+1)+`"}}`), hdr)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "metadata") {
		t.Errorf("oversized metadata: %d %s", resp.StatusCode, b)
	}
}
