package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// warmProject is a real Go module with one real dependency, its go.sum
// as the module proxy and checksum database give it.
var warmProject = map[string]string{
	"go.mod": "module example.test/size\n\ngo 1.22\n\nrequire github.com/dustin/go-humanize v1.1.0\n",
	"go.sum": "github.com/dustin/go-humanize v1.1.0 h1:dbKTrvD0klcbBV/h4AWJdMuZogJACoMlvWIWZ5b2xWg=\n" +
		"github.com/dustin/go-humanize v1.1.0/go.mod h1:hc1CvRkJMsgxqjmjMQF3QNRAZBwY8AXBAzKYoSX9sFI=\n",
	"size.go":      "package size\n\nimport \"github.com/dustin/go-humanize\"\n\n// Of names n bytes.\nfunc Of(n uint64) string { return humanize.Bytes(n) }\n",
	"size_test.go": "package size\n\nimport \"testing\"\n\nfunc TestOf(t *testing.T) {\n\tif got := Of(82854982); got != \"83 MB\" {\n\t\tt.Fatal(got)\n\t}\n}\n",
}

// The README's warm-template pattern: a task with the registry open
// downloads the project's modules once, its sandbox is snapshotted, and
// a task started from that template runs its first tests with no egress
// at all (no preset, no rule: nothing to reach the registry with) and
// no request in its record. The same first test run from a cold
// template, with the registry open, is timed beside it (issue 19: cold
// caches made every task's first run slow).
func TestWarmTemplateNeedsNoRegistry(t *testing.T) {
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		t.Skip("no Go toolchain at /usr/local/go to run inside the sandbox")
	}
	_, rule := registryAddrRule(t, "go")
	e := newEnv(t)
	d := e.startDaemon(t)
	sock := "--socket=" + d.sock
	layer := filepath.Join(t.TempDir(), "egress.json")
	if err := os.WriteFile(layer, []byte(`{"presets":["go"],"rules":[`+rule+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := gitRepoOf(t, warmProject)
	start := func(extra ...string) string {
		out, errOut, code := e.run("", append([]string{"task", "start", sock, "--repo", repo, "--test", "go test -count=1 ./..."}, extra...)...)
		if code != 0 {
			t.Fatalf("task start %v: %d %q", extra, code, errOut)
		}
		return strings.TrimSpace(out)
	}

	// Warm: download the modules in a task whose egress opens the
	// registry, and snapshot its sandbox; then build and test there too
	// (Go's build cache is in home as well), and snapshot again.
	warm := start("--egress", layer)
	execMaybeHeld(t, e, sock, "task", "exec", sock, warm, "--", "go", "mod", "download")
	snapshotTask(t, e, sock, warm, "go-size-modules")
	if out, errOut, code := e.run("", "task", "test", sock, warm); code != 0 {
		t.Fatalf("task test in the warming task: %d\n%s\n%s", code, out, errOut)
	}
	snapshotTask(t, e, sock, warm, "go-size-built")
	if _, errOut, code := e.run("", "task", "finish", sock, warm); code != 0 {
		t.Fatalf("finish the warming task: %d %q", code, errOut)
	}

	timedTest := func(id string) time.Duration {
		t0 := time.Now()
		if out, errOut, code := e.run("", "task", "test", sock, id); code != 0 {
			t.Fatalf("task test %s: %d\n%s\n%s", id, code, out, errOut)
		}
		return time.Since(t0)
	}
	var tasks []string
	var times []string
	for _, c := range []struct{ name, tmpl string }{{"modules", "go-size-modules"}, {"modules and build cache", "go-size-built"}} {
		id := start("--template", c.tmpl) // no preset, no rule: no way to the registry
		times = append(times, c.name+" "+timedTest(id).Round(time.Millisecond).String())
		if n := networkRequests(t, e, sock, id); n != 0 {
			t.Errorf("the task from %s: its record holds %d network request(s); want none", c.tmpl, n)
		}
		tasks = append(tasks, id)
	}
	coldTask := start("--egress", layer)
	times = append(times, "cold "+timedTest(coldTask).Round(time.Millisecond).String())
	t.Logf("first task test: %s", strings.Join(times, ", "))
	if n := networkRequests(t, e, sock, coldTask); n == 0 {
		t.Error("the cold task's record holds no network request: was its cache cold?")
	}
	for _, id := range append(tasks, coldTask) {
		if _, errOut, code := e.run("", "task", "finish", sock, id); code != 0 {
			t.Fatalf("finish %s: %d %q", id, code, errOut)
		}
	}
}

// snapshotTask makes a template of a task's sandbox.
func snapshotTask(t *testing.T, e *env, sock, id, name string) {
	t.Helper()
	out, _, _ := e.run("", "task", "get", sock, "--json", id)
	var task struct {
		SandboxID string `json:"sandbox_id"`
	}
	if err := json.Unmarshal([]byte(out), &task); err != nil || task.SandboxID == "" {
		t.Fatalf("task get: %v %q", err, out)
	}
	if _, errOut, code := e.run("", "sandbox", "snapshot", sock, task.SandboxID, name); code != 0 {
		t.Fatalf("snapshot: %d %q", code, errOut)
	}
}

// execMaybeHeld runs an exec and, if the policy holds it for a human,
// approves it; it must then succeed.
func execMaybeHeld(t *testing.T, e *env, sock string, args ...string) {
	t.Helper()
	h := e.startExec(t, args...)
	for l := range h.lines {
		h.seen = append(h.seen, l)
		if m := approvalIDRe.FindStringSubmatch(l); m != nil {
			if out, errOut, code := e.run("", "approve", sock, m[1]); code != 0 {
				t.Fatalf("approve: %d %q %q", code, out, errOut)
			}
			break
		}
	}
	if code, errOut := h.wait(t); code != 0 {
		t.Fatalf("%v: exit %d\n%s\n%s", args, code, errOut, h.stdout.String())
	}
}

// networkRequests counts the requests in a task's exported bundle.
func networkRequests(t *testing.T, e *env, sock, id string) int {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "review")
	if _, errOut, code := e.run("", "task", "export", sock, id, "-o", dir); code != 0 {
		t.Fatalf("export %s: %d %q", id, code, errOut)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "network.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(strings.TrimSpace(string(raw)), "\n") + map[bool]int{true: 1, false: 0}[len(strings.TrimSpace(string(raw))) > 0]
}

// The same pattern for npm: npm ci in the warming task fills ~/.npm, and
// a task from the template installs with npm ci --offline (from that
// cache only) and runs its tests with no egress.
func TestWarmTemplateNPM(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm")
	}
	_, rule := registryAddrRule(t, "npm")
	e := newEnv(t)
	d := e.startDaemon(t)
	sock := "--socket=" + d.sock
	layer := filepath.Join(t.TempDir(), "egress.json")
	if err := os.WriteFile(layer, []byte(`{"presets":["npm"],"rules":[`+rule+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := gitRepoOf(t, map[string]string{
		".gitignore":   "node_modules/\n",
		"package.json": `{"name": "num", "version": "1.0.0", "private": true, "scripts": {"test": "node test.js"}, "dependencies": {"is-number": "7.0.0"}}` + "\n",
		"package-lock.json": `{"name": "num", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "num", "version": "1.0.0", "dependencies": {"is-number": "7.0.0"}},` +
			`"node_modules/is-number": {"version": "7.0.0", "integrity": "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==", "engines": {"node": ">=0.12.0"}}}}` + "\n",
		"test.js": "const isNumber = require('is-number');\nif (!isNumber(5) || isNumber('x')) { process.exit(1); }\n",
	})
	out, errOut, code := e.run("", "task", "start", sock, "--repo", repo, "--egress", layer, "--test", "npm test")
	if code != 0 {
		t.Fatalf("task start: %d %q", code, errOut)
	}
	warm := strings.TrimSpace(out)
	execMaybeHeld(t, e, sock, "task", "exec", sock, warm, "--", "npm", "ci", "--no-audit", "--no-fund")
	if n := networkRequests(t, e, sock, warm); n == 0 {
		t.Error("the warming task's record holds no network request: where did npm ci get is-number?")
	}
	// What the warming task leaves in /workspace (its node_modules, a
	// file of its own) is not the next task's checkout.
	if _, errOut, code := e.run("", "task", "exec", sock, warm, "--", "/bin/sh", "-c", "echo warm > /workspace/warm-only.txt"); code != 0 {
		t.Fatalf("write warm-only.txt: %d %q", code, errOut)
	}
	snapshotTask(t, e, sock, warm, "npm-warm")
	if _, errOut, code := e.run("", "task", "finish", sock, warm); code != 0 {
		t.Fatalf("finish the warming task: %d %q", code, errOut)
	}
	out, errOut, code = e.run("", "task", "start", sock, "--repo", repo, "--template", "npm-warm",
		"--test", "rm -rf node_modules && npm ci --offline --no-audit --no-fund && npm test")
	if code != 0 {
		t.Fatalf("task start from the template: %d %q", code, errOut)
	}
	id := strings.TrimSpace(out)
	if out, errOut, code := e.run("", "task", "exec", sock, id, "--", "/bin/sh", "-c", "ls -A /workspace"); code != 0 || strings.Contains(out, "warm-only.txt") || strings.Contains(out, "node_modules") {
		t.Errorf("the task from the template finds the warming task's files in /workspace: %d %q %q", code, out, errOut)
	}
	if diff, _, _ := e.run("", "task", "diff", sock, "--stat", id); strings.Contains(diff, "warm-only") {
		t.Errorf("the warming task's file is in the new task's diff: %q", diff)
	}
	t0 := time.Now()
	if out, errOut, code := e.run("", "task", "test", sock, id); code != 0 {
		t.Fatalf("task test: %d\n%s\n%s", code, out, errOut)
	}
	warmTime := time.Since(t0)
	if n := networkRequests(t, e, sock, id); n != 0 {
		t.Errorf("the task's record holds %d network request(s); want none", n)
	}
	out, errOut, code = e.run("", "task", "start", sock, "--repo", repo, "--egress", layer, "--test", "npm ci --no-audit --no-fund && npm test")
	if code != 0 {
		t.Fatalf("task start, cold: %d %q", code, errOut)
	}
	cold := strings.TrimSpace(out)
	t0 = time.Now()
	if out, errOut, code := e.run("", "task", "test", sock, cold); code != 0 {
		t.Fatalf("task test, cold: %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("first task test (npm ci, npm test): warm template with --offline %s, cold %s", warmTime.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	for _, id := range []string{id, cold} {
		if _, errOut, code := e.run("", "task", "finish", sock, id); code != 0 {
			t.Fatalf("finish: %d %q", code, errOut)
		}
	}
}
