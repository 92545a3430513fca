package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/store"
)

// taskBundle is a task of sandbox id as the tasks module would give it.
func taskBundle(id string, files []bundle.File, tests []bundle.TestRun, patch string) *hook.TaskBundle {
	now := time.Now().UTC()
	return &hook.TaskBundle{Task: &store.Task{ID: "t-0123456789ab", SandboxID: id, State: "open", Created: now},
		Manifest: bundle.Manifest{Task: "t-0123456789ab", Sandbox: id, Repo: "/src/repo", Commit: "abc", Prompt: "do it", Test: "make test", Created: now},
		Patch:    patch, Files: files, Tests: tests}
}

// A bundle written by the module verifies against the audit log's key and
// holds the sandbox's commands and outputs, the task's test runs and the
// agent's own, the added files scanned (a secret in one is found, a file
// named after a secret is left out), and no secret anywhere; its export
// is recorded with the head it was signed at.
func TestWriteBundleVerifiesAndKeepsNoSecret(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	id := r.sandbox(t)
	const secret = "review-bundle-secret-4c1d9e"
	r.red.Add(secret)
	testID, _ := r.sh(t, id, "echo '--- PASS: TestA (0.00s)'; echo 'ok  	example.test/a	0.01s'; echo "+secret)
	verifyID, _ := r.sh(t, id, "if false; then go test ./...; fi; echo '--- FAIL: TestB (0.00s)'")
	f, err := r.m.Files(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string]string{"/workspace/new.txt": "key " + secret + "\n", "/workspace/plain.txt": "hello\n", "/workspace/" + secret + ".txt": "x"} {
		if _, err := f.WriteFile(ctx, p, strings.NewReader(data), 0o644, false); err != nil {
			t.Fatal(err)
		}
	}
	files := []bundle.File{{Path: "new.txt", Status: "added", InScope: true}, {Path: "plain.txt", Status: "added", InScope: true},
		{Path: secret + ".txt", Status: "added"}, {Path: "README", Status: "modified", InScope: true}, {Path: "gone.txt", Status: "added"}, {Path: "../escape", Status: "added"}}
	patch := "diff --git a/go.mod b/go.mod\n--- a/go.mod\n+++ b/go.mod\n-require example.test/x v1.0.0\n+require example.test/x v1.2.0\n+++ b/new.txt\n+key " + secret + "\n"
	tests := []bundle.TestRun{{ExecID: testID, Command: "make test " + secret, Passed: true, Started: time.Now().Add(-time.Minute)}}
	var buf bytes.Buffer
	if err := r.rv.WriteBundle(ctx, taskBundle(id, files, tests, patch), &buf); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte(secret)) {
		t.Error("the secret is in the bundle's bytes")
	}
	v, err := bundle.Verify(bytes.NewReader(buf.Bytes()), r.log.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range v.Files {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds the secret", name)
		}
	}
	if v.Manifest.Task != "t-0123456789ab" || v.Manifest.Backend == "" || v.Manifest.Template == "" || v.Events == 0 {
		t.Errorf("manifest %+v, %d events", v.Manifest, v.Events)
	}
	checkArtifacts(t, v.Files)
	checkTests(t, v.Files, testID, verifyID)
	if !bytes.Contains(v.Files["dependencies.json"], []byte(`"changed"`)) {
		t.Errorf("dependencies: %s", v.Files["dependencies.json"])
	}
	if ex := r.events(t, id, "task.export"); len(ex) != 1 || ex[0]["chain_hash"] != v.Manifest.Chain.Hash {
		t.Errorf("task.export: %v (signed at %+v)", ex, v.Manifest.Chain)
	}
}

func checkArtifacts(t *testing.T, files map[string][]byte) {
	t.Helper()
	var arts []bundle.Artifact
	if err := json.Unmarshal(files["artifacts.json"], &arts); err != nil {
		t.Fatalf("artifacts.json: %v: %s", err, files["artifacts.json"])
	}
	if len(arts) != 3 {
		t.Fatalf("artifacts: %+v", arts)
	}
	byPath := map[string]bundle.Artifact{}
	for _, a := range arts {
		byPath[a.Path] = a
	}
	if a := byPath["new.txt"]; len(a.Findings) == 0 || a.Included {
		t.Errorf("a file with a secret: %+v", a)
	}
	if a := byPath["plain.txt"]; !a.Included || string(files["artifacts/plain.txt"]) != "hello\n" {
		t.Errorf("a plain file: %+v %q", a, files["artifacts/plain.txt"])
	}
	named := arts[2]
	for _, a := range arts {
		if strings.Contains(a.Path, "REDACTED") {
			named = a
		}
	}
	if !strings.Contains(named.Path, "REDACTED") || named.Included || len(named.Findings) == 0 {
		t.Errorf("a file named after a secret: %+v", named)
	}
}

func checkTests(t *testing.T, files map[string][]byte, testID, verifyID string) {
	t.Helper()
	var runs []bundle.TestRun
	if err := json.Unmarshal(files["tests.json"], &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ExecID != testID || runs[1].ExecID != verifyID {
		t.Fatalf("test runs: %+v", runs)
	}
	if s := runs[0].Summary; s == nil || s.Passed != 1 || !strings.Contains(runs[0].Command, "REDACTED") {
		t.Errorf("the task's run: %+v %+v", runs[0], s)
	}
	if s := runs[1].Summary; s == nil || s.Failed != 1 || !runs[1].Passed {
		t.Errorf("the agent's run: %+v %+v", runs[1], s)
	}
	if !bytes.Contains(files["commands.jsonl"], []byte(verifyID)) || files["outputs/"+testID+".stdout"] == nil {
		t.Errorf("commands %s", files["commands.jsonl"])
	}
}

// Without an audit log nothing is bundled: the core offers no bundler,
// and the module itself refuses.
func TestNoBundleWithoutAuditLog(t *testing.T) {
	r := newRig(t, func(c *manager.Config) { c.Audit = nil })
	if b, err := r.rv.c.Bundles(); b != nil || err != nil {
		t.Errorf("bundler without an audit log: %v %v", b, err)
	}
	id := r.sandbox(t)
	err := r.rv.WriteBundle(context.Background(), taskBundle(id, nil, nil, ""), &bytes.Buffer{})
	if !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("bundle without an audit log: %v", err)
	}
	if b, err := newRig(t, nil).rv.c.Bundles(); err != nil || b == nil {
		t.Errorf("the module is the core's bundler: %v %v", b, err)
	}
}

// The module attaches once.
func TestAttachOnce(t *testing.T) {
	r := newRig(t, nil)
	if err := r.rv.Attach(r.rv.c); !errors.Is(err, errdefs.ErrInvalid) || r.rv.Name() != "review" {
		t.Errorf("attach twice: %v", err)
	}
}

// A record that cannot be redacted (a secret that is a number of it) is
// not bundled.
func TestScrubRefusesASecretNumber(t *testing.T) {
	r := newRig(t, nil)
	r.red.Add("918273645501")
	c := &bundle.Contents{Commands: []bundle.Command{{ExecID: "e-1", StdoutBytes: 918273645501}}}
	if _, err := scrubContents(r.red, c); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("scrub: %v", err)
	}
}
