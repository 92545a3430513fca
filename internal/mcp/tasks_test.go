package mcp_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/mcp"
)

// create_sandbox takes a TTL, labels, limits and a policy layer, the
// last two checked by the server (unknown fields refused), and labels the
// sandbox with the client's name; list_sandboxes and destroy.
func TestSandboxTools(t *testing.T) {
	e := newEnv(t)
	r := e.ok("create_sandbox", map[string]any{"ttl_seconds": 600, "labels": map[string]any{"team": "a"}, "env": []string{"GREETING=hi"},
		"limits": map[string]any{"lifetime": int64(time.Hour)}, "policy": map[string]any{"rules": []any{map[string]any{"id": "no-rm", "command": "rm *", "action": "deny"}}}})
	sb, _ := r.st["sandbox_id"].(string)
	if sb == "" || r.text != "sandbox "+sb+" is ready; its workspace is /workspace" {
		t.Fatalf("create: %q %v", r.text, r.st)
	}
	got, err := e.op.GetSandbox(context.Background(), sb)
	if err != nil || got.Labels["team"] != "a" || got.Labels["mcp.client"] != "mcp-test/1.0" || got.Expires.IsZero() {
		t.Errorf("created: %+v %v", got, err)
	}
	if x := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "echo $GREETING"}); !strings.Contains(x.text, "hi\n") {
		t.Errorf("env: %q", x.text)
	}
	e.fails("exec", map[string]any{"sandbox_id": sb, "command": "rm x"}, "no-rm")
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"ttl_seconds": -1}, "ttl_seconds must be 0 to 86400 seconds"},
		{map[string]any{"limits": map[string]any{"memory": 1}}, `limits: json: unknown field "memory"`},
		{map[string]any{"limits": map[string]any{"pids": "many"}}, "limits: json: cannot unmarshal string"},
		{map[string]any{"policy": map[string]any{"allow_everything": true}}, `policy: json: unknown field "allow_everything"`},
		{map[string]any{"template": "no-such-template"}, "not_found"},
		{map[string]any{"limits": map[string]any{"memory_bytes": 1 << 30}}, "unsupported"},
		{map[string]any{"labels": "a"}, `validating "arguments"`},
	} {
		e.fails("create_sandbox", c.args, c.want)
	}

	other := e.sandbox()
	l := e.ok("list_sandboxes", map[string]any{})
	rows, _ := l.st["sandboxes"].([]any)
	if len(rows) != 2 || !strings.Contains(l.text, sb) || !strings.Contains(l.text, other) {
		t.Errorf("list: %q", l.text)
	}
	one := e.ok("list_sandboxes", map[string]any{"id": sb})
	if one.st["id"] != sb || one.st["state"] != "running" {
		t.Errorf("one: %v", one.st)
	}
	e.fails("list_sandboxes", map[string]any{"id": "0123456789ab"}, "not_found")
	if d := e.ok("destroy", map[string]any{"sandbox_id": other}); d.text != "sandbox "+other+" destroyed" || d.st["sandbox_id"] != other {
		t.Errorf("destroy: %q %v", d.text, d.st)
	}
	if l := e.ok("list_sandboxes", map[string]any{}); strings.Contains(l.text, other) {
		t.Errorf("destroyed sandbox listed: %q", l.text)
	}
	e.fails("destroy", map[string]any{"sandbox_id": ""}, `argument "sandbox_id" must not be empty`)
	e.fails("destroy", map[string]any{}, `missing properties: ["sandbox_id"]`)
}

// A task (no write scope: the fake backend has none): start it, list it,
// run its failing tests, fix it and run them again, finish it; its
// sandbox cannot be destroyed while it runs.
func TestTaskLifecycle(t *testing.T) {
	e, repo, task, sb := startTask(t)
	e.fails("start_task", map[string]any{"repo": ""}, "give repo or bundle")
	e.fails("start_task", map[string]any{"repo": repo + "/nope"}, "no such directory")
	e.fails("destroy", map[string]any{"sandbox_id": sb}, "is task "+task+"'s workspace: a destroy would lose its work; use finish_task")
	e.fails("reset_sandbox", map[string]any{"sandbox_id": sb}, "is task "+task+"'s workspace: a reset would lose its work; use finish_task")

	l := e.ok("list_tasks", map[string]any{})
	if rows, _ := l.st["tasks"].([]any); len(rows) != 1 || rows[0].(map[string]any)["test"] != "grep -q fixed src/a.txt" {
		t.Errorf("list_tasks: %q", l.text)
	}
	if one := e.ok("list_tasks", map[string]any{"id": task}); one.st["id"] != task || one.st["sandbox_id"] != sb {
		t.Errorf("one task: %v", one.st)
	}
	e.fails("list_tasks", map[string]any{"id": "t-nope"}, `not_found: store: task "t-nope"`)

	if d := e.ok("diff", map[string]any{"task_id": task}); d.text != "no changes" || num(t, d.st, "patch_bytes") != 0 {
		t.Errorf("no diff yet: %q %v", d.text, d.st)
	}
	tr := e.fails("run_tests", map[string]any{"task_id": task}, "tests FAILED (exit code 1)")
	if tr.st["passed"] != false || num(t, tr.st, "exit_code") != 1 {
		t.Errorf("failing tests: %v", tr.st)
	}

	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/a.txt", "content": "fixed\n"})
	tr = e.ok("run_tests", map[string]any{"task_id": task, "timeout_seconds": 60})
	if tr.st["passed"] != true || !strings.HasPrefix(tr.text, "tests passed (exit code 0)") {
		t.Errorf("passing tests: %q %v", tr.text, tr.st)
	}
	e.fails("run_tests", map[string]any{"task_id": task, "timeout_seconds": 1e6}, "timeout_seconds must be 0 to 86400")
	e.fails("run_tests", map[string]any{"task_id": ""}, `argument "task_id" must not be empty`)

	f := e.ok("finish_task", map[string]any{"task_id": task})
	if f.st["state"] == nil || !strings.Contains(fmt.Sprint(f.st["changed"]), "src/a.txt") || f.st["test"] == nil {
		t.Errorf("finish_task: %v", f.st)
	}
	if got, err := e.op.GetSandbox(context.Background(), sb); err != nil || got.State != "stopped" {
		t.Errorf("sandbox after finish_task: %+v %v", got, err)
	}
	e.fails("finish_task", map[string]any{"task_id": ""}, `argument "task_id" must not be empty`)
	e.fails("finish_task", map[string]any{"task_id": "t-nope"}, `not_found: store: task "t-nope"`)
}

// startTask starts a task on a repository of three files (one binary),
// its test passing once src/a.txt says "fixed".
func startTask(t *testing.T) (e *env, repo, task, sb string) {
	t.Helper()
	e = newEnv(t)
	// A local repository is the socket's (the operator's, as airlock mcp
	// over stdio is): over TCP a task's repo must be a URL.
	e.srv = &mcp.Server{Client: e.op, Version: "test"}
	e.cs = e.connectWith(nil)
	repo = gitRepo(t, map[string]string{"src/a.txt": "a\n", "logo.png": "\x89PNG\x00\x01", "README": "r\n"})
	r := e.ok("start_task", map[string]any{"repo": repo, "test": "grep -q fixed src/a.txt", "prompt": "fix a"})
	task, _ = r.st["task_id"].(string)
	sb, _ = r.st["sandbox_id"].(string)
	if task == "" || sb == "" || len(fmt.Sprint(r.st["commit"])) != 40 || !strings.Contains(r.text, "checked out in sandbox "+sb) {
		t.Fatalf("start_task: %q %v", r.text, r.st)
	}
	return e, repo, task, sb
}

// A task's diff is paged (binary files summarised), its bundle is a
// resource link the client reads, its whole patch a resource.
func TestTaskDiffAndBundle(t *testing.T) {
	e, _, task, sb := startTask(t)
	// A patch over a page: 16 KiB at a time, cut at lines.
	var big strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&big, "fixed line %d\n", i)
	}
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/a.txt", "content": big.String()})
	if err := e.agent.WriteFile(context.Background(), sb, "/workspace/logo.png", bytes.NewReader([]byte("\x89PNG\x00\x02\x03")), 0o644, false); err != nil {
		t.Fatal(err)
	}
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/README", "content": "changed\n"})
	d := e.ok("diff", map[string]any{"task_id": task})
	total, next := num(t, d.st, "patch_bytes"), num(t, d.st, "next_offset")
	if total < 20000 || next == 0 || next > 16<<10 || !strings.HasSuffix(d.text, fmt.Sprintf("[patch bytes 0-%d of %d shown; more with offset=%d]", next, total, next)) || d.st["out_of_scope"] == nil ||
		!strings.Contains(fmt.Sprint(d.st["binary"]), "logo.png") {
		t.Fatalf("diff page 1: %v %.200q", d.st, d.text)
	}
	var patch strings.Builder
	patch.WriteString(d.text[:next])
	for next != 0 {
		p := e.ok("diff", map[string]any{"task_id": task, "offset": next})
		f, _ := p.st["next_offset"].(float64) // absent on the last page
		n := int(f)
		if n == 0 {
			patch.WriteString(p.text)
		} else {
			patch.WriteString(p.text[:n-next])
		}
		next = n
	}
	if patch.Len() != total || !strings.Contains(patch.String(), "+fixed line 1999\n") || !strings.Contains(patch.String(), "[binary file changed: ") || strings.Contains(patch.String(), "GIT binary patch") {
		t.Errorf("patch read by pages: %d of %d bytes", patch.Len(), total)
	}
	e.fails("diff", map[string]any{"task_id": task, "offset": -1}, "offset must not be negative")
	e.fails("diff", map[string]any{"task_id": ""}, `argument "task_id" must not be empty`)

	// The bundle is a link; the client reads it as a resource.
	b := e.ok("export_bundle", map[string]any{"task_id": task})
	var link *mcpsdk.ResourceLink
	for _, c := range b.Content {
		if l, ok := c.(*mcpsdk.ResourceLink); ok {
			link = l
		}
	}
	if link == nil || link.URI != "airlock://tasks/"+task+"/bundle.tar.gz" || !strings.Contains(b.text, "airlock bundle verify") {
		t.Fatalf("export_bundle: %q %+v", b.text, b.Content)
	}
	res, err := e.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: link.URI})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/gzip" {
		t.Fatalf("bundle resource: %v", err)
	}
	if names := tarNames(t, res.Contents[0].Blob); !strings.Contains(names, "patch.diff") || !strings.Contains(names, "manifest.json") {
		t.Errorf("bundle entries: %s", names)
	}
	res, err = e.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "airlock://tasks/" + task + "/diff.patch"})
	if err != nil || len(res.Contents[0].Text) < total || !strings.Contains(res.Contents[0].Text, "GIT binary patch") {
		t.Errorf("diff resource: %v", err)
	}
	for _, uri := range []string{"airlock://tasks//diff.patch", "airlock://tasks/a/b/bundle.tar.gz", "airlock://tasks/t-nope/bundle.tar.gz", "airlock://tasks/t-nope/diff.patch"} {
		if _, err := e.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("%s: read", uri)
		}
	}
	e.fails("export_bundle", map[string]any{"task_id": "t-nope"}, `not_found: store: task "t-nope"`)
	e.fails("export_bundle", map[string]any{"task_id": ""}, `argument "task_id" must not be empty`)

}

func tarNames(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	return strings.Join(names, " ")
}

// The task prompt spells out the workflow with the repository, goal and
// test; repo and goal are required.
func TestTaskPrompt(t *testing.T) {
	e := newEnv(t)
	p, err := e.cs.GetPrompt(context.Background(), &mcpsdk.GetPromptParams{Name: "task", Arguments: map[string]string{"repo": "/src/r", "goal": "fix the bug"}})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("%+v %v", p, err)
	}
	text := p.Messages[0].Content.(*mcpsdk.TextContent).Text
	if !strings.Contains(text, "Goal: fix the bug") || !strings.Contains(text, `start_task with repo "/src/r"`) || !strings.Contains(text, `test "the repository's test command"`) {
		t.Errorf("prompt: %s", text)
	}
	if _, err := e.cs.GetPrompt(context.Background(), &mcpsdk.GetPromptParams{Name: "task", Arguments: map[string]string{"repo": "/src/r"}}); err == nil || !strings.Contains(err.Error(), "repo and goal are required") {
		t.Errorf("no goal: %v", err)
	}
}
