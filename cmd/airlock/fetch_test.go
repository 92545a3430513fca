package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

// gitServer serves a bare repository over dumb HTTP at /ok/repo.git on
// loopback, and at /err/ an error page carrying marker, as a hostile
// upstream would answer.
func gitServer(t *testing.T, marker string) (port int) {
	t.Helper()
	work, bare := t.TempDir(), filepath.Join(t.TempDir(), "repo.git")
	for _, args := range [][]string{
		{"-C", work, "init", "-q"},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base"},
		{"clone", "-q", "--bare", work, bare},
		{"-C", bare, "update-server-info"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ok/repo.git/", http.StripPrefix("/ok/repo.git", http.FileServer(http.Dir(bare))))
	mux.HandleFunc("/err/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(marker + "\n" + marker + "\n"))
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// The daemon cloned any URL a remote caller named, on the host's network
// outside every egress policy, and its error quoted the upstream's answer:
// an agent could reach the host's loopback or exfiltrate through it (issue
// 17). Over TCP the fetch policy decides (none: nothing), every fetch is
// on record, and no error carries the upstream's text.
func TestServeFetchPolicy(t *testing.T) {
	var rb [8]byte
	_, _ = rand.Read(rb[:])
	marker := "UPSTREAM-MARKER-" + hex.EncodeToString(rb[:])
	port := gitServer(t, marker)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	e := newEnv(t)
	addr := freePort(t)
	d := e.startDaemon(t, "--listen", addr)
	sock := "--socket=" + d.sock
	key, errOut, code := e.run("", "apikey", "create", sock, "--name", "agent")
	if code != 0 {
		t.Fatalf("apikey create: %d %s", code, errOut)
	}
	remote, err := sdk.New(sdk.WithBaseURL("http://"+addr), sdk.WithAPIKey(strings.TrimSpace(key)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// No fetch policy: refused over TCP, and on record.
	if _, err := remote.StartTask(ctx, sdk.TaskRequest{Repo: base + "/ok/repo.git"}); !sdk.IsDenied(err) || !strings.Contains(err.Error(), "fetch policy") {
		t.Errorf("a remote task from loopback with no fetch policy: %v", err)
	}
	// The MCP tool over TCP is the same door.
	mc := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "fetch-test", Version: "1"}, nil)
	cs, err := mc.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: bearer{strings.TrimSpace(key)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "start_task", Arguments: map[string]any{"repo": base + "/ok/repo.git?via=mcp"}})
	if err != nil || !r.IsError || !strings.Contains(resultText(r), "fetch policy") {
		t.Errorf("start_task over MCP on TCP with no fetch policy: %v %+v", err, r)
	}
	cs.Close()
	out, _, _ := e.run("", "audit", "query", sock, "--kind", "fetch", "--json")
	if strings.Count(out, `"door":"tcp"`) != 2 {
		t.Errorf("want both remote fetches on record: %s", out)
	}
	if !strings.Contains(out, `"decision":"deny"`) || !strings.Contains(out, base+"/ok/repo.git") || !strings.Contains(out, `"door":"tcp"`) {
		t.Errorf("the refused fetch is not on record: %s", out)
	}
	// The socket's operator may clone a URL, but is not shown the
	// upstream's answer either (an agent may be driving the socket).
	_, errOut, code = e.run("", "task", "start", sock, "--repo", base+"/err/repo.git")
	if code == 0 || strings.Contains(errOut, marker) || !strings.Contains(errOut, "clone failed") {
		t.Errorf("a clone from an upstream that answers an error page, on the socket: %d %q", code, errOut)
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()

	// A fetch rule opens loopback on that port, by CIDR, as egress does.
	pf := filepath.Join(filepath.Dir(e.state), "fetch.yaml")
	pol := allowAllPolicy + "fetch:\n  rules:\n    - {id: local-git, action: allow, cidrs: [127.0.0.1/32], ports: [" + strconv.Itoa(port) + "]}\n"
	if err := os.WriteFile(pf, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	d = e.startDaemon(t, "--listen", addr, "--policy", pf)
	sock = "--socket=" + d.sock
	task, err := remote.StartTask(ctx, sdk.TaskRequest{Repo: base + "/ok/repo.git"})
	if err != nil {
		t.Fatalf("a remote task the fetch policy allows: %v", err)
	}
	if task.Commit == "" || task.SandboxID == "" {
		t.Fatalf("task %+v", task)
	}
	_ = remote.DestroySandbox(ctx, task.SandboxID)
	_, err = remote.StartTask(ctx, sdk.TaskRequest{Repo: base + "/err/repo.git"})
	if err == nil || strings.Contains(err.Error(), marker) || !strings.Contains(err.Error(), "HTTP status 403") {
		t.Fatalf("a remote clone from an upstream that answers an error page: %v", err)
	}
	out, _, _ = e.run("", "audit", "query", sock, "--kind", "fetch", "--json")
	if !strings.Contains(out, `"rule":"local-git"`) || !strings.Contains(out, `"decision":"allow"`) || strings.Contains(out, marker) {
		t.Fatalf("the allowed fetches are not on record, or the record holds the upstream's answer: %s", out)
	}
}
