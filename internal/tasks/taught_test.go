package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

const taughtSecret = "attacker-secret-7c4e1b9d"

// An attack: the agent of task A teaches the daemon's redactor (a
// secret-named variable of one exec) values that are the tasks' and
// bundles' field names, their state words, task B's id and its
// sandbox's id, its commit, and a piece of every timestamp. Task B,
// listed, got, tested and finished afterwards, keeps every field, its
// result files and its signed bundle are whole and the bundle verifies;
// on the old JSON round trip B's record could not be shown at all (its
// times no longer parsed) or lost its ids and state, and its bundle its
// ids. A's own secret is still hidden wherever it is a value.
func TestTaughtValuesLeaveOtherTasksWhole(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	repo := gitRepo(t, map[string]string{"README": "base\n", "src/a.go": "package a\n"})
	victim, err := r.tk.Start(ctx, TaskRequest{Repo: repo, Scope: []string{"src/**"}, Test: "grep -q base README", Prompt: "fix it"})
	if err != nil {
		t.Fatal(err)
	}
	attacker, err := r.tk.Start(ctx, TaskRequest{Repo: repo, Prompt: "anything"})
	if err != nil {
		t.Fatal(err)
	}
	taught := []string{taughtSecret, "sandbox_id", "output_dir", "finished", "exec_id", "stdout_bytes", "template_version",
		"framework", "in_scope", "modified", "allowed", "signature", "public_key", "manifest.json", "audit.jsonl", "commands.jsonl", victim.ID, victim.SandboxID, victim.Commit, victim.Created.UTC().Format("2006-01-02T")}
	var env []string
	for i, v := range taught {
		env = append(env, "TOKEN_"+string(rune('A'+i))+"_SECRET="+v)
	}
	if _, _, err := r.m.Exec(ctx, attacker.SandboxID, sandbox.ExecRequest{Argv: []string{"echo", taughtSecret}, Env: env}, nil, nil, nil); err != nil {
		t.Fatalf("the teaching exec: %v", err)
	}
	if out, _, err := r.run(victim.SandboxID, "cat", "README"); err != nil || out != "base\n" {
		t.Fatalf("the victim's command after the values were taught: %q %v", out, err)
	}
	r.put(t, victim.SandboxID, "src/b.go", "package a // new\n")
	wholeTask(t, r, victim)
	if _, err := r.tk.Test(ctx, victim.ID, time.Minute, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	res, err := r.tk.Finish(ctx, victim.ID, false)
	if err != nil {
		t.Fatalf("the victim's finish: %v", err)
	}
	if res.Task.ID != victim.ID || res.Task.SandboxID != victim.SandboxID || res.Task.State != "finished" || len(res.Task.Tests) != 2 ||
		res.Task.Tests[0].ExecID == "" || res.Task.OutputDir == "" || res.Task.Finished == nil {
		t.Errorf("the victim's finished task: %+v", res.Task)
	}
	wholeResult(t, res.OutputDir, victim)
	wholeBundle(t, filepath.Join(res.OutputDir, BundleName), victim)
	ares, err := r.tk.Finish(ctx, attacker.ID, false)
	if err != nil {
		t.Fatalf("the attacker's finish: %v", err)
	}
	for _, f := range ares.Files {
		if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(taughtSecret)) {
			t.Errorf("the attacker's %s shows its secret", filepath.Base(f))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ares.OutputDir, "commands.jsonl")); !bytes.Contains(b, []byte(`"echo","[REDACTED:known-secret]"`)) {
		t.Errorf("the attacker's commands: %s", b)
	}
	v := verifyBundle(t, filepath.Join(ares.OutputDir, BundleName))
	for name, b := range v.Files {
		if bytes.Contains(b, []byte(taughtSecret)) {
			t.Errorf("the attacker's bundle shows its secret in %s", name)
		}
	}
}

// wholeTask checks that task want is shown (got and listed) as it was.
func wholeTask(t *testing.T, r *rig, want *Task) {
	t.Helper()
	got, err := r.tk.Get(context.Background(), want.ID)
	if err != nil {
		t.Fatalf("the victim's task after the values were taught: %v", err)
	}
	if got.ID != want.ID || got.SandboxID != want.SandboxID || got.State != "open" || got.Commit != want.Commit ||
		got.Repo != want.Repo || got.Test != want.Test || got.Prompt != want.Prompt || !got.Created.Equal(want.Created) {
		t.Errorf("the victim's task: %+v, want %+v", got, want)
	}
	list, err := r.tk.List(context.Background())
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	for _, l := range list {
		if l.ID == want.ID && (l.SandboxID != want.SandboxID || l.State != "open") {
			t.Errorf("listed: %+v", l)
		}
	}
}

// wholeResult checks the result files of task want.
func wholeResult(t *testing.T, dir string, want *Task) {
	t.Helper()
	var mf resultManifest
	readJSON(t, filepath.Join(dir, "manifest.json"), &mf)
	if mf.Task != want.ID || mf.Sandbox != want.SandboxID || mf.Commit != want.Commit || !mf.Created.Equal(want.Created) || mf.Finished.IsZero() {
		t.Errorf("manifest.json: %+v", mf)
	}
	var files struct {
		Base  string        `json:"base"`
		Files []ChangedFile `json:"files"`
	}
	readJSON(t, filepath.Join(dir, "files.json"), &files)
	if files.Base != want.Commit || len(files.Files) != 1 || files.Files[0].Status != "added" || !files.Files[0].InScope {
		t.Errorf("files.json: %+v", files)
	}
	var tests []TestRun
	readJSON(t, filepath.Join(dir, "tests.json"), &tests)
	if len(tests) != 2 || tests[0].ExecID == "" || tests[0].Started.IsZero() || !tests[1].Passed {
		t.Errorf("tests.json: %+v", tests)
	}
	b, err := os.ReadFile(filepath.Join(dir, "commands.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e sandbox.Exec
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.ID == "" || e.SandboxID != want.SandboxID || e.Started.IsZero() {
			t.Errorf("commands.jsonl: %s: %+v %v", line, e, err)
		}
	}
}

// wholeBundle checks that the bundle at p verifies and holds task
// want's ids.
func wholeBundle(t *testing.T, p string, want *Task) {
	t.Helper()
	v := verifyBundle(t, p)
	m := v.Manifest
	if m.Task != want.ID || m.Sandbox != want.SandboxID || m.Commit != want.Commit || m.TemplateVersion == "" || m.Policy == "" ||
		!m.Created.Equal(want.Created) {
		t.Errorf("the bundle's manifest: %+v", m)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(v.Files["commands.jsonl"])), "\n") {
		var c bundle.Command
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.ExecID == "" || c.Started.IsZero() {
			t.Errorf("the bundle's commands.jsonl: %s: %v", line, err)
		}
		if c.Policy != nil && c.Policy.Action == "allow" {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no command of the bundle shows its policy: %s", v.Files["commands.jsonl"])
	}
	var tests []bundle.TestRun
	if err := json.Unmarshal(v.Files["tests.json"], &tests); err != nil || len(tests) == 0 || tests[0].ExecID == "" {
		t.Errorf("the bundle's tests.json: %s %v", v.Files["tests.json"], err)
	}
}

func verifyBundle(t *testing.T, p string) *bundle.Verified {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := bundle.Verify(f, nil)
	if err != nil {
		t.Fatalf("the bundle does not verify: %v", err)
	}
	return v
}

func readJSON(t *testing.T, p string, v any) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Errorf("%s: %v: %s", filepath.Base(p), err, b)
	}
}
