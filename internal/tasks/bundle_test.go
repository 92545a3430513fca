package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
)

// gitT runs git in dir with no configuration but the repository's own.
func gitT(t *testing.T, dir string, args ...string) string {
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

// makeBundle is `git bundle create` of refs in repo.
func makeBundle(t *testing.T, repo string, refs ...string) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "b.bundle")
	gitT(t, repo, append([]string{"bundle", "create", "--quiet", p}, refs...)...)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A task from a bundle: cloned as a remote is, checked out at the
// commit asked for, pinned to the commit the client named, and on the
// record by the bundle's hash (fetch.request and task.start).
func TestTaskFromBundle(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	repo := gitRepo(t, map[string]string{"README": "from a bundle\n"})
	head := gitT(t, repo, "rev-parse", "HEAD")
	b := makeBundle(t, repo, "HEAD", "--branches")
	task, err := r.tk.Start(ctx, TaskRequest{Bundle: bytes.NewReader(b), Commit: head, Test: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if task.Commit != head || task.Bundle == nil || task.Bundle.Bytes != int64(len(b)) || task.Repo != bundleName(task.Bundle.SHA256) {
		t.Fatalf("started %+v (bundle %+v)", task, task.Bundle)
	}
	if out, _, err := r.run(task.SandboxID, "cat", "README"); err != nil || out != "from a bundle\n" {
		t.Fatalf("the checkout: %q %v", out, err)
	}
	if got := gitT(t, r.tk.baseDir(task.ID), "config", "remote.origin.url"); got != task.Repo {
		t.Errorf("origin is %q, want %q (not the daemon's path of the upload)", got, task.Repo)
	}
	if _, err := os.Stat(filepath.Join(r.tk.dir(task.ID), "repo.bundle")); !os.IsNotExist(err) {
		t.Errorf("the upload is kept after the clone: %v", err)
	}
	fr := r.events(t, "fetch.request")
	if len(fr) != 1 || payload(fr[0])["rule"] != "bundle" || payload(fr[0])["decision"] != "allow" || payload(fr[0])["url"] != task.Repo {
		t.Errorf("fetch.request %+v", fr)
	}
	ts := r.events(t, "task.start")
	if len(ts) != 1 || payload(ts[0])["commit"] != head || !strings.Contains(string(ts[0].Payload), task.Bundle.SHA256) {
		t.Errorf("task.start %+v", ts)
	}
	// Asked for another commit than the ref's: refused, nothing made.
	other := strings.Repeat("0", 40)
	if _, err := r.tk.Start(ctx, TaskRequest{Bundle: bytes.NewReader(b), Ref: "master", Commit: other}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a commit pin that does not hold: %v", err)
	}
	if _, err := r.tk.Start(ctx, TaskRequest{Bundle: bytes.NewReader(b), Repo: repo}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("repo and bundle: %v", err)
	}
	// The pin holds for a repository path too.
	if _, err := r.tk.Start(ctx, TaskRequest{Repo: repo, Commit: other}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a commit pin on a path: %v", err)
	}
	if _, err := r.tk.Start(ctx, TaskRequest{Repo: repo, Commit: "HEAD"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("a commit pin that is not an id: %v", err)
	}
	// A bundle's task is finished as any is (nothing clones it again).
	if res, err := r.tk.Finish(ctx, task.ID, false); err != nil || res.Task.Bundle == nil || res.Task.State != "finished" {
		t.Errorf("finish: %+v %v", res, err)
	}
	// A truncated upload is the client's error, not the daemon's.
	if _, err := r.tk.Start(ctx, TaskRequest{Bundle: io.MultiReader(bytes.NewReader(b[:100]), failing{})}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("a broken upload: %v", err)
	}
	r.noSandboxesBut(t, "")
}

// failing is a body that breaks off.
type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// noSandboxesBut fails if a sandbox other than keep is running.
func (r *rig) noSandboxesBut(t *testing.T, keep string) {
	t.Helper()
	list, err := r.m.List(context.Background(), "running")
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range list {
		if sb.ID != keep {
			t.Errorf("sandbox %s was made for a refused bundle", sb.ID)
		}
	}
}

// refusedBundle starts a task from b and wants it refused as want, with
// why in the message, no sandbox made and no task directory left.
func refusedBundle(t *testing.T, r *rig, name string, b []byte, want error, why string) {
	t.Helper()
	_, err := r.tk.Start(context.Background(), TaskRequest{Bundle: bytes.NewReader(b)})
	if !errors.Is(err, want) || !strings.Contains(err.Error(), why) {
		t.Errorf("%s: %v, want %v about %q", name, err, want, why)
	}
	if err != nil && strings.Contains(err.Error(), r.dir) {
		t.Errorf("%s: the error names the daemon's path: %v", name, err)
	}
	if left, _ := os.ReadDir(r.dir); len(left) != 0 {
		t.Errorf("%s: left in the tasks' directory: %v", name, left)
	}
}

// Attacks by the bundle's refs and prerequisites: refs outside
// refs/heads and refs/tags (a replace ref would rewrite what the daemon's
// git reads), a ref name with a path trick (written into a real bundle's
// header), and an incremental bundle whose prerequisites are missing.
func TestBundleRefAttacks(t *testing.T) {
	r := newRig(t, nil)
	repo := gitRepo(t, map[string]string{"README": "one\n"})
	first := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "update-ref", "refs/remotes/origin/x", first)
	gitT(t, repo, "update-ref", "refs/replace/"+strings.Repeat("1", 40), first)
	refusedBundle(t, r, "a replace ref", makeBundle(t, repo, "--all"), errdefs.ErrInvalid, "refs/replace/")
	refusedBundle(t, r, "a remote-tracking ref", makeBundle(t, repo, "refs/remotes/origin/x"), errdefs.ErrInvalid, "refs/remotes/origin/x")

	good := makeBundle(t, repo, "master")
	for _, name := range []string{"refs/heads/../../config", "refs/heads/x/../../../hooks/post-checkout", "refs/heads/.git/config", "refs/heads/a\x1b[31m", "refs/tags/v1.lock"} {
		evil := bytes.Replace(good, []byte(" refs/heads/master\n"), []byte(" "+name+"\n"), 1)
		refusedBundle(t, r, "ref "+name, evil, errdefs.ErrInvalid, "reference")
	}

	writeFile(t, filepath.Join(repo, "README"), "two\n")
	gitT(t, repo, "commit", "-qam", "two")
	refusedBundle(t, r, "missing prerequisites", makeBundle(t, repo, "master~1..master"), errdefs.ErrInvalid, "does not carry")
	// A header that passes with a pack that is not one: git's verify or
	// clone refuses it.
	cut := good[:bytes.Index(good, []byte("PACK"))+4]
	refusedBundle(t, r, "a broken pack", append(cut, bytes.Repeat([]byte{0}, 64)...), errdefs.ErrInvalid, "bundle")
	refusedBundle(t, r, "not a bundle", []byte("hello\n"), errdefs.ErrInvalid, "signature")
	if fr := r.events(t, "fetch.request"); len(fr) == 0 || payload(fr[0])["decision"] != "deny" {
		t.Errorf("a refused bundle is not on the record as denied: %+v", fr)
	}
	r.noSandboxesBut(t, "")
}

// A huge bundle is refused once past the daemon's bound, without reading
// the rest; a small bundle that inflates to a huge tree (a pack of
// zeros) is refused before its checkout.
func TestBundleSizeAttacks(t *testing.T) {
	r := newRig(t, nil)
	r.tk.cfg.MaxBundle, r.tk.cfg.MaxCheckout = 64<<10, 8<<20
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	endless := &countingReader{}
	_, err := r.tk.Start(context.Background(), TaskRequest{Bundle: endless})
	if !errors.Is(err, errdefs.ErrLimitExceeded) || endless.n > 64<<10+64<<10 {
		t.Errorf("an endless bundle: %v after %d bytes read", err, endless.n)
	}
	writeFile(t, filepath.Join(repo, "zeros"), strings.Repeat("\x00", 16<<20))
	gitT(t, repo, "add", "zeros")
	gitT(t, repo, "commit", "-qm", "zeros")
	b := makeBundle(t, repo, "master")
	if len(b) > 64<<10 {
		t.Fatalf("the bomb is %d bytes", len(b))
	}
	refusedBundle(t, r, "a bundle that inflates", b, errdefs.ErrLimitExceeded, "bytes of files")
	// Many small files: each an inode on the host.
	defer func(n int) { maxCheckoutFiles = n }(maxCheckoutFiles)
	maxCheckoutFiles = 50
	many := gitRepo(t, func() map[string]string {
		m := map[string]string{}
		for i := range 60 {
			m[fmt.Sprintf("f%d", i)] = ""
		}
		return m
	}())
	refusedBundle(t, r, "a bundle of many files", makeBundle(t, many, "master"), errdefs.ErrLimitExceeded, "files")
	r.noSandboxesBut(t, "")
}

// countingReader is an endless stream of a bundle's signature and then
// zeros, counting what was read.
type countingReader struct{ n int }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	if c.n == 0 {
		copy(p, "# v2 git bundle\n")
	}
	c.n += len(p)
	return len(p), nil
}

// A bundle carries refs and objects, never config or hooks: the source
// repository's hooks, its hooksPath and filter config stay behind, and a
// tree with hooks, attributes naming filters and a .gitmodules runs
// nothing on the daemon's host, from the clone to the diff and the
// finish. A tree that writes into .git (git would refuse the path), or
// whose .gitmodules has a command for update, is refused by fsck.
func TestBundleRunsNothing(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	marker := filepath.Join(t.TempDir(), "ran")
	hook := "#!/bin/sh\necho \"$0\" >> " + marker + "\n"
	repo := gitRepo(t, map[string]string{
		".githooks/post-checkout": hook,
		".gitattributes":          "* filter=evil diff=evil merge=evil\n",
		".gitmodules":             "[submodule \"s\"]\n\tpath = s\n\turl = ./s\n",
		"README":                  "hello\n",
	})
	for _, h := range []string{"post-checkout", "post-merge", "reference-transaction", "pre-auto-gc"} {
		writeFile(t, filepath.Join(repo, ".git", "hooks", h), hook)
		_ = os.Chmod(filepath.Join(repo, ".git", "hooks", h), 0o755)
	}
	_ = os.Chmod(filepath.Join(repo, ".githooks", "post-checkout"), 0o755)
	gitT(t, repo, "config", "core.hooksPath", ".githooks")
	gitT(t, repo, "config", "filter.evil.smudge", "sh -c 'echo smudge >> "+marker+"; cat'")
	gitT(t, repo, "config", "filter.evil.process", "sh -c 'echo process >> "+marker+"'")
	gitT(t, repo, "config", "core.fsmonitor", "sh -c 'echo fsmonitor >> "+marker+"'")
	b := makeBundle(t, repo, "HEAD", "--branches")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the test's own git ran the hooks: it proves nothing")
	}
	task, err := r.tk.Start(ctx, TaskRequest{Bundle: bytes.NewReader(b)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.tk.Diff(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	base := r.tk.baseDir(task.ID)
	config := gitT(t, base, "config", "--local", "--list")
	if _, err := r.tk.Finish(ctx, task.ID, true); err != nil {
		t.Fatal(err)
	}
	if ran, err := os.ReadFile(marker); err == nil {
		t.Errorf("the clone ran the repository's code: %s", ran)
	}
	for _, kv := range strings.Split(config, "\n") {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "core.") && !strings.HasPrefix(k, "remote.origin.") && !strings.HasPrefix(k, "branch.") || k == "core.hookspath" || k == "core.fsmonitor" {
			t.Errorf("the clone's config has %s: it came from the bundle", kv)
		}
	}
	if hooks, _ := os.ReadDir(filepath.Join(base, ".git", "hooks")); len(hooks) > 0 {
		for _, h := range hooks {
			if !strings.HasSuffix(h.Name(), ".sample") {
				t.Errorf("hook %s in the clone", h.Name())
			}
		}
	}

	// A tree entry .git/hooks/post-checkout, made with plumbing (porcelain
	// refuses the path): fsck refuses the bundle. (In a repository of its
	// own: the first one's filters would run in the test's git.)
	plain := gitRepo(t, map[string]string{"README": "x\n"})
	blob := gitHashObject(t, plain, hook)
	hooksTree := mktree(t, plain, "100755 blob "+blob+"\tpost-checkout\n")
	dotgit := mktree(t, plain, "040000 tree "+hooksTree+"\thooks\n")
	top := mktree(t, plain, "040000 tree "+dotgit+"\t.git\n")
	c := gitT(t, plain, "commit-tree", "-m", "evil", top)
	gitT(t, plain, "update-ref", "refs/heads/evil", c)
	refusedBundleRef(t, r, makeBundle(t, plain, "evil"), "evil", "hasDotgit")
	// A .gitmodules whose update is a command: fsck refuses it too.
	writeFile(t, filepath.Join(plain, ".gitmodules"), "[submodule \"s\"]\n\tpath = s\n\turl = ./s\n\tupdate = !sh -c 'echo gitmodules >> "+marker+"'\n")
	gitT(t, plain, "add", ".gitmodules")
	gitT(t, plain, "commit", "-qm", "update command")
	refusedBundleRef(t, r, makeBundle(t, plain, "master"), "master", "gitmodulesUpdate")
	if _, err := os.Stat(marker); err == nil {
		t.Error("a hook in a .git tree entry ran")
	}
}

func refusedBundleRef(t *testing.T, r *rig, b []byte, ref, why string) {
	t.Helper()
	_, err := r.tk.Start(context.Background(), TaskRequest{Bundle: bytes.NewReader(b), Ref: ref})
	if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), why) {
		t.Errorf("ref %s: %v, want an invalid error about %q", ref, err, why)
	}
}

func gitHashObject(t *testing.T, repo, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "blob")
	writeFile(t, p, data)
	return gitT(t, repo, "hash-object", "-w", p)
}

// mktree is git mktree of entries (its stdin, written by the program).
func mktree(t *testing.T, repo, entries string) string {
	t.Helper()
	cmd := exec.Command("git", "mktree")
	cmd.Dir, cmd.Stdin = repo, strings.NewReader(entries)
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git mktree: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func payload(e *audit.Event) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(e.Payload, &m)
	return m
}

// A bundle of a SHA-256 repository (a v3 bundle naming its object
// format) starts a task at its 64-digit commit, and its diff is taken.
func TestTaskFromSHA256Bundle(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	repo := t.TempDir()
	gitT(t, repo, "init", "-q", "--object-format=sha256")
	writeFile(t, filepath.Join(repo, "README"), "sha256\n")
	gitT(t, repo, "add", "README")
	gitT(t, repo, "commit", "-qm", "one")
	head := gitT(t, repo, "rev-parse", "HEAD")
	task, err := r.tk.Start(ctx, TaskRequest{Bundle: bytes.NewReader(makeBundle(t, repo, "HEAD")), Commit: head})
	if err != nil || len(task.Commit) != 64 || task.Commit != head {
		t.Fatalf("%+v %v", task, err)
	}
	f, err := r.m.Files(ctx, task.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteFile(ctx, "/workspace/README", strings.NewReader("changed\n"), 0o644, false); err != nil {
		t.Fatal(err)
	}
	if d, err := r.tk.Diff(ctx, task.ID); err != nil || len(d.Files) != 1 || !strings.Contains(d.Patch, "+changed") {
		t.Errorf("diff: %+v %v", d, err)
	}
}
