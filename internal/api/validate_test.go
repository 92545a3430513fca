package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/wire"
)

// An attacker asks for a count that wraps a time.Duration: 9223372037
// seconds is negative once multiplied, and passed every bound, leaving a
// sandbox with no expiry despite --max-lifetime. 18446744074 seconds
// wraps to 0.29 s. Each door answers 400 naming the field, and nothing is
// created.
func TestLifetimeOverflowIsRefusedAtEveryDoor(t *testing.T) {
	d := newDaemonWith(t, func(c *stack.Config) { c.Policy = allowAll; c.MaxLifetime = time.Hour })
	repo, _ := sampleRepo(t)
	var sb sandbox.Sandbox
	if code := d.do("POST", "/v1/sandboxes", `{"ttl_seconds":60}`, &sb); code != 201 {
		t.Fatalf("create: %d", code)
	}
	base := "/v1/sandboxes/" + sb.ID
	for _, n := range []string{"9223372037", "18446744074", "9223372036854775807"} {
		for _, c := range []struct{ path, body, field string }{
			{"/v1/sandboxes", `{"ttl_seconds":` + n + `}`, "ttl_seconds"},
			{"/v1/tasks", `{"repo":"` + repo + `","ttl_seconds":` + n + `}`, "ttl_seconds"},
			{base + "/timeout", `{"ttl_seconds":` + n + `}`, "ttl_seconds"},
			{base + "/exec", `{"argv":["true"],"approval_wait_seconds":` + n + `}`, "approval_wait_seconds"},
			{base + "/exec", `{"argv":["true"],"timeout_ms":` + n + `000}`, "timeout_ms"},
			{base + "/breakglass", `{"reason":"r","for_seconds":` + n + `}`, "for_seconds"},
			{"/v1/purge", `{"older_than_seconds":` + n + `}`, "older_than_seconds"},
		} {
			var e wire.Error
			if code := d.do("POST", c.path, c.body, &e); code != 400 || e.Code != "invalid" || !strings.Contains(e.Message, c.field) {
				t.Errorf("POST %s %s: %d %+v, want 400 invalid naming %s", c.path, c.body, code, e, c.field)
			}
		}
	}
	var list struct{ Sandboxes []sandbox.Sandbox }
	d.do("GET", "/v1/sandboxes?state=running", nil, &list)
	if len(list.Sandboxes) != 1 {
		t.Errorf("%d sandboxes running, want only the first", len(list.Sandboxes))
	}
	for _, s := range list.Sandboxes {
		if s.Expires == nil || s.Expires.After(s.Created.Add(time.Hour)) {
			t.Errorf("sandbox %s expires %v: past the maximum lifetime", s.ID, s.Expires)
		}
	}
}

// A NUL byte is cut by the kernel: what would run is not what was asked
// for and recorded. It is a bad request naming the field, not a 500.
func TestNULInExecIsABadRequest(t *testing.T) {
	d := newDaemon(t)
	var sb sandbox.Sandbox
	if code := d.do("POST", "/v1/sandboxes", "", &sb); code != 201 {
		t.Fatalf("create: %d", code)
	}
	for body, field := range map[string]string{
		`{"argv":["/bin/echo","a\u0000b"]}`:      "argv[1]",
		`{"argv":["/bin/ec\u0000ho"]}`:           "argv[0]",
		`{"argv":["true"],"env":["A=b\u0000c"]}`: "env[0]",
		`{"argv":["true"],"cwd":"/tmp\u0000x"}`:  "cwd",
	} {
		var e wire.Error
		if code := d.do("POST", "/v1/sandboxes/"+sb.ID+"/exec", body, &e); code != 400 || e.Code != "invalid" || !strings.Contains(e.Message, field) {
			t.Errorf("exec %s: %d %+v, want 400 naming %s", body, code, e, field)
		}
	}
	var e wire.Error
	if code := d.do("PUT", "/v1/sandboxes/"+sb.ID+"/files?path=/tmp/a%00b", "x", &e); code != 400 || !strings.Contains(e.Message, "path") {
		t.Errorf("a path with a NUL: %d %+v", code, e)
	}
}

// Labels are stored with the sandbox and shown in every listing: their
// count and sizes are bounded.
func TestLabelsAreBounded(t *testing.T) {
	d := newDaemon(t)
	many := map[string]string{}
	for i := range reqcheck.MaxLabels + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for _, labels := range []map[string]string{
		many,
		{strings.Repeat("k", reqcheck.MaxLabelKeyBytes+1): "v"},
		{"k": strings.Repeat("v", reqcheck.MaxLabelValueBytes+1)},
		{"k": "line\nbreak"},
	} {
		var e wire.Error
		if code := d.do("POST", "/v1/sandboxes", map[string]any{"labels": labels}, &e); code != 400 || !strings.Contains(e.Message, "labels") {
			t.Errorf("%d labels: %d %+v, want 400 naming labels", len(labels), code, e)
		}
	}
}
