package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/depcache/piptest"
)

// testWheel is a pure-Python wheel: the module and size bytes of
// incompressible data (as a real package's size).
func testWheel(t *testing.T, name, version string, size int) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	_, _ = mrand.NewChaCha8(sha256.Sum256([]byte(name))).Read(data)
	file, whl, err := piptest.Wheel(name, version,
		[2]string{name + "/__init__.py", "NAME = " + strconv.Quote(name) + "\n"},
		[2]string{name + "/data.bin", string(data)})
	if err != nil {
		t.Fatal(err)
	}
	return file, whl
}

// simpleIndex is a PEP 503 index with PyPI's cache headers, counting
// requests for files and in all.
type simpleIndex struct {
	url          string
	mu           sync.Mutex
	files, total int
}

// serveSimpleIndex serves wheels on addr (a loopback address the test
// picks) until the test ends.
func serveSimpleIndex(t *testing.T, addr string, wheels map[string][]byte) *simpleIndex {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen %s: %v", addr, err)
	}
	ix := &simpleIndex{url: "http://" + l.Addr().String()}
	pages := map[string]string{}
	for n, data := range wheels {
		project := strings.SplitN(n, "-", 2)[0]
		pages["/simple/"+project+"/"] += fmt.Sprintf("<a href=\"/files/%s#sha256=%x\">%s</a>\n", n, sha256.Sum256(data), n)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ix.mu.Lock()
		ix.total++
		if strings.HasPrefix(r.URL.Path, "/files/") {
			ix.files++
		}
		ix.mu.Unlock()
		if data, ok := wheels[strings.TrimPrefix(r.URL.Path, "/files/")]; ok && strings.HasPrefix(r.URL.Path, "/files/") {
			w.Header().Set("Cache-Control", "max-age=365000000, immutable, public")
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			_, _ = w.Write(data)
		} else if p, ok := pages[r.URL.Path]; ok {
			w.Header().Set("Cache-Control", "max-age=600, public")
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<!DOCTYPE html><html><body>\n" + p + "</body></html>\n"))
		} else {
			http.NotFound(w, r)
		}
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ix
}

// hits is the requests for files and in all since the last call.
func (ix *simpleIndex) hits() (files, total int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	files, total = ix.files, ix.total
	ix.files, ix.total = 0, 0
	return files, total
}

// pipPoison, run in a task seeded from its project's store: every file
// of its pip cache written over, a wheel no base commit pins put in at a
// valid entry, and the task's own requirements.txt pinning it. A fixed
// script (argv), no test input in it.
const pipPoison = `import hashlib, os
root = os.path.expanduser("~/.cache/pip")
n = 0
for d, _, fs in os.walk(root):
    for f in fs:
        p = os.path.join(d, f)
        os.chmod(p, 0o644)
        open(p, "wb").write(b"poisoned")
        n += 1
evil = b"PK evil wheel"
k = hashlib.sha224(b"http://index.invalid/files/evil-1.0-py3-none-any.whl").hexdigest()
d = os.path.join(root, "http-v2", *k[:5])
os.makedirs(d, exist_ok=True)
open(os.path.join(d, k + ".body"), "wb").write(evil)
open("requirements.txt", "a").write("evil==1.0 --hash=sha256:" + hashlib.sha256(evil).hexdigest() + "\n")
assert n > 0, "the seeded cache is empty"
`

// TestDepCachePip: with serve --dep-cache, a loopback PEP 503 index
// opened by an egress rule as a user behind a mirror would (the daemon's
// pypi preset from PIP_INDEX_URL naming it, a CIDR rule for the loopback
// address its name resolves to),
// pip install --require-hashes in a first task goes to the index; the
// next task of the project installs from its seeded pip cache, timed
// beside a task of another project (the same files at another path),
// interleaved, two runs each, with the egress requests each made.
// Attacks: the seeded task poisons its copy and pins a wheel of its own;
// the store is unchanged, and another project's task has no pip cache.
func TestDepCachePip(t *testing.T) {
	if exec.Command("python3", "-m", "pip", "--version").Run() != nil {
		t.Skip("no python3 -m pip")
	}
	for backend, size := range map[string]int{"native": 2 << 20, "gvisor": 2 << 20} {
		t.Run(backend, func(t *testing.T) {
			if _, err := exec.LookPath("runsc"); backend == "gvisor" && err != nil {
				if os.Getenv("CI") != "" || os.Getenv("AIRLOCK_REQUIRE_GVISOR") != "" {
					t.Fatal("no runsc")
				}
				t.Skip("no runsc")
			}
			runDepCachePip(t, newPipProject(t, size), backend)
		})
	}
}

// newPipProject is six wheels of size bytes each, pinned by
// requirements.txt, on a loopback index known by name; the daemon's
// pypi preset names it (PIP_INDEX_URL, as pip.conf would).
func newPipProject(t *testing.T, size int) pipProject {
	p := pipProject{wheels: map[string][]byte{}}
	var req strings.Builder
	for _, n := range []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"} {
		file, data := testWheel(t, n, "1.0", size)
		p.wheels[file] = data
		fmt.Fprintf(&req, "%s==1.0 \\\n    --hash=sha256:%x\n", n, sha256.Sum256(data))
	}
	p.files = map[string]string{"requirements.txt": req.String(), "app.py": "import alpha\nprint(alpha.NAME)\n"}
	name, addr := loopbackName(t)
	p.ix = serveSimpleIndex(t, net.JoinHostPort(addr.String(), "0"), p.wheels)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(p.ix.url, "http://"))
	p.host = net.JoinHostPort(name, port) // by name, as a mirror is configured
	p.ix.url = "http://" + p.host
	rule, _ := json.Marshal(map[string]any{"presets": []string{"pypi"}, "rules": []any{map[string]any{
		"id": "pip-mirror", "action": "allow", "cidrs": []string{netip.PrefixFrom(addr, 32).String()}, "ports": []int{mustAtoi(t, port)}}}})
	p.layer = filepath.Join(t.TempDir(), "egress.json")
	if err := os.WriteFile(p.layer, rule, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PIP_INDEX_URL", p.ix.url+"/simple")
	t.Setenv("PIP_TRUSTED_HOST", p.host)
	return p
}

// pipProject is TestDepCachePip's project and index.
type pipProject struct {
	wheels      map[string][]byte
	files       map[string]string
	ix          *simpleIndex
	host, layer string
}

func runDepCachePip(t *testing.T, p pipProject, backend string) {
	ix, host, layer, wheels, files := p.ix, p.host, p.layer, p.wheels, p.files
	e := newEnv(t)
	d := e.startDaemon(t, "--dep-cache")
	sock := "--socket=" + d.sock
	start := func(repo string) (string, time.Duration) {
		t0 := time.Now()
		out, errOut, code := e.run("", "task", "start", sock, "--repo", repo, "--egress", layer, "--backend", backend,
			"--env", "PIP_INDEX_URL="+ix.url+"/simple", "--env", "PIP_TRUSTED_HOST="+host, "--env", "PIP_DISABLE_PIP_VERSION_CHECK=1")
		if code != 0 {
			t.Fatalf("task start: %d %q", code, errOut)
		}
		return strings.TrimSpace(out), time.Since(t0)
	}
	install := func(id string) time.Duration {
		t0 := time.Now()
		if out, errOut, code := e.run("", "task", "exec", sock, id, "--", "python3", "-m", "pip", "install", "--no-input",
			"--require-hashes", "-r", "requirements.txt", "--target", "/tmp/site"); code != 0 {
			t.Fatalf("pip install: %d\n%s\n%s", code, out, errOut)
		}
		return time.Since(t0)
	}
	finish := func(id string) {
		if _, errOut, code := e.run("", "task", "finish", sock, id); code != 0 {
			t.Fatalf("finish %s: %d %q", id, code, errOut)
		}
	}
	repo := gitRepoOf(t, files)
	first, _ := start(repo)
	if out, _, code := e.run("", "task", "exec", sock, first, "--", "python3", "-m", "pip", "--version"); code == 0 {
		t.Logf("the sandbox's pip (%s): %s", backend, strings.TrimSpace(out))
	}
	install(first)
	if f, _ := ix.hits(); f != len(wheels) {
		t.Fatalf("the first task fetched %d files from the index, want %d", f, len(wheels))
	}
	finish(first)
	store := filepath.Join(e.data, "depcache")
	before := treeHashes(t, store)
	if n := cacheFiles(t, e, sock, "pip"); n != len(wheels) {
		out, _, _ := e.run("", "audit", "query", sock, "--kind", "cache.add", "--json")
		t.Fatalf("after the first task the pip store holds %d files, want %d (store %v; cache.add %s)", n, len(wheels), mapKeys(before), out)
	}
	var cached, cold, cachedStart, coldStart []time.Duration
	var cachedReqs, coldReqs, cachedFiles, coldFiles, cachedBytes, coldBytes []int
	for range 2 {
		id, took := start(repo)
		cachedStart = append(cachedStart, took)
		cached = append(cached, install(id))
		f, _ := ix.hits()
		cachedFiles = append(cachedFiles, f)
		cachedReqs = append(cachedReqs, networkRequests(t, e, sock, id))
		cachedBytes = append(cachedBytes, networkBytesDown(t, e, sock, id))
		if out, errOut, code := e.run("", "task", "exec", sock, id, "--", "/bin/sh", "-c", "test -e "+store); code == 0 {
			t.Errorf("the store's host path is visible in the sandbox: %q %q", out, errOut)
		}
		if out, errOut, code := e.run("", "task", "exec", sock, id, "--", "python3", "-c", pipPoison); code != 0 {
			t.Fatalf("poison the pip cache copy: %d %q %q", code, out, errOut)
		}
		finish(id)
		other, took := start(gitRepoOf(t, files))
		coldStart = append(coldStart, took)
		if out, _, code := e.run("", "task", "exec", sock, other, "--", "/bin/sh", "-c", "ls -A /home/sandbox/.cache/pip 2>/dev/null; true"); code != 0 || strings.TrimSpace(out) != "" {
			t.Errorf("a task of another project finds its pip cache holding %q", out)
		}
		cold = append(cold, install(other))
		f, _ = ix.hits()
		coldFiles = append(coldFiles, f)
		coldReqs = append(coldReqs, networkRequests(t, e, sock, other))
		coldBytes = append(coldBytes, networkBytesDown(t, e, sock, other))
		finish(other)
	}
	if after := treeHashes(t, store); !sameFiles(before, after, depcacheProject{name: "pip"}) {
		t.Errorf("the project's store changed after the attacks")
	}
	t.Logf("%s: pip install --require-hashes of %d wheels (%d KB) with the project's cache: %s (egress requests %v, bytes down %v, index file requests %v; task start %s, the seed in it); without: %s (egress requests %v, bytes down %v, index file requests %v; task start %s)",
		backend, len(wheels), totalSize(wheels)>>10, medianOf(cached), cachedReqs, cachedBytes, cachedFiles, medianOf(cachedStart),
		medianOf(cold), coldReqs, coldBytes, coldFiles, medianOf(coldStart))
	for i := range cachedReqs {
		if cachedFiles[i] != 0 || coldFiles[i] != len(wheels) || cachedReqs[i] >= coldReqs[i] {
			t.Errorf("run %d: file requests %d cached, %d cold; egress requests %d cached, %d cold", i, cachedFiles[i], coldFiles[i], cachedReqs[i], coldReqs[i])
		}
	}
	if out, errOut, code := e.run("", "cache", "clear", sock, "--project", repo, "--ecosystem", "pip"); code != 0 || !strings.Contains(out, "pip") {
		t.Fatalf("cache clear: %d %q %q", code, out, errOut)
	}
	if cacheFilesOf(t, e, sock, repo) != 0 {
		t.Error("cache clear left the project's pip store")
	}
}

// loopbackName is a name of this machine that resolves to a loopback
// address (its host name, which Debian's /etc/hosts maps so): the
// index's name, which a preset can hold (an address it cannot), and
// which the sandbox's clients send to the proxy (unlike localhost, which
// NO_PROXY names). The proxy reaches it only through a CIDR rule.
func loopbackName(t *testing.T) (string, netip.Addr) {
	t.Helper()
	name, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip4", name)
	if err != nil || len(addrs) == 0 || !addrs[0].Unmap().IsLoopback() {
		t.Skipf("the host name %q does not resolve to a loopback address (%v %v)", name, addrs, err)
	}
	return name, addrs[0].Unmap()
}

// networkBytesDown is the bytes the task's egress record says came
// down to the sandbox.
func networkBytesDown(t *testing.T, e *env, sock, id string) int {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "review")
	if _, errOut, code := e.run("", "task", "export", sock, id, "-o", dir); code != 0 {
		t.Fatalf("export %s: %d %q", id, code, errOut)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "network.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var ev struct {
			BytesIn int `json:"bytes_in"`
		}
		if line != "" && json.Unmarshal([]byte(line), &ev) == nil {
			n += ev.BytesIn
		}
	}
	return n
}

func totalSize(m map[string][]byte) int {
	n := 0
	for _, b := range m {
		n += len(b)
	}
	return n
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
