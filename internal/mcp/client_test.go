package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
	"github.com/airlock-dev/airlock/wire"
)

// sessionAs is a client session with e's server under the client name
// and version given.
func (e *env) sessionAs(name, version string) *mcpsdk.ClientSession {
	e.t.Helper()
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := e.srv.SDKServer().Connect(context.Background(), st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: name, Version: version}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// clientsOf maps each kind of the sandbox's events to the client their
// payloads name ("" for none; "?" for events of one kind that disagree).
func (e *env) clientsOf(sb string) map[string]string {
	e.t.Helper()
	// exec.end is written off the exec's path: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		events, err := e.op.AuditEvents(context.Background(), sdk.AuditFilter{Sandbox: sb})
		if err != nil {
			e.t.Fatal(err)
		}
		got := map[string]string{}
		for _, ev := range events {
			var p struct {
				Client string `json:"client"`
			}
			_ = json.Unmarshal(ev.Payload, &p)
			if was, ok := got[ev.Kind]; ok && was != p.Client {
				p.Client = "?"
			}
			got[ev.Kind] = p.Client
		}
		if _, ok := got["exec.end"]; ok || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Every call a session makes of the daemon names the MCP client in the
// events it causes: an exec's start and end, a file write's, the
// sandbox's creation and API requests, not only create_sandbox's label.
func TestEveryEventNamesTheClient(t *testing.T) {
	e := newEnv(t)
	cs := e.sessionAs("claude-code", "2.1.0")
	call := func(name string, args map[string]any) result {
		t.Helper()
		r, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || r.IsError {
			t.Fatalf("%s: %v %+v", name, err, r)
		}
		return resultOf(r)
	}
	sb := call("create_sandbox", map[string]any{}).st["sandbox_id"].(string)
	call("exec", map[string]any{"sandbox_id": sb, "command": "echo hi"})
	call("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/a.txt", "content": "a\n"})
	call("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/a.txt", "old": "a", "new": "b"})
	got := e.clientsOf(sb)
	for _, kind := range []string{"sandbox.create", "exec.start", "exec.end", "file.write"} {
		if got[kind] != "claude-code/2.1.0" {
			t.Errorf("%s names the client %q; all: %v", kind, got[kind], got)
		}
	}
}

// A client that names itself with line breaks, escapes, a bidirectional
// override and zero-width characters, or at great length, is recorded
// cleaned and bounded: it cannot forge lines in a log or a reviewer's
// terminal, nor bloat every event.
func TestClientNameCleanedAndBounded(t *testing.T) {
	e := newEnv(t)
	hostile := "evil\r\nkind: approval.approve\x1b[2J\u202egnp.exe\u200b\x00"
	cs := e.sessionAs(hostile, strings.Repeat("9", 10000))
	r, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "create_sandbox", Arguments: map[string]any{}})
	if err != nil || r.IsError {
		t.Fatalf("create_sandbox: %v %+v", err, r)
	}
	sb := resultOf(r).st["sandbox_id"].(string)
	if r, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "exec", Arguments: map[string]any{"sandbox_id": sb, "command": "true"}}); err != nil || r.IsError {
		t.Fatalf("exec: %v %+v", err, r)
	}
	got := e.clientsOf(sb)["exec.start"]
	want := "evilkind: approval.approve[2Jgnp.exe/"
	if !strings.HasPrefix(got, want) || len(got) != wire.MaxClient || !utf8.ValidString(got) {
		t.Errorf("recorded client %q (%d bytes), want %q then nines, %d bytes", got, len(got), want, wire.MaxClient)
	}
	if strings.ContainsAny(got, "\r\n\x1b\x00\u202e\u200b") {
		t.Errorf("control or format characters recorded: %q", got)
	}
	sbx, err := e.op.GetSandbox(context.Background(), sb)
	if err != nil || sbx.Labels["mcp.client"] != got {
		t.Errorf("label %q, want the recorded %q (%v)", sbx.Labels["mcp.client"], got, err)
	}
}

// The daemon cleans the header itself: a caller that sends it without
// the SDK (raw bytes the SDK would have dropped) is recorded cleaned.
func TestClientHeaderCleanedByTheDaemon(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	ctx := context.Background()
	// The SDK would clean it; go around it with a header on the wire.
	raw := client(t, headerHandler{e.handler.TCP(), "raw\u202eclient\x7f/1"}, sdk.WithAPIKey(e.key))
	if _, err := raw.Exec(ctx, sb, sdk.ExecRequest{Argv: []string{"true"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.clientsOf(sb)["exec.start"]; got != "rawclient/1" {
		t.Errorf("exec.start names %q", got)
	}
}

// headerHandler serves requests with h after setting wire.ClientHeader
// to v, as a caller without the SDK could send it.
type headerHandler struct {
	h http.Handler
	v string
}

func (x headerHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Set(wire.ClientHeader, x.v)
	x.h.ServeHTTP(w, r)
}
