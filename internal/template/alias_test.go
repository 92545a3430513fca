package template

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Agent code written for E2B calls python and pip at once; a Debian host
// has python3 and pip3 only. The host template adds the aliases, outside
// the host's read-only /usr and last on PATH, and only those the host
// lacks (issue 25).
func TestHostTemplateAliasesPython(t *testing.T) {
	host := fakeHost(t)
	s := openTest(t, host)
	plain := mustGet(t, s)
	if _, err := os.Lstat(filepath.Join(plain.Dir, aliasDir)); err == nil || strings.Contains(plain.Env[0], aliasDir) {
		t.Errorf("a host without python3 got aliases: %q", plain.Env)
	}
	for _, f := range []string{"usr/bin/python3", "usr/bin/pip3"} {
		if err := os.WriteFile(filepath.Join(host, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// (dpkg's status changes with what is installed; the template follows it)
	if err := os.WriteFile(filepath.Join(host, "var/lib/dpkg/status"), []byte("Package: python3\nStatus: install ok installed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tp := mustGet(t, s)
	for name, want := range map[string]string{"python": "/usr/bin/python3", "pip": "/usr/bin/pip3"} {
		if got, err := os.Readlink(filepath.Join(tp.Dir, aliasDir, name)); err != nil || got != want {
			t.Errorf("%s: %q %v, want a link to %s", name, got, err, want)
		}
	}
	if want := "PATH=/usr/local/bin:/usr/bin:/bin:/" + aliasDir; len(tp.Env) != 1 || tp.Env[0] != want {
		t.Errorf("Env %q, want %s", tp.Env, want)
	}
	if p := readFile(t, filepath.Join(tp.Dir, "etc/profile")); !strings.Contains(p, ":/bin:/"+aliasDir+"\"") {
		t.Errorf("a login shell's PATH lacks the aliases: %q", p)
	}
	// A host that has python itself keeps its own; pip is still aliased.
	if err := os.WriteFile(filepath.Join(host, "usr/bin/python"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "var/lib/dpkg/status"), []byte("Package: python-is-python3\nStatus: install ok installed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := mustGet(t, s)
	if _, err := os.Lstat(filepath.Join(own.Dir, aliasDir, "python")); err == nil {
		t.Error("python aliased on a host that has python")
	}
	if _, err := os.Readlink(filepath.Join(own.Dir, aliasDir, "pip")); err != nil {
		t.Errorf("pip: %v", err)
	}
}
