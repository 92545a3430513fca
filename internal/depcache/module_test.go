package depcache_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/depcache"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/review"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/internal/template/templatetest"
)

func TestMain(m *testing.M) { templatetest.Main(m) }

type rig struct {
	log    *audit.Log
	tk     *tasks.Tasks
	caches *depcache.Caches
	m      *manager.Manager
}

// newRig is the tasks, review and depcache modules on the fake backend,
// with a "go" preset of one registry host (no egress service: what the
// proxy would record, the test records).
func newRig(t *testing.T) *rig {
	t.Helper()
	root := t.TempDir()
	st, err := store.Open(filepath.Join(root, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(root, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{log: log}
	r.caches = depcache.New(depcache.Config{Dir: filepath.Join(root, "depcache"), Presets: map[string][]string{"go": {"proxy.example.test"}, "pypi": {"pypi.example.test:8080"}}})
	dir := filepath.Join(root, "tasks")
	r.tk = tasks.New(tasks.Config{Dir: dir, Caches: r.caches})
	cfg := manager.Config{Backend: fakert.New(t.TempDir()), Templates: templatetest.Store(t), Store: st, Audit: log, Redactor: red, Logf: t.Logf,
		Modules: []hook.Module{r.tk, review.New(review.Config{TaskDir: dir}), r.caches}}
	if r.m, err = manager.New(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.m.Shutdown(context.Background()) })
	return r
}

// h1 is go.sum's hash of a module zip, computed here independently.
func h1(t *testing.T, zipData []byte) string {
	z, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		t.Fatal(err)
	}
	var sum bytes.Buffer
	for _, f := range z.File { // written in sorted order below
		h := sha256.New()
		rc, _ := f.Open()
		var b bytes.Buffer
		_, _ = b.ReadFrom(rc)
		rc.Close()
		h.Write(b.Bytes())
		fmt.Fprintf(&sum, "%x  %s\n", h.Sum(nil), f.Name)
	}
	s := sha256.Sum256(sum.Bytes())
	return "h1:" + base64.StdEncoding.EncodeToString(s[:])
}

func libZip(t *testing.T) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, n := range []string{"example.test/lib@v1.0.0/go.mod", "example.test/lib@v1.0.0/lib.go"} {
		w, _ := z.Create(n)
		_, _ = w.Write([]byte("package lib // " + n + "\n"))
	}
	_ = z.Close()
	return b.Bytes()
}

func repoWith(t *testing.T, files map[string]string) string {
	t.Helper()
	repo := t.TempDir()
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return repo
}

const zipPath = "/home/sandbox/go/pkg/mod/cache/download/example.test/lib/@v/v1.0.0.zip"

// A genuine, go.sum-pinned module zip in a task's cache reaches the
// store only when the task's egress record shows it reached the Go
// registry (an attack: a zip brought in another way, say from the
// repository, even a genuine one, is not the registry's by provenance);
// then a next task of the project gets it, and one of another project
// does not.
func TestCollectNeedsTheRegistryInTheEgressRecord(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	data := libZip(t)
	files := map[string]string{"go.mod": "module example.test/app\n", "go.sum": "example.test/lib v1.0.0 " + h1(t, data) + "\n"}
	repo := repoWith(t, files)
	run := func(egress bool) {
		task, err := r.tk.Start(ctx, tasks.TaskRequest{Repo: repo})
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.m.Files(ctx, task.SandboxID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteFile(ctx, zipPath, bytes.NewReader(data), 0o644, true); err != nil {
			t.Fatal(err)
		}
		if egress {
			if _, err := r.log.Record(ctx, audit.Entry{SandboxID: task.SandboxID, Kind: "egress.connect",
				Payload: map[string]any{"time": time.Now(), "host": "proxy.example.test", "port": 443, "decision": "allow"}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.tk.Finish(ctx, task.ID, false); err != nil {
			t.Fatal(err)
		}
	}
	run(false)
	if l, err := r.caches.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("a task with no registry request added %v (%v)", l, err)
	}
	run(true)
	l, err := r.caches.List(ctx)
	if err != nil || len(l) != 1 || l[0].Project != repo || l[0].Ecosystem != "go" || l[0].Files != 3 { // zip, .ziphash, .info
		t.Fatalf("after a task that reached the registry: %+v %v", l, err)
	}
	for p, want := range map[string]bool{repo: true, repoWith(t, files): false} {
		task, err := r.tk.Start(ctx, tasks.TaskRequest{Repo: p})
		if err != nil {
			t.Fatal(err)
		}
		f, _ := r.m.Files(ctx, task.SandboxID)
		if _, err := f.Stat(ctx, zipPath); (err == nil) != want {
			t.Errorf("project %s: the cached zip in its task: %v, want %v", p, err == nil, want)
		}
		if _, err := r.tk.Finish(ctx, task.ID, false); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := r.caches.Clear(ctx, repo, "")
	if err != nil || len(gone) != 1 {
		t.Fatalf("clear: %v %v", gone, err)
	}
	if l, _ := r.caches.List(ctx); len(l) != 0 {
		t.Errorf("after clear: %v", l)
	}
	if _, err := r.caches.Clear(ctx, "", "cargo"); err == nil {
		t.Error("clear of an unknown ecosystem: no error")
	}
}

// pipEntryPath is where pip (before 23.3) caches url's response in the
// sandbox.
func pipEntryPath(url string) string {
	s := sha256.Sum224([]byte(url))
	k := fmt.Sprintf("%x", s)
	return "/home/sandbox/.cache/pip/http/" + k[0:1] + "/" + k[1:2] + "/" + k[2:3] + "/" + k[3:4] + "/" + k[4:5] + "/" + k
}

// The same for pip: a wheel the base commit's requirements.txt pins, in
// the task's pip cache as pip 23.3 and later write it (a .body beside
// the entry), is kept only when the task reached the index host through
// the proxy (an attack: a wheel the agent brought in from its
// repository or wrote itself is not the index's); another project's
// task gets nothing of it.
func TestCollectPipNeedsTheIndexInTheEgressRecord(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	wheel := []byte("PK\x03\x04 a wheel's bytes")
	sum := sha256.Sum256(wheel)
	repo := repoWith(t, map[string]string{"requirements.txt": fmt.Sprintf("demo==1.0 --hash=sha256:%x\n", sum)})
	legacy := pipEntryPath("http://pypi.example.test:8080/files/demo-1.0-py3-none-any.whl")
	v2 := strings.Replace(legacy, "/http/", "/http-v2/", 1) + ".body"
	run := func(p string, egress bool) (cached bool) {
		task, err := r.tk.Start(ctx, tasks.TaskRequest{Repo: p})
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.m.Files(ctx, task.SandboxID)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Stat(ctx, legacy)
		cached = err == nil
		if _, err := f.WriteFile(ctx, v2, bytes.NewReader(wheel), 0o644, true); err != nil {
			t.Fatal(err)
		}
		if egress {
			if _, err := r.log.Record(ctx, audit.Entry{SandboxID: task.SandboxID, Kind: "egress.request",
				Payload: map[string]any{"time": time.Now(), "host": "pypi.example.test", "port": 8080, "decision": "allow"}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.tk.Finish(ctx, task.ID, false); err != nil {
			t.Fatal(err)
		}
		return cached
	}
	run(repo, false)
	if l, err := r.caches.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("a task with no index request added %v (%v)", l, err)
	}
	run(repo, true)
	if l, err := r.caches.List(ctx); err != nil || len(l) != 1 || l[0].Ecosystem != "pip" || l[0].Files != 1 {
		t.Fatalf("after a task that reached the index: %+v %v", l, err)
	}
	if !run(repo, false) {
		t.Error("the next task of the project has no seeded pip entry")
	}
	if run(repoWith(t, map[string]string{"requirements.txt": fmt.Sprintf("demo==1.0 --hash=sha256:%x\n", sum)}), false) {
		t.Error("a task of another project has the project's pip entry")
	}
}
