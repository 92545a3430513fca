package gvisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bind's mount point is made inside the root: a template whose path to
// it is a symlink out (absolute, or climbing) is refused, and nothing is
// made where the link leads on the host; a plain path gets its file or
// directory.
func TestAttackMountPointStaysInRoot(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "etc", "ssl")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srcFile := filepath.Join(top, "bundle.crt")
	if err := os.WriteFile(srcFile, []byte("roots"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"abs": outside, "climb": strings.Repeat("../", 20) + strings.TrimPrefix(outside, "/")} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []bindMount{
		{source: srcFile, target: "/abs/certs/ca.crt"},
		{source: srcFile, target: "/climb/certs/ca.crt"},
		{source: top, target: "/abs/dir"},
		{source: top, target: "/climb/dir"},
	} {
		if err := mountPoint(root, b); err == nil {
			t.Errorf("%s: made through a symlink out of the root", b.target)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("ESCAPE: made outside the root: %v", ents)
	}
	for _, b := range []bindMount{{source: srcFile, target: "/etc/ssl/certs/ca-certificates.crt"}, {source: top, target: "/usr"}} {
		if err := mountPoint(root, b); err != nil {
			t.Errorf("%s: %v", b.target, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("file mount point: %v %v", fi, err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "usr")); err != nil || !fi.IsDir() {
		t.Errorf("dir mount point: %v %v", fi, err)
	}
}
