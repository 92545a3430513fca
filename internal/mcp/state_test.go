package mcp_test

import (
	"strings"
	"testing"
)

// snapshot_sandbox keeps a sandbox's files as a template; create_sandbox
// from it restores them; reset_sandbox goes back to its template's files
// (the snapshot's, or none for the host template). Bad names, the
// built-in templates and an existing snapshot (over TCP only new ones)
// are refused with the daemon's reason.
func TestResetAndSnapshot(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/a.txt", "content": "one\n"})
	s := e.ok("snapshot_sandbox", map[string]any{"sandbox_id": sb, "name": "mcp-snap"})
	if s.st["template"] != "mcp-snap" || num(t, s.st, "bytes") <= 0 || !strings.Contains(s.text, "create_sandbox with this template starts from them") {
		t.Fatalf("snapshot: %q %v", s.text, s.st)
	}

	restored, _ := e.ok("create_sandbox", map[string]any{"template": "mcp-snap"}).st["sandbox_id"].(string)
	if r := e.ok("read_file", map[string]any{"sandbox_id": restored, "path": "/workspace/a.txt"}); !strings.Contains(r.text, "one") {
		t.Fatalf("restored: %q", r.text)
	}
	e.ok("write_file", map[string]any{"sandbox_id": restored, "path": "/workspace/a.txt", "content": "two\n"})
	e.ok("write_file", map[string]any{"sandbox_id": restored, "path": "/workspace/b.txt", "content": "new\n"})
	r := e.ok("reset_sandbox", map[string]any{"sandbox_id": restored})
	if r.st["sandbox_id"] != restored || r.st["template"] != "mcp-snap" || r.st["state"] != "running" || !strings.Contains(r.text, "started over from template mcp-snap") {
		t.Errorf("reset: %q %v", r.text, r.st)
	}
	if r := e.ok("read_file", map[string]any{"sandbox_id": restored, "path": "/workspace/a.txt"}); !strings.Contains(r.text, "one") || strings.Contains(r.text, "two") {
		t.Errorf("after reset a.txt: %q", r.text)
	}
	e.fails("read_file", map[string]any{"sandbox_id": restored, "path": "/workspace/b.txt"}, "not_found")

	e.ok("reset_sandbox", map[string]any{"sandbox_id": sb})
	e.fails("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/a.txt"}, "not_found")

	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"sandbox_id": sb, "name": ""}, `argument "name" must not be empty`},
		{map[string]any{"sandbox_id": sb}, `missing properties: ["name"]`},
		{map[string]any{"sandbox_id": sb, "name": "../etc"}, `invalid: snapshot name "../etc"`},
		{map[string]any{"sandbox_id": sb, "name": "host"}, `conflict: "host" is a built-in template`},
		{map[string]any{"sandbox_id": sb, "name": "mcp-snap"}, `snapshot template "mcp-snap" exists`},
		{map[string]any{"sandbox_id": "0123456789ab", "name": "other"}, "not_found"},
		{map[string]any{"sandbox_id": sb, "name": "x", "overwrite": true}, `validating "arguments"`},
	} {
		e.fails("snapshot_sandbox", c.args, c.want)
	}
	e.fails("reset_sandbox", map[string]any{"sandbox_id": ""}, `argument "sandbox_id" must not be empty`)
	e.fails("reset_sandbox", map[string]any{"sandbox_id": "0123456789ab"}, "not_found")
	e.fails("reset_sandbox", map[string]any{}, `missing properties: ["sandbox_id"]`)
}
