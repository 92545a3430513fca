package exefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPutWritesOnceAndReplacesWhatItCannotTrust(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	p, written, err := Put(dir, "prog-1", "content")
	if err != nil || !written {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o555 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	if p2, written, err := Put(dir, "prog-1", "content"); err != nil || p2 != p || written {
		t.Fatalf("re-use: %s %v", p2, err)
	}
	if fi2, _ := os.Stat(p); !os.SameFile(fi, fi2) {
		t.Fatal("a trusted file was rewritten")
	}
	// same size, writable by anyone: replaced
	_ = os.Chmod(p, 0o777)
	_ = os.WriteFile(p, []byte("CONTENT"), 0o777)
	if _, written, err := Put(dir, "prog-1", "content"); err != nil || !written {
		t.Fatal(err, written)
	}
	if b, _ := os.ReadFile(p); string(b) != "content" {
		t.Fatalf("an untrusted file was kept: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left %v", ents)
	}
}

func TestPutRefusesADirectoryOthersCanWrite(t *testing.T) {
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o757)
	if _, _, err := Put(dir, "prog", "x"); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Fatalf("got %v", err)
	}
}
