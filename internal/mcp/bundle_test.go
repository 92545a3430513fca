package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/mcp"
)

// bundleOf is a git bundle of repo's HEAD and main.
func bundleOf(t *testing.T, repo string) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "r.bundle")
	cmd := exec.Command("git", "bundle", "create", "--quiet", p, "HEAD", "main")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git bundle: %v %s", err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// start_task from a bundle, over TCP with a key (where no host path may
// be named): as base64, and as the URI of a bundle file in a sandbox
// (uploaded there, or made there by git bundle create); the commit pin
// holds, and every wrong bundle argument is a tool error with a reason.
func TestStartTaskFromBundle(t *testing.T) {
	e := newEnv(t)
	repo := gitRepo(t, map[string]string{"README": "bundled\n"})
	head, _ := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	commit := strings.TrimSpace(string(head))
	b := bundleOf(t, repo)
	r := e.ok("start_task", map[string]any{"bundle": base64.StdEncoding.EncodeToString(b), "commit": commit, "test": "true"})
	sb, _ := r.st["sandbox_id"].(string)
	if r.st["commit"] != commit || !strings.Contains(r.text, "bundle:sha256:") {
		t.Fatalf("start_task: %q %v", r.text, r.st)
	}
	if x := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "cat README"}); !strings.Contains(x.text, "bundled\n") {
		t.Errorf("the checkout: %q", x.text)
	}

	up := e.sandbox()
	if err := e.agent.WriteFile(context.Background(), up, "/workspace/r.bundle", bytes.NewReader(b), 0o644, false); err != nil {
		t.Fatal(err)
	}
	uri := "airlock://sandboxes/" + up + "/files/workspace/r.bundle"
	if r := e.ok("start_task", map[string]any{"bundle": uri, "ref": "main"}); r.st["commit"] != commit {
		t.Errorf("start_task from %s: %q %v", uri, r.text, r.st)
	}

	evil := bytes.Replace(b, []byte(" refs/heads/main\n"), []byte(" refs/heads/../../config\n"), 1)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "give repo or bundle"},
		{map[string]any{"repo": repo, "bundle": "eA=="}, "give repo or bundle"},
		{map[string]any{"bundle": "not base64!"}, "neither base64 nor"},
		{map[string]any{"bundle": "airlock://sandboxes/" + up + "/tree/workspace"}, "want airlock://sandboxes/ID/files/PATH"},
		{map[string]any{"bundle": "airlock://sandboxes/" + up + "/files/workspace/none.bundle"}, "not_found"},
		{map[string]any{"bundle": base64.StdEncoding.EncodeToString(evil)}, "the bundle is refused"},
		{map[string]any{"bundle": base64.StdEncoding.EncodeToString(b), "commit": strings.Repeat("0", 40)}, "conflict"},
		{map[string]any{"repo": repo}, "https or http URL"},
	} {
		e.fails("start_task", c.args, c.want)
	}
	// The file is read as this client reads files: a bundle where the
	// policy denies the agent reading (a secret's name, in a sandbox that
	// denies secret access) is refused, not sent.
	e.ok("upload_tree", map[string]any{"sandbox_id": up, "path": "/workspace/sec", "tar_base64": b64(tarOf(t, ".env", string(b)))})
	e.ok("snapshot_sandbox", map[string]any{"sandbox_id": up, "name": "with-env-bundle"})
	locked, _ := e.ok("create_sandbox", map[string]any{"template": "with-env-bundle", "policy": map[string]any{"classes": map[string]any{"secret": "deny"}}}).st["sandbox_id"].(string)
	e.fails("start_task", map[string]any{"bundle": "airlock://sandboxes/" + locked + "/files/workspace/sec/.env"}, "policy_denied")

	defer mcp.SetMaxTree(len(b) - 1)()
	e.fails("start_task", map[string]any{"bundle": base64.StdEncoding.EncodeToString(b)}, "limit_exceeded")
}
