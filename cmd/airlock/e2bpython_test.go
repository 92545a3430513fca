package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2BWithThePythonWire drives the E2B door with test/python/e2b_wire.py,
// a client written against the wire shapes of E2B's Python SDK (its
// defaults on create, Connect with JSON for commands and files, /files,
// kill). The published e2b package itself is not run: this machine
// reaches no package index to install it from.
func TestE2BWithThePythonWire(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is missing")
		}
		t.Skip("python3 is missing")
	}
	script, _ := filepath.Abs("../../test/python/e2b_wire.py")
	e := newEnv(t)
	addr := freeAddr(t)
	d := e.startDaemon(t, "--e2b-listen", addr)
	key, _, code := e.run("", "apikey", "create", "--socket", d.sock, "--e2b", "--name", "e2b-python")
	if key = strings.TrimSpace(key); code != 0 {
		t.Fatalf("apikey create --e2b: %d %q", code, key)
	}
	cmd := exec.Command(py, script)
	cmd.Env = append(os.Environ(), "E2B_API_KEY="+key, "E2B_API_URL=http://"+addr, "E2B_SANDBOX_URL=http://"+addr, "PYTHONDONTWRITEBYTECODE=1")
	var o, er bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &er
	if err := cmd.Run(); err != nil || !strings.Contains(o.String(), `{"ok": true}`) {
		t.Fatalf("e2b_wire.py: %v\nstdout: %s\nstderr: %s\ndaemon: %s", err, o.String(), er.String(), d.log)
	}
	t.Logf("e2b_wire.py:\n%s", o.String())
}
