package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/airlock-dev/airlock/internal/api"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/manager"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/wire"
)

// daemonSocket serves the API of a daemon on the fake backend (with the
// projects and quotas modules) on a unix socket, as the operator's.
func daemonSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "aq")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	stk, err := stack.New(context.Background(), stack.Config{Config: manager.Config{Backend: fakert.New(filepath.Join(dir, "fake")), Templates: tpls, Store: st, Logf: t.Logf},
		TaskDir: filepath.Join(dir, "tasks"), SnapshotDir: filepath.Join(dir, "snapshots")})
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(stk.Manager, api.Modules{Keys: stk.Keys, Owners: stk.Projects, Projects: stk.Projects, Quotas: stk.Quotas}, api.Health{OK: true})
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	t.Cleanup(func() {
		hs.Close()
		_ = stk.Manager.Shutdown(context.Background())
	})
	return sock
}

func runProject(t *testing.T, sock string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := CmdProject(append([]string{args[0], "--socket", sock}, args[1:]...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestProjectQuotaAndUsage(t *testing.T) {
	sock := daemonSocket(t)
	code, out, errOut := runProject(t, sock, "quota", "--sandboxes", "2", "--memory", "8G", "--cpus", "none", "default")
	if code != 0 {
		t.Fatalf("quota: %d %s %s", code, out, errOut)
	}
	for _, want := range []string{`sandboxes\s+0\s+2\s+project`, `memory\s+0\s+8G\s+project`, `cpus\s+0\s+none\s+project`, `disk\s+0\s+none\s+default`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("quota's table lacks %q:\n%s", want, out)
		}
	}
	// a quota not named stays; default gives one back to the daemon's
	if code, _, errOut = runProject(t, sock, "quota", "--memory", "default", "--execs", "60", "default"); code != 0 {
		t.Fatalf("quota: %d %s", code, errOut)
	}
	code, out, _ = runProject(t, sock, "usage", "--json", "default")
	var u wire.ProjectUsage
	if err := json.Unmarshal([]byte(out), &u); code != 0 || err != nil {
		t.Fatalf("usage --json: %d %v %s", code, err, out)
	}
	if u.Quotas.Sandboxes != 2 || u.Set.MemoryBytes != nil || u.Quotas.ExecsPerMinute != 60 || u.Set.CPUs == nil || *u.Set.CPUs != 0 {
		t.Errorf("usage: %+v", u)
	}
	if code, _, errOut = runProject(t, sock, "quota", "--sandboxes", "-3", "default"); code != 2 {
		t.Errorf("negative: %d %s", code, errOut)
	}
	if code, _, errOut = runProject(t, sock, "usage", "no-such"); code == 0 || !bytes.Contains([]byte(errOut), []byte("not_found")) {
		t.Errorf("missing project: %d %s", code, errOut)
	}
}
