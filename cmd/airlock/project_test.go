package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// airlock project and airlock apikey against a daemon: a project, keys
// of it in roles, what ls shows of them, a rotation with an overlap, and
// removing the project, which revokes its keys (checked over TCP).
func TestProjectAndKeyCLI(t *testing.T) {
	e := newEnv(t)
	addr := freePort(t)
	d := e.startDaemon(t, "--listen", addr)
	sock := "--socket=" + d.sock
	must := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, code := e.run("", args...)
		if code != 0 {
			t.Fatalf("airlock %s: exit %d %q %q", strings.Join(args, " "), code, out, errOut)
		}
		return out, errOut
	}
	status := func(key string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/sandboxes", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if out, _ := must("project", "create", sock, "team-a"); out != "team-a\n" {
		t.Errorf("project create: %q", out)
	}
	if _, errOut, code := e.run("", "project", "create", sock, "Team_A"); code == 0 || !strings.Contains(errOut, "lower-case") {
		t.Errorf("a bad name: %d %q", code, errOut)
	}
	out, _ := must("project", "ls", sock)
	if !strings.Contains(out, "PROJECT") || !strings.Contains(out, "team-a") || !strings.Contains(out, "default") {
		t.Errorf("project ls: %q", out)
	}
	out, _ = must("project", "ls", sock, "--json")
	var ps []struct{ ID string }
	if json.Unmarshal([]byte(out), &ps) != nil || len(ps) != 2 {
		t.Errorf("project ls --json: %q", out)
	}
	key, errOut := must("apikey", "create", sock, "--project", "team-a", "--role", "reviewer", "--name", "alice")
	key = strings.TrimSpace(key)
	if !strings.HasPrefix(key, "ak_") || !strings.Contains(errOut, "project team-a, role reviewer") {
		t.Errorf("apikey create: %q %q", key, errOut)
	}
	if _, errOut, code := e.run("", "apikey", "create", sock, "--project", "team-z"); code != 1 || !strings.Contains(errOut, "not_found") {
		t.Errorf("a key of a project that does not exist: %d %q", code, errOut)
	}
	out, _ = must("apikey", "ls", sock, "--json")
	var keys []struct{ ID, Name, Project, Role string }
	if json.Unmarshal([]byte(out), &keys) != nil || len(keys) != 1 || keys[0].Project != "team-a" || keys[0].Role != "reviewer" {
		t.Fatalf("apikey ls --json: %q", out)
	}
	newKey, errOut := must("apikey", "rotate", sock, "--overlap", "1h", keys[0].ID)
	newKey = strings.TrimSpace(newKey)
	if !strings.HasPrefix(newKey, "ak_") || newKey == key || !strings.Contains(errOut, "stops in 1h0m0s") {
		t.Errorf("apikey rotate: %q %q", newKey, errOut)
	}
	out, _ = must("apikey", "ls", sock)
	exp := time.Now().Add(time.Hour).UTC().Format("2006-01-02")
	if !strings.Contains(out, "PROJECT") || !strings.Contains(out, "EXPIRES") || strings.Count(out, "team-a") != 2 || !strings.Contains(out, exp) {
		t.Errorf("apikey ls after the rotation: %q", out)
	}
	if a, b := status(key), status(newKey); a != 200 || b != 200 {
		t.Errorf("the old and new key in the overlap: %d %d", a, b)
	}
	// a project's admin key over TCP (--url): its own project's keys only
	admin, _ := must("apikey", "create", sock, "--project", "team-a", "--role", "admin", "bob")
	must("project", "create", sock, "team-b")
	must("apikey", "create", sock, "--project", "team-b", "carol")
	remote := func(args ...string) (string, string, int) {
		t.Helper()
		c := e.cmd(args...)
		c.Env = append(withoutEnv(c.Env, "AIRLOCK_API_KEY"), "AIRLOCK_API_KEY="+strings.TrimSpace(admin))
		var o, er strings.Builder
		c.Stdout, c.Stderr = &o, &er
		err := c.Run()
		code := 0
		if err != nil {
			code = c.ProcessState.ExitCode()
		}
		return o.String(), er.String(), code
	}
	url := "--url=http://" + addr
	if out, errOut, code := remote("apikey", "ls", url, "--json"); code != 0 || strings.Contains(out, "carol") || strings.Contains(out, "team-b") || !strings.Contains(out, `"bob"`) {
		t.Errorf("apikey ls over TCP as team-a's admin: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := remote("apikey", "create", url, "--role", "agent", "dave"); code != 0 || !strings.HasPrefix(out, "ak_") || !strings.Contains(errOut, "project team-a") {
		t.Errorf("apikey create over TCP: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := remote("apikey", "create", url, "--project", "team-b", "eve"); code != 1 || !strings.Contains(errOut, "not_found") {
		t.Errorf("team-a's admin makes a key of team-b: %d %q", code, errOut)
	}
	if out, errOut, code := remote("project", "ls", url); code != 0 || !strings.Contains(out, "team-a") || strings.Contains(out, "team-b") {
		t.Errorf("project ls over TCP: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := e.run("", "project", "rm", sock, "default"); code == 0 {
		t.Errorf("project rm default: %q", errOut)
	}
	if _, errOut := must("project", "rm", sock, "team-a"); !strings.Contains(errOut, "revoked") {
		t.Errorf("project rm: %q", errOut)
	}
	if a, b, c := status(key), status(newKey), status(strings.TrimSpace(admin)); a != 401 || b != 401 || c != 401 {
		t.Errorf("keys of a removed project: %d %d %d, want 401", a, b, c)
	}
	if out, _ := must("project", "ls", sock); !strings.Contains(out, "team-a") {
		t.Errorf("a removed project is listed with its removal: %q", out)
	}
}
