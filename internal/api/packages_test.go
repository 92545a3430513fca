package api

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/store"
)

// install_scripts: deny keeps a package's install scripts from running
// (here npm's lifecycle scripts of a local package, offline); a sandbox
// whose policy allows them runs them.
func TestInstallScriptsBlocked(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	f, err := policy.Parse([]byte("classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: deny, unknown: allow, persist: allow}\ninstall_scripts: deny\n"))
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
	var blocked, allowed sandbox.Sandbox
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
	pol, _ := d.mods.Policies.Policy(context.Background(), blocked.ID)
	if err := pol.Relaxes(policy.Layer{InstallScripts: policy.Allow}); err == nil || !strings.Contains(err.Error(), "install_scripts") {
		t.Fatalf("relaxing install_scripts: %v", err)
	}
}

// Threat model, evidence: a dependency's install script that plants
// git hooks (and a shell startup file) is on the record and flagged; a
// blocked script is recorded as blocked; a command line that turns
// scripts back on against the policy is named as the override (issue
// 19: 18 .git/hooks files were written and nothing flagged it).
func TestInstallScriptEvidence(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	f, err := policy.Parse([]byte("classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: deny, unknown: allow, persist: allow}\ninstall_scripts: deny\n"))
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	var log *audit.Log
	d := newDaemonWith(t, func(c *stack.Config) {
		l, err := audit.Open(context.Background(), audit.Config{Store: c.Store, Redactor: red, KeyFile: filepath.Join(t.TempDir(), "audit.key")})
		if err != nil {
			t.Fatal(err)
		}
		c.Policy, c.Audit, c.Redactor, log = f, l, red, l
	})
	// The package, packed as a registry's would be: its postinstall
	// writes a pre-commit hook and ~/.bashrc.
	const pack = `mkdir -p /workspace/.git/hooks /workspace/pkg && cd /workspace/pkg &&
printf '{"name":"evil-hooks","version":"1.0.0","scripts":{"postinstall":"echo x > /workspace/.git/hooks/pre-commit; echo y >> /home/sandbox/.bashrc"}}' > package.json &&
npm pack --loglevel=error >/dev/null && mv evil-hooks-1.0.0.tgz /workspace/ && cd /workspace && printf '{"name":"app","version":"1.0.0"}' > package.json`
	evidence := func(id, install string) (scripts []map[string]any, writes []string) {
		t.Helper()
		if _, out, e := d.sh(id, pack, nil); e.Code != "" {
			t.Fatalf("pack: %+v %q", e, out)
		}
		if _, out, e := d.sh(id, "cd /workspace && "+install+" --offline --no-audit --no-fund --loglevel=error ./evil-hooks-1.0.0.tgz >/tmp/npm.log 2>&1; echo npm=$?", nil); e.Code != "" || !strings.Contains(out, "npm=0") {
			t.Fatalf("%s: %+v %q", install, e, out)
		}
		evs, err := log.Query(context.Background(), store.AuditFilter{SandboxID: id, Kind: "package"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			var p struct {
				Writes  []string       `json:"writes"`
				Scripts map[string]any `json:"install_scripts"`
			}
			_ = json.Unmarshal(ev.Payload, &p)
			writes = append(writes, p.Writes...)
			if p.Scripts != nil {
				scripts = append(scripts, p.Scripts)
			}
		}
		return scripts, writes
	}
	var allowed, blocked, overridden sandbox.Sandbox
	d.do("POST", "/v1/sandboxes", map[string]any{"policy": map[string]any{"install_scripts": "allow"}}, &allowed)
	d.do("POST", "/v1/sandboxes", "", &blocked)
	d.do("POST", "/v1/sandboxes", "", &overridden)

	scripts, writes := evidence(allowed.ID, "npm install")
	if len(scripts) != 1 || fmt.Sprint(scripts[0]["packages"]) != "[evil-hooks@1.0.0]" || scripts[0]["ran"] != true {
		t.Errorf("a script that ran: %v", scripts)
	}
	if !slices.Contains(writes, "/workspace/.git/hooks/pre-commit") || !slices.Contains(writes, "/home/sandbox/.bashrc") {
		t.Errorf("flagged writes %q", writes)
	}
	scripts, writes = evidence(blocked.ID, "npm install")
	if len(scripts) != 1 || scripts[0]["ran"] != false || len(writes) != 0 {
		t.Errorf("a blocked script: %v, writes %q", scripts, writes)
	}
	scripts, writes = evidence(overridden.ID, "npm install --ignore-scripts=false")
	if len(scripts) != 1 || scripts[0]["ran"] != true || scripts[0]["override"] != true || !slices.Contains(writes, "/workspace/.git/hooks/pre-commit") {
		t.Errorf("an override: %v, writes %q", scripts, writes)
	}
}
