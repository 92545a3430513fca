package lockfile

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*/changes.golden")

// TestIntegrityGolden reads each ecosystem's before and after lockfile
// (in the shapes the tools write) and checks the changes with the hashes
// the new versions carry against changes.golden.
func TestIntegrityGolden(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/*")
	for _, dir := range dirs {
		befores, _ := filepath.Glob(filepath.Join(dir, "before.*"))
		if len(befores) != 1 {
			continue
		}
		name := strings.TrimPrefix(filepath.Base(befores[0]), "before.")
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := describe(t, name, read(t, befores[0]), read(t, filepath.Join(dir, "after."+name)))
			if got == "" {
				t.Fatal("no change read from the fixture")
			}
			golden := filepath.Join(dir, "changes.golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := string(read(t, golden)); got != want {
				t.Errorf("%s:\n%s\nwant:\n%s", name, got, want)
			}
		})
	}
}

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func describe(t *testing.T, name string, before, after []byte) string {
	t.Helper()
	pb, err := Parse(name, before)
	if err != nil {
		t.Fatal(err)
	}
	pa, err := Parse(name, after)
	if err != nil {
		t.Fatal(err)
	}
	hb, okb, errb := Integrity(name, before)
	ha, oka, erra := Integrity(name, after)
	if errb != nil || erra != nil || !okb || !oka {
		t.Fatalf("integrity: %v %v %v %v", okb, oka, errb, erra)
	}
	for k := range ha {
		n, v, _ := strings.Cut(k[1:], "@")
		if n = k[:1] + n; !contains(pa[n], v) {
			t.Errorf("hash for %s, a package Parse does not list", k)
		}
	}
	var b strings.Builder
	for _, c := range Diff(pb, pa) {
		fmt.Fprintf(&b, "%s %s %v -> %v\n", c.Change, c.Name, c.From, c.To)
		for _, v := range c.To {
			fmt.Fprintf(&b, "  %s@%s %s\n", c.Name, v, or(ha[c.Name+"@"+v], "(no hash)"))
		}
	}
	for _, k := range Rehashed(hb, ha) {
		fmt.Fprintf(&b, "rehashed %s %s -> %s\n", k, hb[k], ha[k])
	}
	return b.String()
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func TestIntegrityEdges(t *testing.T) {
	// requirements: no --hash, nothing (ok false); --hash on the line,
	// continued, after markers, several; comments and "#" in a URL.
	if h, ok, err := Integrity("requirements.txt", []byte("a==1\nb>=2\n")); h != nil || ok || err != nil {
		t.Errorf("requirements without hashes: %v %v %v", h, ok, err)
	}
	req := "A[x]==1.0 --hash=sha256:aa\nb==2 ; python_version < \"3.9\" \\\n  --hash=sha256:bb \\\n  --hash sha256:cc # why\n# c==3 --hash=sha256:dd\nd>=4 --hash=sha256:ee\n"
	if h, ok, err := Integrity("requirements-dev.txt", []byte(req)); !ok || err != nil || fmt.Sprint(map[string]string(h)) != "map[a@1.0:sha256:aa b@2:sha256:bb sha256:cc]" {
		t.Errorf("requirements: %v %v %v", h, ok, err)
	}
	if p, err := Parse("requirements.txt", []byte(req)); err != nil || fmt.Sprint(map[string][]string(p)) != "map[a:[1.0] b:[2]]" {
		t.Errorf("requirements' versions: %v %v", p, err)
	}
	for _, c := range [][2]string{{"package-lock.json", "{"}, {"go.sum", "a b\n"}, {"Pipfile.lock", "["}, {"README.md", ""}, {"Cargo.lock", "[[ not"}} {
		if _, _, err := Integrity(c[0], []byte(c[1])); err == nil {
			t.Errorf("%s %q: no error", c[0], c[1])
		}
	}
	// npm lockfileVersion 1 nests its dependencies.
	v1 := `{"lockfileVersion":1,"dependencies":{"a":{"version":"1.0.0","integrity":"sha512-A","dependencies":{"b":{"version":"2.0.0","integrity":"sha1-B"}}}}}`
	if h, _, err := Integrity("npm-shrinkwrap.json", []byte(v1)); err != nil || fmt.Sprint(map[string]string(h)) != "map[a@1.0.0:sha512-A b@2.0.0:sha1-B]" {
		t.Errorf("npm v1: %v %v", h, err)
	}
	// poetry.lock before lock-version 2 lists the files by name at the end.
	old := "[[package]]\nname = \"idna\"\nversion = \"3.6\"\n\n[metadata]\nlock-version = \"1.1\"\n\n[metadata.files]\nidna = [\n    {file = \"idna-3.6.tar.gz\", hash = \"sha256:9e\"},\n]\n"
	if h, _, err := Integrity("poetry.lock", []byte(old)); err != nil || fmt.Sprint(map[string]string(h)) != "map[idna@3.6:sha256:9e]" {
		t.Errorf("poetry 1.1: %v %v", h, err)
	}
	// The same version with another hash is a change of its own.
	if got := Rehashed(Hashes{"a@1": "x", "b@1": "y"}, Hashes{"a@1": "z", "b@1": "y", "c@1": "w"}); fmt.Sprint(got) != "[a@1]" {
		t.Errorf("rehashed %v", got)
	}
}

func FuzzIntegrity(f *testing.F) {
	f.Add("[[package]]\nname=\"a\"\nversion=\"1\"\nchecksum=\"x\"\n")
	f.Add("packages:\n  a@1:\n    resolution: {integrity: sha512-x}\n")
	f.Fuzz(func(t *testing.T, data string) {
		for _, n := range Names {
			h, _, err := Integrity(n, []byte(data))
			if err != nil {
				continue
			}
			for k, v := range h {
				if !strings.Contains(k[1:], "@") || v == "" {
					t.Fatalf("%s: bad entry %q %q", n, k, v)
				}
			}
		}
	})
}
