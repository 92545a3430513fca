package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

// A task from a bundle on a real daemon: a remote key (TCP, no fetch
// policy: no URL or host path allowed) starts one with the SDK and with
// the MCP start_task tool over streamable HTTP, and the operator's CLI
// bundles a directory itself (task start --repo DIR --upload); each
// checks out the commit in a native sandbox, and each is on the record
// as a bundle fetch.
func TestServeTaskFromBundle(t *testing.T) {
	e := newEnv(t)
	addr := freePort(t)
	d := e.startDaemon(t, "--listen", addr)
	sock := "--socket=" + d.sock
	key, errOut, code := e.run("", "apikey", "create", sock, "--name", "agent")
	if code != 0 {
		t.Fatalf("apikey create: %d %s", code, errOut)
	}
	key = strings.TrimSpace(key)
	remote, err := sdk.New(sdk.WithBaseURL("http://"+addr), sdk.WithAPIKey(key))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	repo := gitRepoOf(t, map[string]string{"README": "from a bundle\n"})
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(head))
	bp := filepath.Join(t.TempDir(), "r.bundle")
	if out, err := exec.Command("git", "-C", repo, "bundle", "create", "--quiet", bp, "HEAD").CombinedOutput(); err != nil {
		t.Fatalf("git bundle: %v %s", err, out)
	}
	b, err := os.ReadFile(bp)
	if err != nil {
		t.Fatal(err)
	}

	task, err := remote.StartTask(ctx, sdk.TaskRequest{Bundle: bytes.NewReader(b), Commit: commit})
	if err != nil || task.Commit != commit || task.Bundle == nil {
		t.Fatalf("a remote task from a bundle: %+v %v", task, err)
	}
	var out bytes.Buffer
	if st, err := remote.Exec(ctx, task.SandboxID, sdk.ExecRequest{Argv: []string{"cat", "README"}}, &out, &out); err != nil || st.Code != 0 || out.String() != "from a bundle\n" {
		t.Errorf("the checkout: %q %+v %v", out.String(), st, err)
	}
	_ = remote.DestroySandbox(ctx, task.SandboxID)

	mc := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bundle-test", Version: "1"}, nil)
	cs, err := mc.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: bearer{key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "start_task", Arguments: map[string]any{"bundle": base64.StdEncoding.EncodeToString(b), "commit": commit}})
	if err != nil || r.IsError || !strings.Contains(resultText(r), "bundle:sha256:") {
		t.Errorf("start_task over MCP: %v %+v", err, r)
	}
	cs.Close()

	js, errOut, code := e.run("", "task", "start", sock, "--repo", repo, "--upload", "--json")
	var cli sdk.Task
	if code != 0 || json.Unmarshal([]byte(js), &cli) != nil || cli.Commit != commit || cli.Bundle == nil {
		t.Errorf("task start --upload: %d %s %s", code, js, errOut)
	}
	if _, errOut, code := e.run("", "task", "start", sock, "--bundle", bp, "--repo", repo); code != 2 || !strings.Contains(errOut, "give --repo or --bundle") {
		t.Errorf("--bundle with --repo: %d %s", code, errOut)
	}
	rec, _, _ := e.run("", "audit", "query", sock, "--kind", "fetch.request", "--json")
	if strings.Count(rec, `"rule":"bundle"`) != 3 || strings.Count(rec, `"door":"tcp"`) != 2 {
		t.Errorf("the bundle fetches on record: %s", rec)
	}
}
