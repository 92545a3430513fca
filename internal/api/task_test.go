package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/wire"
)

// sampleRepo makes a git repository with two commits on main and returns
// its path and the first commit.
func sampleRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	_ = os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "src", "calc.sh"), []byte("echo $(( $1 - $2 ))\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "test.sh"), []byte("[ \"$(sh src/calc.sh 2 3)\" = 5 ] && echo PASS || { echo FAIL; exit 1; }\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "README"), []byte("sample\n"), 0o644)
	run("add", ".")
	run("commit", "-qm", "one")
	first := run("rev-parse", "HEAD")
	_ = os.WriteFile(filepath.Join(dir, "README"), []byte("sample, second commit\n"), 0o644)
	run("commit", "-qam", "two")
	return dir, first
}

func (d *daemon) testTask(id string) (bool, string) {
	d.t.Helper()
	resp, err := d.client.Post("http://airlock/v1/tasks/"+id+"/test", "application/json", nil)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		d.t.Fatalf("test: status %d", resp.StatusCode)
	}
	var out strings.Builder
	passed := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev wire.Event
		_ = json.Unmarshal(sc.Bytes(), &ev)
		if ev.Type == "stdout" {
			out.Write(ev.Data)
		}
		if ev.Type == "exit" && ev.Passed != nil {
			passed = *ev.Passed
		}
	}
	return passed, out.String()
}

func TestTaskWorkflow(t *testing.T) {
	d := newDaemon(t)
	repo, first := sampleRepo(t)
	var task tasks.Task
	code := d.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first, "scope": []string{"src/**"}, "test": "sh test.sh", "prompt": "make calc add"}, &task)
	if code != 201 || task.Commit != first || task.SandboxID == "" || task.State != "open" {
		t.Fatalf("start: %d %+v", code, task)
	}
	// the exact commit is checked out: the second commit's README is not
	_, events, _ := d.exec(task.SandboxID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "cat README; git rev-parse HEAD"}})
	if out, _, _ := collect(events); out != "sample\n"+first+"\n" {
		t.Errorf("checkout: %q", out)
	}
	if passed, out := d.testTask(task.ID); passed || !strings.Contains(out, "FAIL") {
		t.Errorf("tests before the fix: passed=%v %q", passed, out)
	}
	// the agent fixes the code and even tries to forge history in its
	// .git: the host's diff is from the files alone
	d.exec(task.SandboxID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", `sed -i 's/-/+/' src/calc.sh && echo new > src/added.txt && git -c user.name=x -c user.email=x@x commit -qam forged && git update-ref refs/heads/main HEAD`}})
	// a write outside the scope fails inside the sandbox, whatever the
	// host's policy let through (this daemon's policy allows everything)
	_, events, _ = d.exec(task.SandboxID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo sneaky > outside.txt; echo x > README"}})
	if _, errOut, ex := collect(events); ex == nil || ex.Status == nil || ex.Status.Code == 0 || strings.Count(errOut, "Permission denied") != 2 {
		t.Errorf("out-of-scope writes: %+v %q", ex, errOut)
	}
	if passed, out := d.testTask(task.ID); !passed || !strings.Contains(out, "PASS") {
		t.Errorf("tests after the fix: passed=%v %q", passed, out)
	}
	var diff tasks.Diff
	if code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &diff); code != 200 {
		t.Fatalf("diff: %d", code)
	}
	if !strings.Contains(diff.Patch, "-echo $(( $1 - $2 ))") || !strings.Contains(diff.Patch, "+echo $(( $1 + $2 ))") || strings.Contains(diff.Patch, "outside.txt") {
		t.Errorf("patch:\n%s", diff.Patch)
	}
	files := map[string]tasks.ChangedFile{}
	for _, f := range diff.Files {
		files[f.Path] = f
	}
	if files["src/calc.sh"].Status != "modified" || !files["src/calc.sh"].InScope || files["src/added.txt"].Status != "added" || len(files) != 2 {
		t.Errorf("changed files: %+v", diff.Files)
	}
	if len(diff.OutOfScope) != 0 {
		t.Errorf("out of scope: %v", diff.OutOfScope)
	}
	// the patch applies to the base commit on the host
	check := exec.Command("git", "apply", "--check", "-")
	check.Dir = repo
	_ = exec.Command("git", "-C", repo, "checkout", "-q", first).Run()
	check.Stdin = strings.NewReader(diff.Patch)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("patch does not apply to the base: %v %s", err, out)
	}
	var res tasks.FinishResult
	if code := d.do("POST", "/v1/tasks/"+task.ID+"/finish", nil, &res); code != 200 || res.Task.State != "finished" || res.Test == nil || !res.Test.Passed {
		t.Fatalf("finish: %d %+v", code, res)
	}
	for _, name := range []string{"patch.diff", "files.json", "tests.json", "commands.jsonl", "manifest.json"} {
		b, err := os.ReadFile(filepath.Join(res.OutputDir, name))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %v (%d bytes)", name, err, len(b))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(res.OutputDir, "patch.diff")); string(b) != diff.Patch {
		t.Error("patch.diff differs from the diff")
	}
	var sb sandbox.Sandbox
	d.do("GET", "/v1/sandboxes/"+task.SandboxID, nil, &sb)
	if sb.State != "stopped" {
		t.Errorf("sandbox after finish: %s", sb.State)
	}
	var e wire.Error
	if code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &e); code != 409 {
		t.Errorf("diff of a finished task: %d %+v", code, e)
	}
	var got tasks.Task
	if d.do("GET", "/v1/tasks/"+task.ID, nil, &got); len(got.Tests) != 3 || got.Finished == nil {
		t.Errorf("task record: %+v", got)
	}
}

func TestTaskBadInput(t *testing.T) {
	d := newDaemon(t)
	repo, _ := sampleRepo(t)
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{}`, 400},
		{`{"repo":"/no/such/repo"}`, 404},
		{`{"repo":"` + repo + `","ref":"no-such-branch"}`, 400},
		{`{"repo":"` + repo + `","ref":"--upload-pack=evil"}`, 400},
		{`{"repo":"-x"}`, 400},
		{`{"repo":"` + t.TempDir() + `"}`, 400},
	} {
		var e wire.Error
		if code := d.do("POST", "/v1/tasks", c.body, &e); code != c.status {
			t.Errorf("%s: %d %+v, want %d", c.body, code, e, c.status)
		}
	}
	var task tasks.Task
	if code := d.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": "main"}, &task); code != 201 {
		t.Fatal(code)
	}
	resp, err := d.client.Post("http://airlock/v1/tasks/"+task.ID+"/test", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("test without a test command: %d", resp.StatusCode)
	}
	var res tasks.FinishResult
	if code := d.do("POST", "/v1/tasks/"+task.ID+"/finish?keep=true", nil, &res); code != 200 {
		t.Fatalf("finish --keep: %d", code)
	}
	var sb sandbox.Sandbox
	if d.do("GET", "/v1/sandboxes/"+task.SandboxID, nil, &sb); sb.State != "running" {
		t.Errorf("kept sandbox: %s", sb.State)
	}
}

// The daemon never holds an unbounded agent-made patch: past MaxPatch the
// diff is refused as a limit.
func TestTaskDiffTooLarge(t *testing.T) {
	d := newDaemon(t)
	repo, _ := sampleRepo(t)
	var task tasks.Task
	if code := d.do("POST", "/v1/tasks", map[string]any{"repo": repo}, &task); code != 201 {
		t.Fatal(code)
	}
	d.exec(task.SandboxID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "head -c 80000000 /dev/urandom > big.bin"}})
	var e struct {
		wire.Error
		Patch string `json:"patch"`
	}
	if code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &e); code != 429 || e.Code != "limit_exceeded" {
		t.Errorf("huge diff: %d %+v (patch %d bytes: %.300q)", code, e.Error, len(e.Patch), e.Patch)
	}
	// a normal change still diffs
	d.exec(task.SandboxID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "rm big.bin; echo x >> README"}})
	var diff tasks.Diff
	if code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &diff); code != 200 || len(diff.Files) != 1 {
		t.Errorf("diff after removing the big file: %d %+v", code, diff.Files)
	}
}

// Finishing a task first ends every process the agent left running, so
// that what the tests ran on is what the patch holds (found in a
// review-plane review: a setsid'd orphan rewrote the fixed file with a
// backdoor once the tests had passed, and the signed patch said "tests
// passed").
func TestFinishEndsLeftoversBeforeTheTests(t *testing.T) {
	d := newDaemon(t)
	repo, first := sampleRepo(t)
	var task tasks.Task
	if code := d.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first, "test": "sh test.sh"}, &task); code != 201 {
		t.Fatalf("start: %d", code)
	}
	// The fix, a test that takes a while (the agent may change it), and
	// an orphan that waits for the test run to end, then plants a backdoor.
	script := `sed -i 's/-/+/' src/calc.sh; echo 'sleep 0.3' >> test.sh
setsid sh -c 'ran() { grep -qs "test[.]s[h]" /proc/[0-9]*/cmdline; }
while ! ran; do sleep 0.005; done; while ran; do sleep 0.005; done
echo "echo 0 # backdoor" > src/calc.sh' </dev/null >/dev/null 2>&1 &
echo ok`
	if code, out, _ := d.sh(task.SandboxID, script, nil); code != 200 || !strings.Contains(out, "ok") {
		t.Fatalf("agent: %d %q", code, out)
	}
	var res tasks.FinishResult
	if code := d.do("POST", "/v1/tasks/"+task.ID+"/finish?keep=true", nil, &res); code != 200 || res.Test == nil {
		t.Fatalf("finish: %d %+v", code, res)
	}
	if !res.Test.Passed || strings.Contains(res.Diff.Patch, "backdoor") || !strings.Contains(res.Diff.Patch, "+echo $(( $1 + $2 ))") {
		t.Errorf("tests passed %v, patch:\n%s", res.Test.Passed, res.Diff.Patch)
	}
	time.Sleep(300 * time.Millisecond)
	if code, out, _ := d.sh(task.SandboxID, "cat src/calc.sh", nil); code != 200 || strings.Contains(out, "backdoor") {
		t.Errorf("the orphan outlived the finish: %q", out)
	}
}

// While a task is being finished, nothing but its own tests runs or writes
// in its sandbox (found in a review of this session's changes: commands
// sent during finish wrote a backdoor between the tests and the diff).
func TestNothingRunsWhileATaskFinishes(t *testing.T) {
	d := newDaemon(t)
	repo, first := sampleRepo(t)
	var task tasks.Task
	if code := d.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first, "test": "sh test.sh"}, &task); code != 201 {
		t.Fatalf("start: %d", code)
	}
	// The fix, and a test that says when it has read the code, then lingers.
	if code, _, _ := d.sh(task.SandboxID, `sed -i 's/-/+/' src/calc.sh; echo 'touch /tmp/started; sleep 0.5' >> test.sh`, nil); code != 200 {
		t.Fatal(code)
	}
	done := make(chan struct{})
	refused := make(chan int, 1)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				refused <- n
				return
			default:
			}
			code, _, _ := d.sh(task.SandboxID, `if [ -e /tmp/started ]; then echo 'echo 0 # backdoor' > src/calc.sh; fi`, nil)
			if code == 409 {
				n++
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var res tasks.FinishResult
	code := d.do("POST", "/v1/tasks/"+task.ID+"/finish?keep=true", nil, &res)
	close(done)
	n := <-refused
	if code != 200 || res.Test == nil || !res.Test.Passed || strings.Contains(res.Diff.Patch, "backdoor") {
		t.Fatalf("finish: %d, tests %+v, patch:\n%s", code, res.Test, res.Diff.Patch)
	}
	if n == 0 {
		t.Errorf("no command was refused while the task finished")
	}
	var e wire.Error
	if code := d.do("PUT", "/v1/sandboxes/"+task.SandboxID+"/files?path=/workspace/src/after.txt", "x", &e); code != 200 {
		t.Errorf("a write once the task is finished (its sandbox kept): %d %+v", code, e)
	}
}
