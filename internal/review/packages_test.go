package review

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/policy"
)

// lockV3 is an npm lockfile pinning left-pad at version.
func lockV3(version string) string {
	return `{"name":"app","lockfileVersion":3,"packages":{"":{"name":"app"},"node_modules/left-pad":{"version":"` + version + `"}}}`
}

// A dependency command (here one the policy reads as an npm install,
// never run: the test reaches no registry) gets its lockfiles compared
// before and after: a package.change per lockfile that changed, with
// the packages, the hashes, the diff and the registry hosts its exec
// reached; a command that changes nothing, or is no dependency
// command, records none.
func TestPackageEvidenceRecordsLockfileChanges(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	id := r.sandbox(t)
	const install = "if false; then npm install left-pad; fi; "
	r.sh(t, id, "printf '%s' '"+lockV3("1.0.0")+"' > package-lock.json")
	if got := r.events(t, id, "package.change"); len(got) != 0 {
		t.Fatalf("a plain write is no dependency change: %v", got)
	}
	// In the background: its exec id is known while it runs, for the
	// egress note the network module would make.
	execID, _, err := r.m.Exec(ctx, id, sandbox.ExecRequest{Background: true, NoWait: true,
		Argv: []string{"sh", "-c", install + "sleep 0.3; printf '%s' '" + lockV3("1.3.0") + "' > package-lock.json"}}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.rv.c.NoteEgress(execID, "registry.example.test")
	r.rv.c.NoteEgress(execID, "") // nothing to note
	r.rv.c.NoteEgress("", "other.example.test")
	var got []map[string]any
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = r.events(t, id, "package.change")
	}
	if len(got) != 1 {
		t.Fatalf("package.change events: %v", got)
	}
	p := got[0]
	if p["_exec"] != execID || p["lockfile"] != "/workspace/package-lock.json" || p["manager"] != "npm" || !strings.Contains(p["command"].(string), "npm install left-pad") {
		t.Errorf("event: %v", p)
	}
	if regs, _ := p["registries"].([]any); len(regs) != 1 || regs[0] != "registry.example.test" {
		t.Errorf("registries: %v", p["registries"])
	}
	if p["before_sha256"] == "" || p["after_sha256"] == "" || p["before_sha256"] == p["after_sha256"] || p["changes"] == nil || p["diff"] == nil {
		t.Errorf("hashes, changes, diff: %v", p)
	}
	// Nothing changed: nothing recorded.
	r.sh(t, id, install+"true")
	if got := r.events(t, id, "package.change"); len(got) != 1 {
		t.Errorf("an install that changed nothing: %v", got)
	}
	// A lockfile that cannot be parsed is recorded with why.
	r.sh(t, id, install+"printf 'not json' > package-lock.json")
	got = r.events(t, id, "package.change")
	if len(got) != 2 || got[1]["parse_error"] == nil || got[1]["changes"] != nil {
		t.Errorf("an unparsable lockfile: %v", got)
	}
	// Removed: every package goes.
	r.sh(t, id, install+"rm package-lock.json")
	if got = r.events(t, id, "package.change"); len(got) != 3 || got[2]["after_sha256"] != "" {
		t.Errorf("a removed lockfile: %v", got)
	}
}

// install_scripts: deny sets the package managers' no-scripts env for
// every command, which is not the caller's: its names are not on the
// exec's record. A policy that allows them sets nothing.
func TestInstallScriptEnv(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	id := r.sandbox(t)
	_, out := r.sh(t, id, `echo "$npm_config_ignore_scripts $YARN_ENABLE_SCRIPTS $PIP_ONLY_BINARY"`)
	if out != "true false :all:\n" {
		t.Errorf("env: %q", out)
	}
	execs, err := r.rv.c.Execs(ctx, id)
	if err != nil || len(execs) != 1 {
		t.Fatal(execs, err)
	}
	if slices.Contains(execs[0].EnvNames, "npm_config_ignore_scripts") {
		t.Errorf("env_names: %v", execs[0].EnvNames)
	}
	for _, e := range r.events(t, id, "exec.start") {
		if names, _ := e["env_names"].([]any); slices.Contains(names, any("npm_config_ignore_scripts")) {
			t.Errorf("exec.start: %v", e)
		}
	}
	allowed, err := r.m.Create(ctx, sandbox.CreateRequest{Policy: &policy.Layer{InstallScripts: policy.Allow}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, _, err := r.m.Exec(ctx, allowed.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", `echo "[$npm_config_ignore_scripts]"`}}, nil, &buf, nil); err != nil || buf.String() != "[]\n" {
		t.Errorf("allowed: %q %v", buf.String(), err)
	}
	if installScriptEnv(nil) != nil {
		t.Error("no policy: no env")
	}
}
