package main

import (
	"strings"
	"testing"
)

// The secret verbs against a real daemon: the value comes from stdin, is
// never printed back, and reaches only the granted sandbox.
func TestSecretCLI(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	const val = "cli-secret-0123456789abcdef"
	if out, errOut, code := e.run(val+"\n", "secret", "set", "--socket", d.sock, "API_TOKEN"); code != 0 || strings.Contains(out+errOut, val) {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := e.run("", "secret", "set", "--socket", d.sock, "EMPTY"); code != 2 || !strings.Contains(errOut, "empty") {
		t.Fatalf("set with no value: %d %q", code, errOut)
	}
	out, _, _ := e.run("", "secret", "ls", "--socket", d.sock)
	if !strings.Contains(out, "API_TOKEN") || strings.Contains(out, val) {
		t.Fatalf("ls: %q", out)
	}
	id1 := strings.TrimSpace(mustRun(t, e, "", "sandbox", "create", "--socket", d.sock))
	id2 := strings.TrimSpace(mustRun(t, e, "", "sandbox", "create", "--socket", d.sock))
	if _, errOut, code := e.run("", "secret", "grant", "--socket", d.sock, "API_TOKEN", "--sandbox", id1); code != 2 || !strings.Contains(errOut, "--host") {
		t.Fatalf("grant without hosts: %d %q", code, errOut)
	}
	out, errOut, code := e.run("", "secret", "grant", "--socket", d.sock, "API_TOKEN", "--sandbox", id1, "--host", "api.example.test", "--for", "10m")
	if code != 0 || !strings.Contains(out, "as $API_TOKEN (env) for api.example.test") {
		t.Fatalf("grant: %d %q %q", code, out, errOut)
	}
	check := `test "$API_TOKEN" = '` + val + `' && echo has-it || echo "[$API_TOKEN]"`
	if out := mustRun(t, e, "", "sandbox", "exec", "--socket", d.sock, id1, "--", "/bin/sh", "-c", check); out != "has-it\n" {
		t.Fatalf("granted sandbox: %q", out)
	}
	if out := mustRun(t, e, "", "sandbox", "exec", "--socket", d.sock, id2, "--", "/bin/sh", "-c", check); out != "[]\n" {
		t.Fatalf("other sandbox: %q", out)
	}
	// a grant id is written sg-..., as every other id has its dash
	grant := strings.TrimSpace(out[strings.LastIndex(out, ": ")+2:])
	if !strings.HasPrefix(grant, "sg-") {
		t.Errorf("grant id %q, want sg-...", grant)
	}
	out, _, _ = e.run("", "secret", "grants", "--socket", d.sock, "--sandbox", id1)
	if !strings.Contains(out, "API_TOKEN") || !strings.Contains(out, "active") || !strings.Contains(out, grant) {
		t.Fatalf("grants: %q", out)
	}
}

func mustRun(t *testing.T, e *env, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := e.run(stdin, args...)
	if code != 0 {
		t.Fatalf("airlock %s: %d %s", strings.Join(args, " "), code, errOut)
	}
	return out
}
