package tasks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// Review (rv-daemon): a remote client's clone that fails is logged with
// git's error, which quotes git's own command line: the clone URL with
// its user part. The URL is redacted in the record and in the answer, and
// the redactor knows user:password, but a token alone as the user (the
// https://TOKEN@host/ form) went into the daemon's log as it was.
func TestReviewFailedCloneLogsNoURLCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler()}
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
	var mu sync.Mutex
	var logs []string
	pf := &policy.File{Fetch: &egress.Policy{Rules: []egress.Rule{{ID: "local-git", Action: egress.Allow, CIDRs: []string{"127.0.0.1/32"}, Ports: []int{port}}}}}
	tk := New(Config{Dir: filepath.Join(dir, "tasks")})
	_, err = manager.New(context.Background(), manager.Config{Modules: []hook.Module{tk}, Backend: fakeBackend{}, Templates: tpls, Store: st, Audit: log, Redactor: red,
		Policy: pf, Logf: func(f string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, strings.TrimSpace(fmtSprintf(f, a...)))
		}})
	if err != nil {
		t.Fatal(err)
	}
	const pw = "x7Kq9vTz2mWp4Lr8Yb3Nc6Hd"
	_, err = tk.Start(context.Background(), TaskRequest{Repo: "http://" + pw + "@127.0.0.1:" + strconv.Itoa(port) + "/nope.git", TightenOnly: true})
	if err == nil {
		t.Fatal("a clone of nothing succeeded")
	}
	if strings.Contains(err.Error(), pw) {
		t.Errorf("the answer quotes the password: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) == 0 {
		t.Fatal("the failed clone was not logged")
	}
	for _, l := range logs {
		if strings.Contains(l, pw) {
			t.Errorf("the daemon's log has the URL's password: %s", l)
		}
	}
}

func fmtSprintf(f string, a ...any) string { return fmt.Sprintf(f, a...) }
