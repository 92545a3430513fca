package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// depcacheProject is a real project for the dependency caches: its
// install command and the cache directory it fills in the sandbox.
type depcacheProject struct {
	name, preset string
	files        map[string]string
	filesOf      func(t *testing.T) map[string]string // instead of files
	lock         string                               // made by npm install in a first task, then committed
	install      []string
	cacheDir     string // in the sandbox
	need         string // a program the test needs on the host
	backend      string // "": the daemon's (native)
}

// goDepsProject is a real Go module with real dependencies: airlock's
// own go.mod (under another module path) and go.sum, 14 modules.
func goDepsProject(t *testing.T) map[string]string {
	mod, err1 := os.ReadFile("../../go.mod")
	sum, err2 := os.ReadFile("../../go.sum")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return map[string]string{
		"go.mod":  strings.Replace(string(mod), "module github.com/airlock-dev/airlock", "module example.test/deps", 1),
		"go.sum":  string(sum),
		"deps.go": "package deps\n",
	}
}

// npmMochaProject is a real npm project: mocha and what it needs, its
// package-lock.json made by npm install in a task first (with the
// registry this machine's npm is configured with, and its integrity).
var npmMochaProject = map[string]string{
	".gitignore":   "node_modules/\n",
	"package.json": `{"name": "calc", "version": "1.0.0", "private": true, "devDependencies": {"mocha": "10.8.2"}}` + "\n",
}

var depcacheProjects = []depcacheProject{
	{name: "go", preset: "go", filesOf: goDepsProject, install: []string{"go", "mod", "download"}, cacheDir: "/home/sandbox/go/pkg/mod/cache/download", need: "/usr/local/go/bin/go"},
	{name: "npm", preset: "npm", files: npmMochaProject, lock: "package-lock.json", install: []string{"npm", "ci", "--no-audit", "--no-fund", "--no-update-notifier"}, cacheDir: "/home/sandbox/.npm/_cacache", need: "npm"},
	{name: "go", preset: "go", files: warmProject, install: []string{"go", "mod", "download"}, cacheDir: "/home/sandbox/go/pkg/mod/cache/download", need: "/usr/local/go/bin/go", backend: "gvisor"},
}

// TestDepCache: with serve --dep-cache, a first task of a project
// installs its dependencies through the egress proxy and is finished;
// the next task of the same project gets them from its project's store.
// Timed beside a task of a project with no store (the same files at
// another path: another project), two runs each, medians, with the
// egress requests each made. Attacks: the cached task cannot see the
// store (it is not mounted) and what it writes into its copy, a
// poisoned file among them, does not reach the store; a task of
// another project gets nothing of it.
func TestDepCache(t *testing.T) {
	for _, p := range depcacheProjects {
		t.Run(p.name+"/"+cmp.Or(p.backend, "native"), func(t *testing.T) {
			if _, err := exec.LookPath(p.need); err != nil {
				t.Skipf("no %s", p.need)
			}
			if _, err := exec.LookPath("runsc"); p.backend == "gvisor" && err != nil {
				if os.Getenv("CI") != "" || os.Getenv("AIRLOCK_REQUIRE_GVISOR") != "" {
					t.Fatal("no runsc")
				}
				t.Skip("no runsc")
			}
			runDepCache(t, p)
		})
	}
}

func runDepCache(t *testing.T, p depcacheProject) {
	_, rule := registryAddrRule(t, p.preset)
	e := newEnv(t)
	d := e.startDaemon(t, "--dep-cache")
	sock := "--socket=" + d.sock
	layer := filepath.Join(t.TempDir(), "egress.json")
	if err := os.WriteFile(layer, []byte(`{"presets":["`+p.preset+`"],"rules":[`+rule+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(repo string) string {
		args := []string{"task", "start", sock, "--repo", repo, "--egress", layer}
		if p.backend != "" {
			args = append(args, "--backend", p.backend)
		}
		out, errOut, code := e.run("", args...)
		if code != 0 {
			t.Fatalf("task start: %d %q", code, errOut)
		}
		return strings.TrimSpace(out)
	}
	install := func(id string) time.Duration {
		t0 := time.Now()
		if out, errOut, code := e.run("", append([]string{"task", "exec", sock, id, "--"}, p.install...)...); code != 0 {
			t.Fatalf("%v: %d\n%s\n%s", p.install, code, out, errOut)
		}
		return time.Since(t0)
	}
	finish := func(id string) {
		if _, errOut, code := e.run("", "task", "finish", sock, id); code != 0 {
			t.Fatalf("finish %s: %d %q", id, code, errOut)
		}
	}
	files := p.files
	if p.filesOf != nil {
		files = p.filesOf(t)
	}
	if p.lock != "" {
		files = lockedFiles(t, e, sock, layer, files, p.lock)
	}
	repo := gitRepoOf(t, files)
	first := start(repo)
	install(first)
	finish(first)
	store := filepath.Join(e.data, "depcache")
	before := treeHashes(t, store)
	stored := cacheFiles(t, e, sock, p.name)
	if stored == 0 {
		t.Fatalf("after the first task the %s cache is empty (store %v)", p.name, mapKeys(before))
	}

	var cached, cold, cachedStart, coldStart []time.Duration
	var cachedReqs, coldReqs []int
	for range 2 {
		t0 := time.Now()
		id := start(repo)
		cachedStart = append(cachedStart, time.Since(t0))
		cached = append(cached, install(id))
		cachedReqs = append(cachedReqs, networkRequests(t, e, sock, id))
		attackStore(t, e, sock, id, p, store)
		finish(id)
		otherRepo := gitRepoOf(t, files) // the same files at another path: another project
		t0 = time.Now()
		other := start(otherRepo)
		coldStart = append(coldStart, time.Since(t0))
		if out, _, code := e.run("", "task", "exec", sock, other, "--", "/bin/sh", "-c", "ls -A "+p.cacheDir+" 2>/dev/null; true"); code != 0 || strings.TrimSpace(out) != "" {
			t.Errorf("a task of another project finds %s holding %q", p.cacheDir, out)
		}
		cold = append(cold, install(other))
		coldReqs = append(coldReqs, networkRequests(t, e, sock, other))
		finish(other)
	}
	if after := treeHashes(t, store); !sameFiles(before, after, p) {
		t.Errorf("the first project's store changed after the attacks")
	}
	t.Logf("%s: the store holds %d files after the first task", p.name, stored)
	t.Logf("%s: %v with the project's cache: %s (egress requests %v; task start %s, the seed in it); without: %s (egress requests %v; task start %s)", p.name, p.install,
		medianOf(cached), cachedReqs, medianOf(cachedStart), medianOf(cold), coldReqs, medianOf(coldStart))
	for i := range cachedReqs {
		if cachedReqs[i] >= coldReqs[i] {
			t.Errorf("run %d: the cached task made %d egress requests, the cold one %d", i, cachedReqs[i], coldReqs[i])
		}
	}
	if out, errOut, code := e.run("", "cache", "clear", sock, "--project", repo); code != 0 || !strings.Contains(out, p.name) {
		t.Fatalf("cache clear: %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(store)); err == nil && cacheFilesOf(t, e, sock, repo) != 0 {
		t.Error("cache clear left the project's store")
	}
	if !auditHas(t, e, sock, "cache.clear") || !auditHas(t, e, sock, "cache.add") || !auditHas(t, e, sock, "cache.seed") {
		t.Error("the audit log lacks cache.seed, cache.add or cache.clear")
	}
}

// lockedFiles is files with the lockfile npm install makes of them, in
// a task of their own (it adds nothing to any store: no lockfile at its
// base commit).
func lockedFiles(t *testing.T, e *env, sock, layer string, files map[string]string, lock string) map[string]string {
	t.Helper()
	out, errOut, code := e.run("", "task", "start", sock, "--repo", gitRepoOf(t, files), "--egress", layer)
	if code != 0 {
		t.Fatalf("task start: %d %q", code, errOut)
	}
	id := strings.TrimSpace(out)
	if out, errOut, code := e.run("", "task", "exec", sock, id, "--", "npm", "install", "--package-lock-only", "--no-audit", "--no-fund", "--no-update-notifier"); code != 0 {
		t.Fatalf("npm install: %d %q %q", code, out, errOut)
	}
	out, errOut, code = e.run("", "task", "exec", sock, id, "--", "cat", lock)
	if code != 0 {
		t.Fatalf("cat %s: %d %q", lock, code, errOut)
	}
	if _, errOut, code := e.run("", "task", "finish", sock, id); code != 0 {
		t.Fatalf("finish: %d %q", code, errOut)
	}
	with := maps.Clone(files)
	with[lock] = out
	return with
}

// attackStore, from inside a task seeded from the store: the store's
// host path is not there, the cache copy is the sandbox's own (written
// over, a poisoned file added); none of it may reach the store.
func attackStore(t *testing.T, e *env, sock, id string, p depcacheProject, store string) {
	t.Helper()
	if _, _, code := e.run("", "task", "exec", sock, id, "--", "/bin/sh", "-c", "test -e "+store); code == 0 {
		t.Errorf("the store's host path %s is visible in the sandbox", store)
	}
	var poison string
	switch p.name {
	case "go":
		// A zip of a version go.sum does not pin, and every cached zip
		// and go.mod written over with other content.
		poison = "d=" + p.cacheDir + "/github.com/dustin/go-humanize/@v; chmod -R u+w $d; printf 'PK' > $d/v1.0.0.zip; printf 'poison' > $d/v1.0.0.mod; " +
			"for f in $d/*.zip $d/*.mod; do printf 'poisoned' > $f; done"
	case "npm":
		// Every cached tarball written over; a tarball the lockfile does
		// not pin at its own content address.
		poison = "cd " + p.cacheDir + " && chmod -R u+w . && find content-v2 -type f -exec sh -c 'printf poisoned > \"$1\"' _ {} \\; && " +
			"h=$(printf evil | sha512sum | cut -c1-128) && mkdir -p content-v2/sha512/$(echo $h | cut -c1-2)/$(echo $h | cut -c3-4) && printf evil > content-v2/sha512/$(echo $h | cut -c1-2)/$(echo $h | cut -c3-4)/$(echo $h | cut -c5-)"
	}
	if out, errOut, code := e.run("", "task", "exec", sock, id, "--", "/bin/sh", "-c", poison); code != 0 {
		t.Fatalf("poison the cache copy: %d %q %q", code, out, errOut)
	}
}

func treeHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		return nil
	})
	return out
}

// sameFiles: every file of the first project's store is unchanged, and
// nothing was added to it (other projects' stores may have been).
func sameFiles(before, after map[string]string, p depcacheProject) bool {
	for k, v := range before {
		if after[k] != v {
			return false
		}
	}
	dirs := map[string]bool{}
	for k := range before {
		dirs[strings.SplitN(k, string(filepath.Separator), 2)[0]] = true
	}
	for k := range after {
		if _, ok := before[k]; !ok && dirs[strings.SplitN(k, string(filepath.Separator), 2)[0]] {
			return false
		}
	}
	return true
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

type cacheEntry struct {
	Project, Ecosystem string
	Files              int
}

func cacheList(t *testing.T, e *env, sock string) []cacheEntry {
	t.Helper()
	out, errOut, code := e.run("", "cache", "ls", sock, "--json")
	var l []cacheEntry
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
		t.Fatalf("cache ls: %d %q %q", code, out, errOut)
	}
	return l
}

func cacheFiles(t *testing.T, e *env, sock, eco string) int {
	n := 0
	for _, c := range cacheList(t, e, sock) {
		if c.Ecosystem == eco {
			n += c.Files
		}
	}
	return n
}

func cacheFilesOf(t *testing.T, e *env, sock, project string) int {
	n := 0
	for _, c := range cacheList(t, e, sock) {
		if c.Project == project {
			n += c.Files
		}
	}
	return n
}

func auditHas(t *testing.T, e *env, sock, kind string) bool {
	t.Helper()
	out, _, code := e.run("", "audit", "query", sock, "--kind", kind, "--json")
	return code == 0 && strings.Contains(out, kind)
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2].Round(time.Millisecond)
	}
	return ((s[len(s)/2-1] + s[len(s)/2]) / 2).Round(time.Millisecond)
}
