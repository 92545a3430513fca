package task

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/gitbundle"
	"github.com/airlock-dev/airlock/sdk"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// --repo DIR --upload bundles the ref asked for (HEAD alone, a branch
// alone, or every branch and tag for a commit id) into a bundle the
// daemon's checks take, pins the commit it is now, and removes the
// bundle afterwards; a relative --repo without --upload is made absolute.
func TestStartSourceUpload(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "f")
	gitIn(t, dir, "commit", "-qm", "one")
	gitIn(t, dir, "tag", "v1")
	head := gitIn(t, dir, "rev-parse", "HEAD")
	for ref, want := range map[string]string{"HEAD": "HEAD", "main": "refs/heads/main", "v1": "refs/tags/v1", head: "HEAD,refs/heads/main,refs/tags/v1"} {
		req := sdk.TaskRequest{Repo: dir, Ref: ref}
		_, cleanup, err := startSource(&req, "", true)
		if err != nil {
			t.Fatal(err)
		}
		if req.Repo != "" || req.Commit != head || req.Bundle == nil {
			t.Fatalf("%s: %+v", ref, req)
		}
		h, err := gitbundle.ReadHeader(req.Bundle)
		if err != nil || h.Check() != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		var names []string
		for _, r := range h.Refs {
			names = append(names, r.Name)
		}
		if strings.Join(names, ",") != want {
			t.Errorf("%s: the bundle has %v, want %s", ref, names, want)
		}
		f := req.Bundle.(*os.File)
		cleanup()
		if _, err := os.Stat(f.Name()); !os.IsNotExist(err) {
			t.Errorf("%s: the bundle is left: %v", ref, err)
		}
	}
	t.Chdir(dir)
	req := sdk.TaskRequest{Repo: "."}
	if _, _, err := startSource(&req, "", false); err != nil || req.Repo != dir || req.Bundle != nil {
		t.Errorf("a relative --repo: %+v %v", req, err)
	}
	req = sdk.TaskRequest{Repo: "https://example.test/r.git"}
	if _, _, err := startSource(&req, "", true); err == nil {
		t.Error("--upload of a URL was taken")
	}
}
