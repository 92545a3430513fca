package tasks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// peekBackend makes no sandbox, but first lets the test look at what the
// manager prepared for it.
type peekBackend struct {
	fakeBackend
	peek func()
}

func (b peekBackend) Create(context.Context, runtime.Spec) (runtime.Sandbox, error) {
	b.peek()
	return nil, errors.New("the peek backend makes no sandboxes")
}

// Review (rv-daemon): StartTask puts the checkout with its .git in the
// sandbox's /workspace, and the clone's .git/config keeps the URL it was
// cloned from: an operator's https://TOKEN@host/org/private.git (or
// user:password) is then readable by the agent in /workspace/.git/config,
// though the record, the task and the log all redact it.
func TestReviewCloneURLCredentialsStayOutOfTheCheckout(t *testing.T) {
	repoDir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", filepath.Join(repoDir, "src")},
		{"-C", filepath.Join(repoDir, "src"), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"},
		{"clone", "-q", "--bare", filepath.Join(repoDir, "src"), filepath.Join(repoDir, "repo.git")},
		{"-C", filepath.Join(repoDir, "repo.git"), "update-server-info"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(repoDir))}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	const tok = "x7Kq9vTz2mWp4Lr8Yb3Nc6Hd"
	var configs []string
	peek := func() {
		bases, _ := filepath.Glob(filepath.Join(dir, "tasks", "*", "base"))
		for _, b := range bases {
			filepath.Walk(b, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					data, _ := os.ReadFile(p)
					configs = append(configs, p+":\n"+string(data))
				}
				return nil
			})
		}
	}
	tk := New(Config{Dir: filepath.Join(dir, "tasks")})
	_, err = manager.New(context.Background(), manager.Config{Modules: []hook.Module{tk}, Backend: peekBackend{peek: peek}, Templates: tpls, Store: st, Audit: log, Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	// The unix socket's operator may clone any URL.
	_, err = tk.Start(context.Background(), TaskRequest{Repo: "http://" + tok + "@127.0.0.1:" + strconv.Itoa(port) + "/repo.git"})
	if len(configs) == 0 {
		t.Fatalf("the clone never reached the sandbox's creation: %v", err)
	}
	for _, c := range configs {
		if strings.Contains(c, tok) {
			t.Errorf("the checkout that goes into /workspace keeps the URL's token: %s", c)
		}
	}
}
