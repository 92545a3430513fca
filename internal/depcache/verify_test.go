package depcache

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A real module zip of the host's module cache hashes to the repository's
// own go.sum line (a known answer: the go command wrote both).
func TestHashZipKnownAnswer(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skip("no go command")
	}
	zipPath := filepath.Join(strings.TrimSpace(string(out)), "cache/download/go.yaml.in/yaml/v3/@v/v3.0.6.zip")
	modPath := strings.TrimSuffix(zipPath, ".zip") + ".mod"
	if _, err := os.Stat(zipPath); err != nil {
		t.Skip("go.yaml.in/yaml/v3 v3.0.6 is not in the host's module cache")
	}
	gosum, err := os.ReadFile("../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	j, err := newGoJudge(gosum)
	if err != nil {
		t.Fatal(err)
	}
	extra, why, ok := j.Judge("go.yaml.in/yaml/v3/@v/v3.0.6.zip", zipPath)
	if !ok {
		t.Fatalf("the real zip was refused: %s", why)
	}
	if string(extra["go.yaml.in/yaml/v3/@v/v3.0.6.ziphash"]) != "h1:zcDfvjXEqTQmpjniUBLc91xYJMB2c4QOFxEF/LCEckM=" {
		t.Errorf("ziphash %q", extra["go.yaml.in/yaml/v3/@v/v3.0.6.ziphash"])
	}
	if _, why, ok := j.Judge("go.yaml.in/yaml/v3/@v/v3.0.6.mod", modPath); !ok {
		t.Fatalf("the real go.mod was refused: %s", why)
	}
}

// moduleZip is a module zip of files (names below mod@ver/).
func moduleZip(t *testing.T, prefix string, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for n, c := range files {
		w, err := z.Create(prefix + n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(c))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// tarOf is a sandbox cache's tar as Files.Tar would send it.
func tarOf(t *testing.T, files map[string][]byte, links map[string]string) *tar.Reader {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for n, c := range files {
		_ = tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(c)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(c)
	}
	for n, target := range links {
		_ = tw.WriteHeader(&tar.Header{Name: n, Linkname: target, Typeflag: tar.TypeSymlink})
	}
	_ = tw.Close()
	return tar.NewReader(&b)
}

func storeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			b, _ := os.ReadFile(p)
			got[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return got
}

// Attack: a task writes into its Go module cache a zip of a pinned
// module whose content is not what go.sum pins (a backdoored copy),
// with a .ziphash claiming the pinned hash, a go.mod that is not the
// pinned one, a zip of a module go.sum does not name, and names that
// climb out of the cache. Only the genuine zip and go.mod reach the
// store, and the .ziphash there is the daemon's own.
func TestCollectGoRefusesPoisonedModules(t *testing.T) {
	good := moduleZip(t, "example.test/lib@v1.0.0/", map[string]string{"go.mod": "module example.test/lib\n", "lib.go": "package lib\n"})
	evil := moduleZip(t, "example.test/lib@v1.0.0/", map[string]string{"go.mod": "module example.test/lib\n", "lib.go": "package lib\n\nfunc init() { steal() }\n"})
	goodDir := t.TempDir()
	_ = os.WriteFile(filepath.Join(goodDir, "z"), good, 0o644)
	zh, err := hashZip(filepath.Join(goodDir, "z"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module example.test/lib\n"
	gosum := "example.test/lib v1.0.0 " + zh + "\nexample.test/lib v1.0.0/go.mod " + hash1(map[string][]byte{"go.mod": []byte(gomod)}) + "\n"
	j, err := newGoJudge([]byte(gosum))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  map[string]string // store files (path -> content; "*": any)
	}{
		{"backdoored zip, forged ziphash", map[string][]byte{
			"example.test/lib/@v/v1.0.0.zip":     evil,
			"example.test/lib/@v/v1.0.0.ziphash": []byte(zh),
			"example.test/lib/@v/v1.0.0.mod":     []byte("module example.test/lib\n\nrequire example.test/evil v1.0.0\n"),
		}, map[string]string{}},
		{"module go.sum does not name", map[string][]byte{
			"example.test/other/@v/v1.0.0.zip": moduleZip(t, "example.test/other@v1.0.0/", map[string]string{"go.mod": "module example.test/other\n"}),
		}, map[string]string{}},
		{"genuine zip under a climbing name", map[string][]byte{
			"../../../etc/example.test/lib/@v/v1.0.0.zip": good,
			"example.test/lib/../../@v/v1.0.0.zip":        good,
		}, map[string]string{}},
		{"genuine zip and go.mod", map[string][]byte{
			"example.test/lib/@v/v1.0.0.zip":     good,
			"example.test/lib/@v/v1.0.0.ziphash": []byte("h1:forged"),
			"example.test/lib/@v/v1.0.0.mod":     []byte(gomod),
			"example.test/lib/@v/v1.0.0.info":    []byte(`{"Version":"v1.0.0","Origin":"forged"}`),
		}, map[string]string{
			"example.test/lib/@v/v1.0.0.zip":     string(good),
			"example.test/lib/@v/v1.0.0.mod":     gomod,
			"example.test/lib/@v/v1.0.0.ziphash": zh,
			"example.test/lib/@v/v1.0.0.info":    `{"Version":"v1.0.0"}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Caches{cfg: Config{Dir: t.TempDir()}}
			dir := d.storeDir("/src/p", "go")
			r := &collectReport{Why: map[string]string{}}
			if err := d.addFrom(tarOf(t, tc.files, nil), dir, "/src/p", j, r); err != nil {
				t.Fatal(err)
			}
			got := storeFiles(t, dir)
			if len(got) != len(tc.want) {
				t.Fatalf("store holds %v (report %+v); want %v", keys(got), r, keys(tc.want))
			}
			for p, c := range tc.want {
				if got[p] != c {
					t.Errorf("store %s = %q; want %q", p, got[p], c)
				}
			}
			if len(tc.want) == 0 && r.Added != 0 {
				t.Errorf("report says %d added", r.Added)
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func npmContentPath(data []byte) (string, string) {
	sum := sha512.Sum512(data)
	h := hex.EncodeToString(sum[:])
	return "content-v2/sha512/" + h[:2] + "/" + h[2:4] + "/" + h[4:], "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Attack: a task puts into npm's cache a tarball the lockfile does not
// pin (at its own correct content address), one at a wrong address, one
// at the address of a pinned one, an index entry pointing a pinned URL at its tarball, and
// a symlink. Only the pinned tarball at its own address is kept.
func TestCollectNPMRefusesUnpinnedTarballs(t *testing.T) {
	pinned, evil := []byte("pinned tarball"), []byte("evil tarball")
	pinnedPath, pinnedSRI := npmContentPath(pinned)
	evilPath, _ := npmContentPath(evil)
	lock := `{"lockfileVersion": 3, "packages": {"": {"name": "p"}, "node_modules/left-pad": {"version": "1.3.0", "integrity": "` + pinnedSRI + `"}}}`
	j, err := newNPMJudge([]byte(lock))
	if err != nil {
		t.Fatal(err)
	}
	d := &Caches{cfg: Config{Dir: t.TempDir()}}
	dir := d.storeDir("/src/p", "npm")
	files := map[string][]byte{
		evilPath:            evil,
		"index-v5/aa/bb/cc": []byte("x\t{\"key\":\"make-fetch-happen:request-cache:https://registry.example.test/left-pad/-/left-pad-1.3.0.tgz\",\"integrity\":\"sha512-evil\"}\n"),
		"content-v2/sha512/" + pinnedPath[len("content-v2/sha512/"):len("content-v2/sha512/")+6] + strings.Repeat("0", 122): evil,
	}
	r := &collectReport{Why: map[string]string{}}
	if err := d.addFrom(tarOf(t, files, map[string]string{pinnedPath: "/etc/passwd"}), dir, "/src/p", j, r); err != nil {
		t.Fatal(err)
	}
	if got := storeFiles(t, dir); len(got) != 0 || r.Refused != 2 {
		t.Fatalf("store holds %v; report %+v", keys(got), r)
	}
	r = &collectReport{Why: map[string]string{}}
	if err := d.addFrom(tarOf(t, map[string][]byte{pinnedPath: evil}, nil), dir, "/src/p", j, r); err != nil {
		t.Fatal(err)
	}
	if got := storeFiles(t, dir); len(got) != 0 || r.Refused != 1 {
		t.Fatalf("evil content at the pinned address: store holds %v; report %+v", keys(got), r)
	}
	r = &collectReport{Why: map[string]string{}}
	if err := d.addFrom(tarOf(t, map[string][]byte{pinnedPath: pinned}, nil), dir, "/src/p", j, r); err != nil {
		t.Fatal(err)
	}
	if got := storeFiles(t, dir); len(got) != 1 || got[pinnedPath] != string(pinned) {
		t.Fatalf("store holds %v; report %+v", keys(got), r)
	}
}

func TestProject(t *testing.T) {
	for in, want := range map[string]string{
		"https://TOKEN@Git.Example.test/Org/Repo.git/": "https://git.example.test/Org/Repo",
		"https://git.example.test/Org/Repo?x=1#f":      "https://git.example.test/Org/Repo",
		"git@git.example.test:org/repo.git":            "ssh://git.example.test/org/repo",
		"/src/a/../b/":                                 "/src/b",
	} {
		if got := Project(in); got != want {
			t.Errorf("Project(%q) = %q; want %q", in, got, want)
		}
	}
	d := &Caches{cfg: Config{Dir: "/x"}}
	if d.storeDir("/src/a", "go") == d.storeDir("/src/b", "go") || d.storeDir("/src/a", "go") == d.storeDir("/src/a", "npm") {
		t.Error("two projects or ecosystems share a store")
	}
}
