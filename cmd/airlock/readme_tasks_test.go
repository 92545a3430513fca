package main

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/egress"
)

// registryAddrRule is an egress rule opening exactly the addresses the
// named presets' registries resolve to here, on 443: on these machines
// they resolve into guarded ranges (a local mirror), and a user behind
// such a mirror opens them the same way. It skips (fails under CI) when
// a registry is not configured or does not resolve.
func registryAddrRule(t *testing.T, names ...string) (map[string][]string, string) {
	t.Helper()
	ctx := context.Background()
	presets, _ := egress.DiscoverPresets(ctx, egress.DiscoverEnv{})
	var cidrs []string
	for _, n := range names {
		if len(presets[n]) == 0 {
			if os.Getenv("CI") != "" {
				t.Fatalf("the %s registry is not configured on this machine: %v", n, presets)
			}
			t.Skipf("the %s registry is not configured on this machine", n)
		}
		for _, h := range presets[n] {
			host, _, err := net.SplitHostPort(h)
			if err != nil {
				host = h
			}
			addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
			if err != nil {
				continue // (a checksum database reached through the module proxy, say)
			}
			for _, a := range addrs {
				cidrs = append(cidrs, netip.PrefixFrom(a.Unmap(), 32).String())
			}
		}
	}
	if len(cidrs) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("no registry resolves here")
		}
		t.Skip("no registry resolves here")
	}
	rule, _ := json.Marshal(map[string]any{"id": "registry-addresses", "action": "allow", "cidrs": cidrs, "ports": []int{443}})
	return presets, string(rule)
}

// readmeProject is a small real project for the README's task flow: a
// bug the agent fixes in scope, the dependency command it needs (held by
// the default policy and approved), and what the review must then show.
type readmeProject struct {
	name      string
	files     map[string]string
	scope     []string
	test      string
	presets   string   // --preset
	install   []string // the agent's dependency command ("": none)
	fix       [2]string
	framework string // the test summary's framework
	dep       string // a package the dependency evidence must name
}

var readmeProjects = []readmeProject{
	{
		name: "go",
		files: map[string]string{
			"go.mod":                "module example.test/calc\n\ngo 1.22\n",
			"src/calc/calc.go":      "package calc\n\nimport \"github.com/google/uuid\"\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n\n// ID names a result.\nfunc ID() string { return uuid.NewString() }\n",
			"src/calc/calc_test.go": "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n\nfunc TestID(t *testing.T) {\n\tif len(ID()) != 36 {\n\t\tt.Fatal(ID())\n\t}\n}\n\nfunc TestTaskEnv(t *testing.T) {\n\tif os.Getenv(\"CALC_MODE\") != \"review\" {\n\t\tt.Fatal(\"no CALC_MODE\")\n\t}\n}\n",
		},
		scope: []string{"src/**", "go.mod", "go.sum"}, test: "go test -v ./...", presets: "go",
		install: []string{"go", "mod", "tidy"}, fix: [2]string{"src/calc/calc.go", "package calc\n\nimport \"github.com/google/uuid\"\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n\n// ID names a result.\nfunc ID() string { return uuid.NewString() }\n"},
		framework: "go", dep: "github.com/google/uuid",
	},
	{
		name: "node",
		files: map[string]string{
			".gitignore":        "node_modules/\n",
			"package.json":      `{"name": "calc", "version": "1.0.0", "private": true, "scripts": {"test": "mocha"}, "devDependencies": {"mocha": "^10.0.0"}}` + "\n",
			"src/calc.js":       "exports.add = (a, b) => a - b;\n",
			"test/calc.test.js": "const assert = require('assert');\nconst {add} = require('../src/calc');\ndescribe('calc', () => {\n  it('adds', () => assert.strictEqual(add(2, 3), 5));\n  it('reads the task env', () => assert.strictEqual(process.env.CALC_MODE, 'review'));\n});\n",
		},
		scope: []string{"src/**", "package-lock.json", "node_modules/**"}, test: "npm test", presets: "npm",
		install: []string{"npm", "install", "--no-audit", "--no-fund"}, fix: [2]string{"src/calc.js", "exports.add = (a, b) => a + b;\n"},
		framework: "mocha", dep: "mocha",
	},
	{
		name: "python",
		files: map[string]string{
			"src/calc.py":        "def add(a, b):\n    return a - b\n",
			"tests/test_calc.py": "import os\nimport sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n\nimport calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\ndef test_task_env():\n    assert os.environ.get('CALC_MODE') == 'review'\n",
		},
		scope: []string{"src/**"}, test: "python3 -m pytest -q -p no:cacheprovider", fix: [2]string{"src/calc.py", "def add(a, b):\n    return a + b\n"},
		framework: "pytest",
	},
}

// TestREADMETasksGoNodePython runs the README's task flow as written on a
// real Go module, Node package and Python project, with the default
// policy: task start (--scope, --test, --preset, --env), the dependency
// install held and approved, the fix, task test, task diff and the
// review bundle. The Go module and npm registries are reached only from
// inside the sandboxes, through airlock's proxy (PyPI is not reachable
// here: the Python project's pytest is the template's).
func TestREADMETasksGoNodePython(t *testing.T) {
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		t.Skip("no Go toolchain at /usr/local/go to run inside the sandbox")
	}
	_, rule := registryAddrRule(t, "go", "npm")
	e := newEnv(t)
	out, _, code := e.run("", "policy", "default")
	if code != 0 {
		t.Fatal("policy default")
	}
	pf := filepath.Join(filepath.Dir(e.state), "readme-policy.yaml")
	pol := strings.Replace(out, "egress:\n  grant: []\n  presets: []\n  rules: []\n", "egress:\n  rules:\n    - "+rule+"\n", 1)
	if pol == out || os.WriteFile(pf, []byte(pol), 0o644) != nil {
		t.Fatalf("the default policy has no empty egress section to open the mirror in:\n%s", out)
	}
	d := e.startDaemon(t, "--policy", pf)
	for _, p := range readmeProjects {
		t.Run(p.name, func(t *testing.T) { runReadmeTask(t, e, d, p) })
	}
}

func runReadmeTask(t *testing.T, e *env, d *daemonProc, p readmeProject) {
	sock := "--socket=" + d.sock
	repo := gitRepoOf(t, p.files)
	args := []string{"task", "start", sock, "--repo", repo, "--test", p.test, "--prompt", "fix add", "--env", "CALC_MODE=review"}
	for _, s := range p.scope {
		args = append(args, "--scope", s)
	}
	if p.presets != "" {
		args = append(args, "--preset", p.presets)
	}
	out, errOut, code := e.run("", args...)
	id := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("task start: %d %q", code, errOut)
	}
	start := time.Now()
	if p.install != nil {
		// The default policy holds a dependency change for a human.
		h := e.startExec(t, append([]string{"task", "exec", sock, id, "--"}, p.install...)...)
		if out, errOut, code := e.run("", "approve", sock, h.approvalID(t)); code != 0 {
			t.Fatalf("approve: %d %q %q", code, out, errOut)
		}
		if code, errOut := h.wait(t); code != 0 {
			t.Fatalf("%v, approved: exit %d\n%s\n%s", p.install, code, errOut, h.stdout.String())
		}
	}
	if _, errOut, code := e.run(p.fix[1], "task", "exec", sock, "--stdin", id, "--", "/bin/sh", "-c", "cat > "+p.fix[0]); code != 0 {
		t.Fatalf("the fix: %d %q", code, errOut)
	}
	if out, errOut, code := e.run("", "task", "test", sock, id); code != 0 {
		t.Fatalf("task test: %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	t.Logf("%s: install and tests in %s", p.name, time.Since(start).Round(time.Millisecond))
	diff, errOut, code := e.run("", "task", "diff", sock, id)
	var files []string // (the patch itself may quote registry hosts: not logged)
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "+++ ") {
			files = append(files, l)
		}
	}
	if code != 0 || !slices.Contains(files, "+++ b/"+p.fix[0]) || slices.ContainsFunc(files, func(l string) bool { return strings.Contains(l, "node_modules/") }) {
		t.Fatalf("task diff: %d %q, files %q", code, errOut, files)
	}
	dir := filepath.Join(t.TempDir(), "review")
	if _, errOut, code := e.run("", "task", "export", sock, id, "-o", dir); code != 0 {
		t.Fatalf("export: %d %q", code, errOut)
	}
	checkReadmeReview(t, dir, p)
	if _, errOut, code := e.run("", "task", "finish", sock, id); code != 0 {
		t.Fatalf("finish: %d %q", code, errOut)
	}
}

// checkReadmeReview reads the exported review: the test run's summary is
// the framework's, with its tests counted; the dependency evidence names
// the package, from the project's own lockfile.
func checkReadmeReview(t *testing.T, dir string, p readmeProject) {
	t.Helper()
	var runs []struct {
		Command string `json:"command"`
		Passed  bool   `json:"passed"`
		Summary *struct {
			Framework      string `json:"framework"`
			Passed, Failed int
			Packages       int `json:"packages"`
		} `json:"summary"`
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "tests.json"))
	if err := json.Unmarshal(raw, &runs); err != nil || len(runs) == 0 {
		t.Fatalf("tests.json: %v %s", err, raw)
	}
	last := runs[len(runs)-1]
	if !last.Passed || last.Summary == nil || last.Summary.Framework != p.framework || last.Summary.Passed < 2 || last.Summary.Failed != 0 || last.Summary.Packages != 0 {
		t.Errorf("the last test run: %+v %+v", last, last.Summary)
	}
	var deps struct {
		Changes []struct{ Manager, Name, To, Change, Lockfile string } `json:"changes"`
	}
	raw, _ = os.ReadFile(filepath.Join(dir, "dependencies.json"))
	if err := json.Unmarshal(raw, &deps); err != nil {
		t.Fatalf("dependencies.json: %v", err)
	}
	found := false
	for _, c := range deps.Changes {
		if c.Name == "email" || c.Name == "license" || c.Name == "url" || strings.ContainsAny(strings.ReplaceAll(c.To, ", ", ""), "^~><* ") {
			t.Errorf("a manifest field or range taken for a package: %+v", c)
		}
		found = found || c.Name == p.dep && c.Lockfile != "" && c.Change == "added" && c.To != ""
	}
	if p.dep != "" && !found {
		t.Errorf("dependencies.json does not name %s, added, from a lockfile: %+v", p.dep, deps.Changes)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(report), "<dt>Verdict</dt>") {
		t.Error("the report has no verdict")
	}
}

// gitRepoOf is a repository with files committed.
func gitRepoOf(t *testing.T, files map[string]string) string {
	t.Helper()
	repo := t.TempDir()
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return repo
}
