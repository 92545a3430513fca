package api

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
)

// install_scripts: deny keeps a package's install scripts from running
// (here npm's lifecycle scripts of a local package, offline); a sandbox
// whose policy allows them runs them.
func TestInstallScriptsBlocked(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	f, err := policy.Parse([]byte("classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: deny, unknown: allow}\ninstall_scripts: deny\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := newDaemonWith(t, func(c *stack.Config) { c.Policy = f })
	const setup = `mkdir -p /workspace/pkg /workspace/app && cd /workspace/pkg &&
printf '{"name":"has-script","version":"1.0.0","scripts":{"postinstall":"touch /workspace/SCRIPT_RAN","preinstall":"touch /workspace/PRE_RAN"}}' > package.json &&
cd /workspace/app && printf '{"name":"app","version":"1.0.0"}' > package.json &&
npm install --offline --no-audit --no-fund --loglevel=error ../pkg >/tmp/npm.log 2>&1; echo "npm=$?"; ls /workspace`
	run := func(id string) string {
		_, out, e := d.sh(id, setup, nil)
		if e.Code != "" {
			t.Fatalf("exec: %+v", e)
		}
		return out
	}
	var blocked, allowed manager.Sandbox
	d.do("POST", "/v1/sandboxes", "", &blocked)
	if code := d.do("POST", "/v1/sandboxes", map[string]any{"policy": map[string]any{"install_scripts": "allow"}}, &allowed); code != 201 {
		t.Fatalf("create with install_scripts allow: %d", code)
	}
	if out := run(blocked.ID); !strings.Contains(out, "npm=0") || strings.Contains(out, "SCRIPT_RAN") || strings.Contains(out, "PRE_RAN") {
		t.Fatalf("scripts blocked: %q", out)
	}
	if out := run(allowed.ID); !strings.Contains(out, "npm=0") || !strings.Contains(out, "SCRIPT_RAN") {
		t.Fatalf("scripts allowed: %q", out)
	}
	// The policy says so, and an agent's caller cannot turn it off.
	var p struct {
		Policy struct {
			InstallScripts string `json:"install_scripts"`
		} `json:"policy"`
	}
	d.do("GET", "/v1/sandboxes/"+blocked.ID+"/policy", nil, &p)
	if p.Policy.InstallScripts != "deny" {
		t.Fatalf("effective policy: %+v", p)
	}
	pol, _ := d.m.Policy(context.Background(), blocked.ID)
	if err := pol.Relaxes(policy.Layer{InstallScripts: policy.Allow}); err == nil || !strings.Contains(err.Error(), "install_scripts") {
		t.Fatalf("relaxing install_scripts: %v", err)
	}
}
