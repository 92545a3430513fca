package hostside

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
)

var e2b = runtime.User{Name: "user", Home: "/home/user"}

// A template whose etc/passwd (or etc) links to a host file must not
// bring that file into the sandbox: the link is refused, not followed.
func TestWriteUserFilesRefusesLinks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "passwd") // a host file
	if err := os.WriteFile(secret, []byte("root:$6$host-secret:19000::::::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	linkedFile := t.TempDir()
	_ = os.Mkdir(filepath.Join(linkedFile, "etc"), 0o755)
	if err := os.Symlink(secret, filepath.Join(linkedFile, "etc", "passwd")); err != nil {
		t.Fatal(err)
	}
	linkedDir := t.TempDir()
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(linkedDir, "etc")); err != nil {
		t.Fatal(err)
	}
	for name, lower := range map[string]string{"etc/passwd a link": linkedFile, "etc a link": linkedDir} {
		upper := t.TempDir()
		err := WriteUserFiles(upper, []string{lower}, 1000, 1000, e2b)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if b, _ := os.ReadFile(filepath.Join(upper, "etc", "passwd")); strings.Contains(string(b), "host-secret") {
			t.Errorf("%s: the host file came in: %q", name, b)
		}
	}
}

func TestWriteUserFiles(t *testing.T) {
	top, below := t.TempDir(), t.TempDir()
	for _, d := range []string{top, below} {
		_ = os.Mkdir(filepath.Join(d, "etc"), 0o755)
	}
	// passwd from the top layer, group from the one below it
	if err := os.WriteFile(filepath.Join(top, "etc", "passwd"), []byte("root:x:0:0::/root:/bin/sh\nsandbox:x:1000:1000::/home/sandbox:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(below, "etc", "group"), []byte("root:x:0:\nsandbox:x:1000:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	upper := t.TempDir()
	if err := WriteUserFiles(upper, []string{top, below}, 1000, 1000, e2b); err != nil {
		t.Fatal(err)
	}
	pw, _ := os.ReadFile(filepath.Join(upper, "etc", "passwd"))
	gr, _ := os.ReadFile(filepath.Join(upper, "etc", "group"))
	if string(pw) != "root:x:0:0::/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/bash\n" || string(gr) != "root:x:0:\nuser:x:1000:\n" {
		t.Errorf("passwd %q group %q", pw, gr)
	}
	if st, err := os.Stat(filepath.Join(upper, "etc", "passwd")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("passwd mode: %v %v", st.Mode(), err)
	}
}
