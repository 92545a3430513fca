package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2BFilesWithTheRealSDK runs test/node/e2b_files.mjs with the
// published SDK against a real daemon: files.rename, remove of a missing
// path, symlink targets, getMetrics, watchDir refused, and a sandbox
// killed under a running command ending its wait with TimeoutError. It
// runs once per 2.x SDK pinned in test/node/package.json (the 1.x line
// reaches a daemon only by domain and TLS: TestE2BSignedURLsWithTheRealSDK).
func TestE2BFilesWithTheRealSDK(t *testing.T) {
	for _, sdk := range []string{"e2b", "e2b-2-45"} {
		t.Run(sdk, func(t *testing.T) {
			node, dir := nodeClient(t, sdk)
			e := newEnv(t)
			// Commands are not what this tests: a policy that runs them
			// (secret files still refused).
			pf := filepath.Join(filepath.Dir(e.state), "files.yaml")
			pol := "version: 1\nclasses: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: deny, unknown: allow, persist: allow}\n"
			if err := os.WriteFile(pf, []byte(pol), 0o644); err != nil {
				t.Fatal(err)
			}
			addr := freeAddr(t)
			d := e.startDaemon(t, "--policy", pf, "--e2b-listen", addr)
			key, _, code := e.run("", "apikey", "create", "--socket", d.sock, "--e2b", "--name", "e2b-files")
			key = strings.TrimSpace(key)
			if code != 0 {
				t.Fatalf("apikey create: %d %q", code, key)
			}
			cmd := exec.Command(node, filepath.Join(dir, "e2b_files.mjs"))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "E2B_SDK="+sdk, "E2B_API_KEY="+key, "E2B_API_URL=http://"+addr, "E2B_SANDBOX_URL=http://"+addr, "E2B_DEBUG=")
			var o, er bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &er
			if err := cmd.Run(); err != nil || !strings.Contains(o.String(), `{"ok":true}`) {
				t.Fatalf("e2b_files.mjs: %v\nstdout: %s\nstderr: %s\ndaemon: %s", err, o.String(), er.String(), d.log)
			}
			t.Logf("e2b_files.mjs:\n%s", o.String())
		})
	}
}
