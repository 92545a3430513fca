package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

// mcpEnv is a real daemon (default policy, a TCP listener with an API
// key) and the Go SDK's client connected to `airlock mcp` over stdio.
type mcpEnv struct {
	e    *env
	d    *daemonProc
	addr string
	key  string
	cs   *mcpsdk.ClientSession
}

func newMCPEnv(t *testing.T) *mcpEnv {
	t.Helper()
	e := newEnv(t)
	pf := filepath.Join(filepath.Dir(e.state), "default.yaml")
	out, _, _ := e.run("", "policy", "default")
	if err := os.WriteFile(pf, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := e.startDaemon(t, "--policy", pf, "--listen", addr)
	key, _, code := e.run("", "apikey", "create", "--socket", d.sock, "--name", "mcp")
	if code != 0 {
		t.Fatal("apikey create")
	}
	m := &mcpEnv{e: e, d: d, addr: addr, key: strings.TrimSpace(key)}
	m.cs = m.stdio(t, nil)
	return m
}

// stdio connects a Go SDK client to `airlock mcp`; opts may be nil.
func (m *mcpEnv) stdio(t *testing.T, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "airlock-go-test", Version: "1.0"}, opts)
	cs, err := c.Connect(context.Background(), &mcpsdk.CommandTransport{Command: m.e.cmd("mcp", "--socket", m.d.sock)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcpsdk.ClientSession, name string, args any) (*mcpsdk.CallToolResult, string) {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r, resultText(r)
}

func resultText(r *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structured(t *testing.T, r *mcpsdk.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(r.StructuredContent)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func (m *mcpEnv) sandbox(t *testing.T, cs *mcpsdk.ClientSession) string {
	t.Helper()
	r, text := callTool(t, cs, "create_sandbox", map[string]any{})
	if r.IsError {
		t.Fatal(text)
	}
	id, _ := structured(t, r)["sandbox_id"].(string)
	if id == "" {
		t.Fatalf("no sandbox id: %s", text)
	}
	return id
}

// A long test run's verdict survives truncation: exec shows the head and
// the tail, cut at lines, says what it left out, carries the output once
// (text, not again in structured content), and the stored whole is
// readable page by page over MCP.
func TestMCPOutputHeadTailAndPaging(t *testing.T) {
	m := newMCPEnv(t)
	sb := m.sandbox(t, m.cs)
	r, text := callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb,
		"command": "i=0; while [ $i -lt 20000 ]; do echo \"line $i of the test log\"; i=$((i+1)); done; echo 'VERDICT: 3 failed'"})
	if r.IsError {
		t.Fatal(text)
	}
	if !strings.Contains(text, "line 0 of the test log\n") || !strings.HasSuffix(text, "VERDICT: 3 failed\n") {
		t.Fatalf("head or tail lost: %.300q ... %.300q", text, text[max(0, len(text)-300):])
	}
	mark := regexp.MustCompile(`\n\[\.\.\. (\d+) bytes \((\d+) lines\) left out at offset (\d+); read them with exec_output \.\.\.\]\n`)
	sm := mark.FindStringSubmatch(text)
	if sm == nil {
		t.Fatalf("no marker of what was left out: %.500q", text)
	}
	before, after, _ := strings.Cut(text, sm[0])
	if !strings.HasSuffix(before, " of the test log") || !strings.HasPrefix(after, "line ") {
		t.Errorf("a cut falls mid-line: %q | %q", before[max(0, len(before)-40):], after[:40])
	}
	if len(text) > 20<<10 {
		t.Errorf("exec result is %d bytes", len(text))
	}
	st := structured(t, r)
	if _, has := st["stdout"]; has {
		t.Errorf("the output is carried twice: %v", st)
	}
	var omitted, lines, offset int
	fmt.Sscan(sm[1], &omitted)
	fmt.Sscan(sm[2], &lines)
	fmt.Sscan(sm[3], &offset)
	total := int(st["stdout_bytes"].(float64))
	head := strings.TrimPrefix(before, "exit code 0\nstdout:\n") + "\n" // the marker's leading newline ends the head
	if want := total - len(head) - len(after); omitted != want || offset != len(head) {
		t.Errorf("omitted %d, want about %d (total %d)", omitted, want, total)
	}
	if lines < 18000 || float64(st["omitted_bytes"].(float64)) != float64(omitted) {
		t.Errorf("omitted lines %d, structured %v", lines, st["omitted_bytes"])
	}
	// The whole output, page by page from where the text left off.
	execID := st["exec_id"].(string)
	var got strings.Builder
	got.WriteString(head)
	for off, pages := offset, 0; ; pages++ {
		r, text := callTool(t, m.cs, "exec_output", map[string]any{"sandbox_id": sb, "exec_id": execID, "offset": off, "limit": 65536})
		if r.IsError || pages > 20 {
			t.Fatalf("page at %d: %s", off, text)
		}
		ps := structured(t, r)
		_, body, _ := strings.Cut(text, "]\n")
		got.WriteString(body)
		next := int(ps["next_offset"].(float64))
		if next >= total {
			break
		}
		if !strings.HasSuffix(body, "\n") {
			t.Fatalf("a page ends mid-line at %d", next)
		}
		off = next
	}
	want := ""
	for i := 0; i < 20000; i++ {
		want += fmt.Sprintf("line %d of the test log\n", i)
	}
	want += "VERDICT: 3 failed\n"
	if got.String() != want {
		t.Fatalf("paged output differs: %d bytes, want %d", got.Len(), len(want))
	}
	// The tail alone.
	r, text = callTool(t, m.cs, "exec_output", map[string]any{"sandbox_id": sb, "exec_id": execID, "tail": 100})
	if r.IsError || !strings.HasSuffix(text, "line 19999 of the test log\nVERDICT: 3 failed\n") || strings.Contains(text, "]\nne ") {
		t.Fatalf("tail: %q", text)
	}
}

// notifications/cancelled kills the command's whole process tree, and
// the cancelled request gets no response (raw JSON-RPC over stdio, to see
// every line the server writes).
func TestMCPCancelKillsTheCommand(t *testing.T) {
	m := newMCPEnv(t)
	sb := m.sandbox(t, m.cs)
	c := m.e.cmd("mcp", "--socket", m.d.sock)
	in, _ := c.StdinPipe()
	outPipe, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = c.Wait() }()
	lines := make(chan map[string]any, 16)
	go func() {
		dec := json.NewDecoder(outPipe)
		for {
			var msg map[string]any
			if dec.Decode(&msg) != nil {
				close(lines)
				return
			}
			lines <- msg
		}
	}()
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = in.Write(append(b, '\n'))
	}
	next := func() map[string]any {
		select {
		case msg := <-lines:
			return msg
		case <-time.After(20 * time.Second):
			t.Fatal("no message from the server")
			return nil
		}
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "0"}}})
	next()
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "exec",
		"arguments": map[string]any{"sandbox_id": sb, "command": "sleep 300 & sleep 301 & echo started; wait"}}})
	time.Sleep(1500 * time.Millisecond) // started and running
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 2, "reason": "test"}})
	time.Sleep(1500 * time.Millisecond)
	send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "ping"})
	for {
		msg := next()
		if id, _ := msg["id"].(float64); id == 2 {
			t.Fatalf("the cancelled request was answered: %v", msg)
		} else if id == 3 {
			break
		}
	}
	r, text := callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "ps -eo args | grep -c '^sleep 30[01]' || true"})
	if r.IsError || !strings.HasPrefix(strings.TrimPrefix(text, "exit code 0\nstdout:\n"), "0\n") {
		t.Fatalf("the cancelled command's processes live on: %q", text)
	}
}

// A command over MCP that names no timeout gets the default one
// (`airlock mcp --exec-timeout`, 10 minutes unless set); one that names
// a timeout is killed at it.
func TestMCPExecTimeout(t *testing.T) {
	m := newMCPEnv(t)
	sb := m.sandbox(t, m.cs)
	r, text := callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "sleep 30", "timeout_seconds": 1})
	if st := structured(t, r); !r.IsError || st["limit"] != "timeout" || st["exit_code"].(float64) != 124 {
		t.Fatalf("timeout: %s %v", text, st)
	}
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcpsdk.CommandTransport{Command: m.e.cmd("mcp", "--socket", m.d.sock, "--exec-timeout", "1s")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	start := time.Now()
	r, text = callTool(t, cs, "exec", map[string]any{"sandbox_id": sb, "command": "sleep 30"})
	if st := structured(t, r); st["limit"] != "timeout" || time.Since(start) > 10*time.Second {
		t.Fatalf("default timeout: %s %v after %s", text, st, time.Since(start))
	}
}

// A command that outlives its call: progress notifications (with the
// last output line) while it runs, then its exec id past the soft
// deadline, and exec_output polls it to its end.
func TestMCPProgressAndSoftDeadline(t *testing.T) {
	m := newMCPEnv(t)
	sb := m.sandbox(t, m.cs)
	got := make(chan string, 32)
	cs := m.stdio(t, &mcpsdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
		if req.Params.ProgressToken == "tok" {
			got <- req.Params.Message
		}
	}})
	params := &mcpsdk.CallToolParams{Name: "exec", Arguments: map[string]any{"sandbox_id": sb,
		"command": "for i in 1 2 3 4 5; do echo step $i; sleep 1; done; echo done", "wait_seconds": 3}}
	params.SetProgressToken("tok")
	start := time.Now()
	r, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	st := structured(t, r)
	if st["running"] != true || st["exec_id"] == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("no hand-off at the soft deadline: %s %v", resultText(r), st)
	}
	var msgs []string
	for len(got) > 0 {
		msgs = append(msgs, <-got)
	}
	if len(msgs) < 2 || !strings.HasPrefix(msgs[len(msgs)-1], "step ") {
		t.Fatalf("progress: %q", msgs)
	}
	r, text := callTool(t, cs, "exec_output", map[string]any{"sandbox_id": sb, "exec_id": st["exec_id"], "wait_seconds": 20})
	ps := structured(t, r)
	if r.IsError || ps["running"] != false || ps["exit_code"].(float64) != 0 || !strings.HasSuffix(text, "step 5\ndone\n") {
		t.Fatalf("poll: %s %v", text, ps)
	}
}

// The approval loop closes: a retry joins the open approval rather than
// asking again, a denial answers with its reason (exec and get_approval),
// exec can wait for the decision, and an approval ends with its sandbox.
func TestMCPApprovalLoop(t *testing.T) {
	m := newMCPEnv(t)
	sb := m.sandbox(t, m.cs)
	cmd := map[string]any{"sandbox_id": sb, "command": "rm -rf /workspace/old"}
	r, text := callTool(t, m.cs, "exec", cmd)
	st := structured(t, r)
	ap, _ := st["approval_id"].(string)
	if !r.IsError || st["approval_state"] != "pending" || !strings.HasPrefix(ap, "ap-") {
		t.Fatalf("not held: %s %v", text, st)
	}
	r, text = callTool(t, m.cs, "exec", cmd)
	if st := structured(t, r); st["approval_id"] != ap || !strings.Contains(text, "not asked again") {
		t.Fatalf("a retry made a new approval: %s %v", text, st)
	}
	out, _, _ := m.e.run("", "approvals", "--socket", m.d.sock, "--state", "pending")
	if n := strings.Count(out, "command:   /bin/sh -c 'rm -rf /workspace/old'"); n != 1 {
		t.Fatalf("%d pending approvals for one command: %q", n, out)
	}
	if _, errOut, code := m.e.run("", "deny", "--socket", m.d.sock, "--reason", "keep old for now", ap); code != 0 {
		t.Fatalf("deny: %s", errOut)
	}
	r, text = callTool(t, m.cs, "exec", cmd)
	if st := structured(t, r); st["approval_state"] != "denied" || st["reason"] != "keep old for now" || !strings.Contains(text, "keep old for now") {
		t.Fatalf("denial: %s %v", text, st)
	}
	r, text = callTool(t, m.cs, "get_approval", map[string]any{"approval_id": ap})
	if st := structured(t, r); st["state"] != "denied" || st["reason"] != "keep old for now" {
		t.Fatalf("get_approval: %s", text)
	}
	// exec waits for the decision, with progress.
	go func() {
		time.Sleep(2 * time.Second)
		out, _, _ := m.e.run("", "approvals", "--socket", m.d.sock, "--state", "pending")
		for _, f := range strings.Fields(out) {
			if strings.HasPrefix(f, "ap-") && f != ap {
				m.e.run("", "approve", "--socket", m.d.sock, f)
			}
		}
	}()
	r, text = callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "rm -rf /workspace/old2", "approval_wait_seconds": 30})
	if st := structured(t, r); r.IsError || st["exit_code"].(float64) != 0 {
		t.Fatalf("exec waiting for approval: %s %v", text, st)
	}
	// An approval of a destroyed sandbox is not left pending.
	r, _ = callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "rm -rf /workspace/old3"})
	held := structured(t, r)["approval_id"].(string)
	if r, text := callTool(t, m.cs, "destroy", map[string]any{"sandbox_id": sb}); r.IsError {
		t.Fatal(text)
	}
	r, text = callTool(t, m.cs, "get_approval", map[string]any{"approval_id": held})
	if st := structured(t, r); st["state"] == "pending" {
		t.Fatalf("approval of a destroyed sandbox still pending: %s", text)
	}
}

// bearer adds an API key to every request of an HTTP client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// httpSession connects the Go SDK's client to /mcp over TCP with the key.
func (m *mcpEnv) httpSession(t *testing.T) *mcpsdk.ClientSession {
	t.Helper()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "airlock-go-test", Version: "1.0"}, nil)
	cs, err := c.Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: "http://" + m.addr + "/mcp", HTTPClient: &http.Client{Transport: bearer{m.key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// A trivial exec over MCP (streamable HTTP, the SDK's client) against
// the same exec on the HTTP API (the Go SDK of airlock), both over TCP
// with the key, interleaved in one run. Target: within 2 ms.
func TestBenchMCPExec(t *testing.T) {
	if os.Getenv("AIRLOCK_BENCH") == "" {
		t.Skip("AIRLOCK_BENCH=1 runs it")
	}
	m := newMCPEnv(t)
	cs := m.httpSession(t)
	sb := m.sandbox(t, cs)
	api, err := sdk.New(sdk.WithBaseURL("http://"+m.addr), sdk.WithAPIKey(m.key))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var viaAPI, viaMCP []time.Duration
	for i := 0; i < 60; i++ {
		start := time.Now()
		st, err := api.Exec(ctx, sb, sdk.ExecRequest{Argv: []string{"/bin/sh", "-c", "true"}}, nil, nil)
		if err != nil || st.Code != 0 {
			t.Fatal(err)
		}
		viaAPI = append(viaAPI, time.Since(start))
		start = time.Now()
		r, text := callTool(t, cs, "exec", map[string]any{"sandbox_id": sb, "command": "true"})
		if r.IsError {
			t.Fatal(text)
		}
		viaMCP = append(viaMCP, time.Since(start))
	}
	a, b := median(viaAPI[10:]), median(viaMCP[10:])
	t.Logf("BENCH exec true: HTTP API median %s, MCP (streamable HTTP) median %s, difference %s", a, b, b-a)
	if b-a > 2*time.Millisecond {
		t.Errorf("MCP exec is %s slower than the API's", b-a)
	}
}

// Every call is checked against its tool's published schema: a missing
// required property, a null, an unknown property and a wrong type are
// refused, and nothing is written.
func TestMCPSchemaValidation(t *testing.T) {
	m := newMCPEnv(t)
	sb := m.sandbox(t, m.cs)
	p := "/workspace/keep.txt"
	if r, text := callTool(t, m.cs, "write_file", map[string]any{"sandbox_id": sb, "path": p, "content": "precious\n"}); r.IsError {
		t.Fatal(text)
	}
	for _, args := range []map[string]any{
		{"sandbox_id": sb, "path": p},
		{"sandbox_id": sb, "path": p, "content": nil},
		{"sandbox_id": sb, "path": p, "content": "x", "append": true},
		{"sandbox_id": sb, "path": p, "content": 7},
	} {
		r, text := callTool(t, m.cs, "write_file", args)
		if !r.IsError || !strings.Contains(text, "validating") {
			t.Errorf("%v accepted: %s", args, text)
		}
	}
	if r, text := callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "true", "timeout": 5}); !r.IsError {
		t.Errorf("unknown exec property accepted: %s", text)
	}
	if r, text := callTool(t, m.cs, "create_sandbox", map[string]any{"limits": map[string]any{"memory": 1}}); !r.IsError || !strings.Contains(text, "unknown field") {
		t.Errorf("unknown limit accepted: %s", text)
	}
	if r, text := callTool(t, m.cs, "create_sandbox", map[string]any{"policy": map[string]any{"clases": map[string]any{}}}); !r.IsError || !strings.Contains(text, "unknown field") {
		t.Errorf("unknown policy field accepted: %s", text)
	}
	r, text := callTool(t, m.cs, "create_sandbox", map[string]any{"policy": map[string]any{"classes": map[string]any{"read": "deny"}}})
	if r.IsError {
		t.Fatal(text)
	}
	tight := structured(t, r)["sandbox_id"].(string)
	if r, text := callTool(t, m.cs, "exec", map[string]any{"sandbox_id": tight, "command": "cat /workspace/x"}); !r.IsError || structured(t, r)["code"] != "policy_denied" {
		t.Errorf("the sandbox's policy layer is not applied: %s", text)
	}
	if r, text := callTool(t, m.cs, "create_sandbox", map[string]any{"limits": map[string]any{"pids": 64}, "labels": map[string]any{"via": "mcp"}}); r.IsError {
		t.Errorf("limits: %s", text)
	} else if id := structured(t, r)["sandbox_id"].(string); id != "" {
		r, text := callTool(t, m.cs, "list_sandboxes", map[string]any{"id": id})
		if st := structured(t, r); !strings.Contains(text, `"pids":64`) || fmt.Sprint(st["labels"]) != "map[mcp.client:airlock-go-test/1.0 via:mcp]" {
			t.Errorf("created with: %s", text)
		}
		// The record names the client next to the actor.
		out, _, _ := m.e.run("", "audit", "query", "--socket", m.d.sock, "--kind", "sandbox.create", "--sandbox", id, "--json")
		if !strings.Contains(out, `"mcp.client":"airlock-go-test/1.0"`) || !strings.Contains(out, `"actor":"operator`) {
			t.Errorf("sandbox.create record: %s", out)
		}
	}
	if _, text := callTool(t, m.cs, "read_file", map[string]any{"sandbox_id": sb, "path": p}); text != "     1\tprecious\n" {
		t.Fatalf("the file changed: %q", text)
	}
	tools, err := m.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		s, _ := json.Marshal(tl.InputSchema)
		if !strings.Contains(string(s), `"additionalProperties":false`) {
			t.Errorf("%s: schema allows unknown properties: %s", tl.Name, s)
		}
	}
}

// Reading and editing: line ranges with numbers, a binary file named
// and never shown, an edit that must be unique (with the lines of each
// occurrence, or the near miss), and grep and glob search.
func TestMCPFileTools(t *testing.T) {
	m := newMCPEnv(t)
	sb := m.sandbox(t, m.cs)
	var body strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&body, "row %d\n", i)
	}
	body.WriteString("  Needle here\nneedle twice\nneedle twice\n")
	if r, text := callTool(t, m.cs, "write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/big.txt", "content": body.String()}); r.IsError {
		t.Fatal(text)
	}
	r, text := callTool(t, m.cs, "read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/big.txt"})
	if st := structured(t, r); st["end_line"].(float64) != 2000 || st["total_lines"].(float64) != 3003 || !strings.Contains(text, "start_line=2001") {
		t.Fatalf("default range: %v %s", st, text[len(text)-100:])
	}
	_, text = callTool(t, m.cs, "read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/big.txt", "start_line": 10, "end_line": 11})
	if !strings.HasPrefix(text, "    10\trow 10\n    11\trow 11\n[lines 10-11 of 3003") {
		t.Fatalf("range: %q", text)
	}
	// A binary file (written from a program: bytes no shell line carries).
	if r, text := callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "head -c 3000 /dev/urandom > /workspace/blob.bin; printf '\\000' >> /workspace/blob.bin"}); r.IsError {
		t.Fatal(text)
	}
	r, text = callTool(t, m.cs, "read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/blob.bin"})
	if st := structured(t, r); st["binary"] != true || !strings.Contains(text, "binary file (3001 bytes") || !utf8.ValidString(text) || len(text) > 300 {
		t.Fatalf("binary: %v %q", st, text)
	}
	// Edits.
	edit := func(old, new string, all bool) (*mcpsdk.CallToolResult, string) {
		return callTool(t, m.cs, "edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/big.txt", "old": old, "new": new, "replace_all": all})
	}
	if r, text := edit("needle twice\n", "x\n", false); !r.IsError || !strings.Contains(text, "occurs 2 times") || !strings.Contains(text, "lines 3002, 3003") {
		t.Fatalf("ambiguous edit: %s", text)
	}
	if r, text := edit("needle here", "y", false); !r.IsError || !strings.Contains(text, "line 3001 differs only in whitespace or case") {
		t.Fatalf("near miss: %s", text)
	}
	if r, text := edit("row 2999\n", "row two-nine-nine-nine\n", false); r.IsError || structured(t, r)["replacements"].(float64) != 1 {
		t.Fatalf("edit: %s", text)
	}
	if r, text := edit("needle twice", "found", true); r.IsError || structured(t, r)["replacements"].(float64) != 2 {
		t.Fatalf("replace_all: %s", text)
	}
	_, text = callTool(t, m.cs, "read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/big.txt", "start_line": 2999, "end_line": 3003})
	if !strings.Contains(text, "row two-nine-nine-nine\n") || strings.Count(text, "\tfound\n") != 2 {
		t.Fatalf("after edits: %q", text)
	}
	// Search: a pattern with shell metacharacters is grep's, not a shell's.
	r, text = callTool(t, m.cs, "search", map[string]any{"sandbox_id": sb, "pattern": "row 1[0-9]{3}$|$(touch /workspace/pwned)"})
	if st := structured(t, r); r.IsError || st["results"].(float64) != 1000 || st["more"] != true || !strings.Contains(text, "big.txt:1000:row 1000") {
		t.Fatalf("grep: %v %.300s", st, text)
	}
	_, text = callTool(t, m.cs, "search", map[string]any{"sandbox_id": sb, "glob": "*.bin"})
	if strings.TrimSpace(text) != "/workspace/blob.bin" {
		t.Fatalf("glob: %q", text)
	}
	if _, text := callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "ls /workspace"}); strings.Contains(text, "pwned") {
		t.Fatal("the search pattern ran in a shell")
	}
	// A sandbox's file as a resource, and the workflow prompt.
	callTool(t, m.cs, "write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/small.txt", "content": "hello\n"})
	rr, err := m.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "airlock://sandboxes/" + sb + "/files/workspace/src/small.txt"})
	if err != nil || rr.Contents[0].Text != "hello\n" {
		t.Fatalf("file resource: %v %+v", err, rr)
	}
	callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "seq 1 100000 > /workspace/huge.txt"})
	if _, err := m.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "airlock://sandboxes/" + sb + "/files/workspace/huge.txt"}); err == nil {
		t.Error("a file over the resource cap was served")
	}
	pr, err := m.cs.GetPrompt(context.Background(), &mcpsdk.GetPromptParams{Name: "task", Arguments: map[string]string{"repo": "/src/r", "goal": "fix it"}})
	if err != nil || !strings.Contains(pr.Messages[0].Content.(*mcpsdk.TextContent).Text, "start_task with repo \"/src/r\"") {
		t.Fatalf("prompt: %v %+v", err, pr)
	}
}

// A task over MCP: the diff is paged and summarises binary files, the
// bundle is a link read as a resource, destroy refuses the task's
// sandbox, and finish_task ends the task.
func TestMCPTaskTools(t *testing.T) {
	m := newMCPEnv(t)
	repo := t.TempDir()
	_ = os.WriteFile(filepath.Join(repo, "README"), []byte("base\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git: %v %s", err, out)
		}
	}
	r, text := callTool(t, m.cs, "start_task", map[string]any{"repo": repo, "scope": []string{"**"}, "test": "grep -q base README"})
	if r.IsError {
		t.Fatal(text)
	}
	st := structured(t, r)
	task, sb := st["task_id"].(string), st["sandbox_id"].(string)
	if r, text := callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb,
		"command": "seq 1 40000 > /workspace/big.txt; head -c 20000 /dev/urandom > /workspace/blob.bin"}); r.IsError {
		t.Fatal(text)
	}
	r, text = callTool(t, m.cs, "diff", map[string]any{"task_id": task})
	st = structured(t, r)
	next, _ := st["next_offset"].(float64)
	if r.IsError || len(text) > 17<<10 || next == 0 || !strings.Contains(text, "more with offset=") {
		t.Fatalf("diff not paged: %d bytes, %v", len(text), st)
	}
	if bin, _ := st["binary"].([]any); len(bin) != 1 || !strings.Contains(fmt.Sprint(bin[0]), "blob.bin") {
		t.Fatalf("binary file not summarised: %v", st["binary"])
	}
	var all strings.Builder
	all.WriteString(text[:strings.LastIndex(text, "\n[patch bytes")])
	for pages := 0; next > 0; pages++ {
		r, text = callTool(t, m.cs, "diff", map[string]any{"task_id": task, "offset": int(next)})
		if r.IsError || pages > 100 {
			t.Fatal(text)
		}
		n, _ := structured(t, r)["next_offset"].(float64)
		if n > 0 {
			text = text[:strings.LastIndex(text, "\n[patch bytes")]
		}
		all.WriteString(text)
		next = n
	}
	if !strings.Contains(all.String(), "+40000\n") || !strings.Contains(all.String(), "[binary file changed") {
		t.Fatalf("the pages do not add up to the patch (%d bytes)", all.Len())
	}
	r, text = callTool(t, m.cs, "export_bundle", map[string]any{"task_id": task})
	var link *mcpsdk.ResourceLink
	for _, c := range r.Content {
		if l, ok := c.(*mcpsdk.ResourceLink); ok {
			link = l
		}
	}
	if r.IsError || link == nil || len(text) > 1000 {
		t.Fatalf("bundle: %s", text)
	}
	rr, err := m.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: link.URI})
	if err != nil || len(rr.Contents) != 1 || len(rr.Contents[0].Blob) < 100 || rr.Contents[0].Blob[0] != 0x1f {
		t.Fatalf("bundle resource: %v", err)
	}
	if r, text := callTool(t, m.cs, "destroy", map[string]any{"sandbox_id": sb}); !r.IsError || !strings.Contains(text, "finish_task") {
		t.Fatalf("destroy of a task's sandbox: %s", text)
	}
	r, text = callTool(t, m.cs, "finish_task", map[string]any{"task_id": task})
	if r.IsError {
		t.Fatal(text)
	}
	r, text = callTool(t, m.cs, "list_tasks", map[string]any{"id": task})
	if st := structured(t, r); r.IsError || st["state"] == "running" || st["finished"] == nil {
		t.Fatalf("after finish_task: %s", text)
	}
}

// The streamable HTTP transport as the spec has it, tried with raw
// requests: 202 for a posted response or notification, the protocol
// version header and Origin checked, a session id checked (and worth
// nothing to another key), and a client without a key told plainly that
// there is no OAuth rather than sent into a discovery flow.
func TestMCPHTTPTransport(t *testing.T) {
	m := newMCPEnv(t)
	other, _, code := m.e.run("", "apikey", "create", "--socket", m.d.sock, "--name", "other")
	if code != 0 {
		t.Fatal("apikey create")
	}
	url := "http://" + m.addr + "/mcp"
	post := func(key, session, body string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	resp := post(m.key, "", init)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: %d session %q", resp.StatusCode, session)
	}
	pv := []string{"MCP-Protocol-Version", "2025-06-18"}
	for _, tc := range []struct {
		name, key, session, body string
		hdr                      []string
		want                     int
	}{
		{"notification", m.key, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, pv, 202},
		{"posted response", m.key, session, `{"jsonrpc":"2.0","id":"s-1","result":{}}`, pv, 202},
		{"unknown protocol version", m.key, session, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, []string{"MCP-Protocol-Version", "1999-01-01"}, 400},
		{"another site's page", m.key, session, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, append([]string{"Origin", "http://evil.example.test", "Sec-Fetch-Site", "cross-site"}, pv...), 403},
		{"made-up session", m.key, "0123456789abcdef", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, pv, 404},
		{"another key's session", strings.TrimSpace(other), session, `{"jsonrpc":"2.0","id":5,"method":"ping"}`, pv, 404},
		// The identity is the key that authenticated, not the headers:
		// an unused header neither moves the session nor makes another.
		{"same key, another X-API-KEY", m.key, session, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, append([]string{"X-API-KEY", "junk"}, pv...), 200},
		{"no session", m.key, "", `{"jsonrpc":"2.0","id":6,"method":"ping"}`, pv, 400},
		{"ping", m.key, session, `{"jsonrpc":"2.0","id":7,"method":"ping"}`, pv, 200},
		{"no key", "", session, `{"jsonrpc":"2.0","id":8,"method":"ping"}`, pv, 401},
	} {
		if resp := post(tc.key, tc.session, tc.body, tc.hdr...); resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	// OAuth discovery, as a client sent a 401 tries it: no OAuth here.
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server", "/register"} {
		resp, err := http.Get("http://" + m.addr + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), "does not use OAuth") {
			t.Errorf("%s: %d %s", p, resp.StatusCode, b)
		}
	}
}

// A background command: started at once, fed on stdin, listed, killed.
// Its output is the daemon's: stored while it runs only up to 64 KiB
// behind its end, whole once it ends. A command handed off at the soft
// deadline is polled live (head and tail so far).
func TestMCPBackgroundExec(t *testing.T) {
	m := newMCPEnv(t)
	sb := m.sandbox(t, m.cs)
	r, text := callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "while read l; do echo got $l; done; echo eof; sleep 300", "background": true, "stdin_open": true})
	st := structured(t, r)
	id, _ := st["exec_id"].(string)
	if r.IsError || st["running"] != true || id == "" {
		t.Fatalf("background: %s", text)
	}
	if r, text := callTool(t, m.cs, "exec_input", map[string]any{"sandbox_id": sb, "exec_id": id, "data": "one\ntwo\n", "close": true}); r.IsError {
		t.Fatal(text)
	}
	_, text = callTool(t, m.cs, "list_execs", map[string]any{"sandbox_id": sb})
	if !strings.Contains(text, id) || !strings.Contains(text, `"running":true`) {
		t.Fatalf("list_execs: %s", text)
	}
	time.Sleep(500 * time.Millisecond)
	if r, text := callTool(t, m.cs, "exec_kill", map[string]any{"sandbox_id": sb, "exec_id": id}); r.IsError {
		t.Fatal(text)
	}
	r, text = callTool(t, m.cs, "exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "wait_seconds": 10})
	if st := structured(t, r); st["running"] != false || st["exit_code"].(float64) != 137 || !strings.HasSuffix(text, "got one\ngot two\neof\n") {
		t.Fatalf("after kill: %s %v", text, st)
	}
	// Handed off at the soft deadline: the poll shows what it wrote so far.
	r, _ = callTool(t, m.cs, "exec", map[string]any{"sandbox_id": sb, "command": "echo first; sleep 300", "wait_seconds": 1})
	id, _ = structured(t, r)["exec_id"].(string)
	r, text = callTool(t, m.cs, "exec_output", map[string]any{"sandbox_id": sb, "exec_id": id})
	if st := structured(t, r); st["running"] != true || !strings.HasSuffix(text, "first\n") {
		t.Fatalf("live poll: %s %v", text, st)
	}
	callTool(t, m.cs, "exec_kill", map[string]any{"sandbox_id": sb, "exec_id": id})
}

// The MCP Inspector's CLI (test/node) in --strict mode finds no problem
// in the tools' schemas (exit 6 if it finds an error, and it reports
// warnings, which are failures here too), and drives a tool call over
// stdio and over streamable HTTP with the key.
func TestMCPInspectorStrict(t *testing.T) {
	bin, _ := filepath.Abs("../../test/node/node_modules/.bin/mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("test/node/node_modules is missing the Inspector: run scripts/setup.sh")
		}
		t.Skip("test/node/node_modules is missing the Inspector: run scripts/setup.sh")
	}
	m := newMCPEnv(t)
	home := t.TempDir() // the Inspector keeps a catalog in ~/.mcp-inspector
	inspect := func(args ...string) (string, string) {
		t.Helper()
		c := exec.Command(bin, append([]string{"--cli"}, args...)...)
		c.Env = append(m.e.cmd().Env, "HOME="+home)
		var o, er strings.Builder
		c.Stdout, c.Stderr = &o, &er
		if err := c.Run(); err != nil {
			t.Fatalf("inspector %v: %v\n%s\n%s", args, err, o.String(), er.String())
		}
		return o.String(), er.String()
	}
	out, errOut := inspect("--strict", "--method", "tools/list", airlockBin, "mcp", "--socket", m.d.sock)
	// --strict prints each problem (warnings too) on stderr, nothing when
	// there is none.
	if !strings.Contains(out, `"exec"`) || strings.TrimSpace(errOut) != "" {
		t.Fatalf("strict tools/list: %s", errOut)
	}
	out, _ = inspect("--method", "tools/call", "--tool-name", "create_sandbox", airlockBin, "mcp", "--socket", m.d.sock)
	if !strings.Contains(out, "sandbox_id") {
		t.Fatalf("tools/call over stdio: %s", out)
	}
	out, errOut = inspect("http://"+m.addr+"/mcp", "--strict", "--method", "tools/list", "--transport", "http", "--header", "Authorization: Bearer "+m.key)
	if !strings.Contains(out, `"exec"`) || strings.TrimSpace(errOut) != "" {
		t.Fatalf("strict tools/list over HTTP: %s %s", out, errOut)
	}
}
