package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2BLifecycleWithTheRealSDK runs test/node/e2b_lifecycle.mjs with
// the published SDK against a real daemon: lifecycle onTimeout 'pause'
// (its timeout pauses the sandbox; getInfo, list and isRunning say so;
// calls into it are refused; connect resumes it with a new timeout, its
// files and processes as they were), autoResume, and the refusals. It
// runs once per 2.x SDK pinned in test/node/package.json (1.x has no
// lifecycle: it sends autoPause false on every create), and, with the
// newest, a daemon whose --max-lifetime destroys a sandbox its timeout
// paused.
func TestE2BLifecycleWithTheRealSDK(t *testing.T) {
	for _, c := range []struct{ sdk, part, maxLife string }{
		{"e2b", "", ""},
		{"e2b-2-45", "", ""},
		{"e2b", "maxlife", "4s"},
	} {
		name := c.sdk
		if c.part != "" {
			name += "-" + c.part
		}
		t.Run(name, func(t *testing.T) {
			node, dir := nodeClient(t, c.sdk)
			e := newEnv(t)
			// Commands are not what this tests: a policy that runs them.
			pf := filepath.Join(filepath.Dir(e.state), "lifecycle.yaml")
			pol := "version: 1\nclasses: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: deny, unknown: allow, persist: allow}\n"
			if err := os.WriteFile(pf, []byte(pol), 0o644); err != nil {
				t.Fatal(err)
			}
			addr := freeAddr(t)
			args := []string{"--policy", pf, "--e2b-listen", addr}
			if c.maxLife != "" {
				args = append(args, "--max-lifetime", c.maxLife)
			}
			d := e.startDaemon(t, args...)
			key, _, code := e.run("", "apikey", "create", "--socket", d.sock, "--e2b", "--name", "e2b-lifecycle")
			key = strings.TrimSpace(key)
			if code != 0 {
				t.Fatalf("apikey create: %d %q", code, key)
			}
			cmd := exec.Command(node, filepath.Join(dir, "e2b_lifecycle.mjs"))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "E2B_SDK="+c.sdk, "E2B_LIFECYCLE="+c.part, "E2B_API_KEY="+key, "E2B_API_URL=http://"+addr, "E2B_SANDBOX_URL=http://"+addr, "E2B_DEBUG=")
			var o, er bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &er
			if err := cmd.Run(); err != nil || !strings.Contains(o.String(), `{"ok":true}`) {
				t.Fatalf("e2b_lifecycle.mjs: %v\nstdout: %s\nstderr: %s\ndaemon: %s", err, o.String(), er.String(), d.log)
			}
			t.Logf("e2b_lifecycle.mjs:\n%s", o.String())
		})
	}
}
