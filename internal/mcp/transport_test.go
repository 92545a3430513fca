package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/mcp"
	"github.com/airlock-dev/airlock/sdk"
)

// bearer adds an API key to every request.
type bearer struct {
	key string
	rt  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.rt.RoundTrip(r)
}

// The daemon's /mcp over the TCP door with a key: the Go SDK's
// streamable HTTP client initializes, lists the tools and runs a
// command, which the daemon records as the key's.
func TestHTTPSession(t *testing.T) {
	e := newEnv(t)
	hc := &http.Client{Transport: bearer{e.key, mcp.InProcess{Handler: e.handler.TCP()}}}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "http-test", Version: "2"}, nil).
		Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: "http://airlock/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 23 {
		t.Fatalf("tools/list: %v", err)
	}
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "create_sandbox", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("create_sandbox: %v %+v", err, res)
	}
	sb := resultOf(res).st["sandbox_id"].(string)
	res, err = cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "exec", Arguments: map[string]any{"sandbox_id": sb, "command": "echo over http"}})
	if err != nil || !strings.Contains(resultOf(res).text, "over http") {
		t.Fatalf("exec: %v %+v", err, res)
	}
	got, err := e.op.GetSandbox(context.Background(), sb)
	if err != nil || got.Labels["mcp.client"] != "http-test/2" {
		t.Errorf("sandbox made over HTTP: %+v %v", got, err)
	}
	events, err := e.op.AuditEvents(context.Background(), sdk.AuditFilter{Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	var actors []string
	for _, ev := range events {
		actors = append(actors, ev.Actor)
	}
	if j := strings.Join(actors, " "); !strings.Contains(j, "apikey:") || strings.Contains(j, "operator") {
		t.Errorf("actors of the MCP session's events: %s", j)
	}
}

// Raw requests at /mcp: the checks airlock adds to the SDK's transport
// and the SDK's own, as the daemon serves them.
func TestHTTPChecks(t *testing.T) {
	e := newEnv(t)
	post := func(h http.Handler, body, session string, hdr ...string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest("POST", "http://airlock/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+e.key)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	tcp := e.handler.TCP()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	w := post(tcp, init, "")
	session := w.Header().Get("Mcp-Session-Id")
	if w.Code != 200 || session == "" || !strings.Contains(w.Body.String(), `"name":"airlock"`) {
		t.Fatalf("initialize: %d %q %s", w.Code, session, w.Body)
	}
	pv := []string{"MCP-Protocol-Version", "2025-06-18"}
	for _, c := range []struct {
		name          string
		h             http.Handler
		body, session string
		hdr           []string
		want          int
	}{
		{"ping", tcp, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, session, pv, 200},
		{"notification", tcp, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session, pv, 202},
		{"no session", tcp, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, "", pv, 400},
		{"no session, not JSON", tcp, `{`, "", pv, 400},
		{"made-up session", tcp, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, "0123456789abcdef", pv, 404},
		// The socket's operator is another identity: the key's session
		// is unknown to it.
		{"another identity's session", e.handler, `{"jsonrpc":"2.0","id":5,"method":"ping"}`, session, pv, 404},
		{"unknown protocol version", tcp, `{"jsonrpc":"2.0","id":6,"method":"ping"}`, session, []string{"MCP-Protocol-Version", "1999-01-01"}, 400},
		{"another site's page", tcp, `{"jsonrpc":"2.0","id":7,"method":"ping"}`, session, append([]string{"Origin", "http://evil.example.test", "Sec-Fetch-Site", "cross-site"}, pv...), 403},
		{"too large", tcp, `{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"x":"` + strings.Repeat("a", 8<<20) + `"}}`, "", pv, 413},
	} {
		if w := post(c.h, c.body, c.session, c.hdr...); w.Code != c.want {
			t.Errorf("%s: %d, want %d: %.200s", c.name, w.Code, c.want, w.Body)
		}
	}
	// A revision without sessions (2026-07-28) reaches the SDK rather than
	// airlock's "initialize first": the SDK's stateful handler answers it
	// with the protocol's error naming the versions it speaks, from which
	// a client falls back to initialize.
	w = post(tcp, `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "",
		"MCP-Protocol-Version", "2026-07-28")
	if w.Code != 400 || !strings.Contains(w.Body.String(), `"code":-32022`) || !strings.Contains(w.Body.String(), `"supported":["2025-11-25"`) {
		t.Errorf("sessionless revision: %d %s", w.Code, w.Body)
	}
}

// InProcess streams the handler's answer as it is written, and a
// request cancelled before the handler answers ends with its context's
// error (the handler's context cancelled too).
func TestInProcessTransport(t *testing.T) {
	step := make(chan struct{})
	gone := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			close(gone)
			return
		}
		if v, _ := r.Context().Value(ctxKey{}).(string); v != "values" {
			http.Error(w, "no values", 500)
			return
		}
		w.Header().Set("X-A", "1")
		w.WriteHeader(201)
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-step
		_, _ = io.WriteString(w, "second\n")
	})
	hc := &http.Client{Transport: mcp.InProcess{Handler: h, Values: context.WithValue(context.Background(), ctxKey{}, "values")}}
	resp, err := hc.Get("http://airlock/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "first\n" || resp.StatusCode != 201 || resp.Header.Get("X-A") != "1" {
		t.Fatalf("first part: %d %q %v", resp.StatusCode, line, err)
	}
	close(step)
	if rest, err := io.ReadAll(br); err != nil || string(rest) != "second\n" {
		t.Fatalf("rest: %q %v", rest, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://airlock/slow", nil)
	if _, err := hc.Do(req); err == nil {
		t.Fatal("a cancelled request answered")
	}
	select {
	case <-gone:
	case <-time.After(2 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}
}

type ctxKey struct{}

// ServeStdio: one session of newline-delimited JSON-RPC; a request the
// client cancels gets no response (its command is killed), a cancel of
// an id already answered does not drop a later answer with that id, and
// the end of input ends the session without an error.
func TestStdio(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- e.srv.ServeStdio(context.Background(), inR, outW); outW.Close() }()
	lines := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"unparsed": sc.Text()}
			}
			lines <- m
		}
		close(lines)
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next is the next message that is not a notification.
	next := func() map[string]any {
		t.Helper()
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatal("the server's output ended")
				}
				if _, ok := m["id"]; ok {
					return m
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no answer")
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := next(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":"` + sb + `","command":"sleep 30"}}}`)
	// Cancel once the command runs.
	waitExecs(t, e, sb, func(n, ended int) bool { return n == 1 })
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`)
	waitExecs(t, e, sb, func(n, ended int) bool { return ended == 1 })
	time.Sleep(50 * time.Millisecond) // the cancelled call's answer, if any, would be written by now
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if m := next(); m["id"] != 3.0 {
		t.Fatalf("a cancelled request was answered: %v", m)
	}
	// A late cancel of an answered id, then a new request with that id:
	// it is answered (the SDK may apply the cancel to it and answer an
	// error, but the answer is not dropped).
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if m := next(); m["id"] != 3.0 {
		t.Fatalf("the reused id's answer: %v", m)
	}
	send(``) // blank lines are skipped
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_execs","arguments":{"sandbox_id":"` + sb + `"}}}`)
	if m := next(); m["id"] != 4.0 || !strings.Contains(toJSON(m), `"exit_code":137`) {
		t.Errorf("list_execs: %v", m)
	}
	inW.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeStdio at the end of input: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not return at the end of input")
	}
}

// Input that is not JSON-RPC ends the session with an error.
func TestStdioBadInput(t *testing.T) {
	s := &mcp.Server{Version: "test"}
	err := s.ServeStdio(context.Background(), strings.NewReader("not json\n"), io.Discard)
	if err == nil {
		t.Fatal("garbage served without an error")
	}
}

func waitExecs(t *testing.T, e *env, sb string, done func(n, ended int) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		list, err := e.op.ListExecs(context.Background(), sb)
		if err != nil {
			t.Fatal(err)
		}
		ended := 0
		for _, x := range list {
			if !x.Ended.IsZero() {
				ended++
			}
		}
		if done(len(list), ended) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("execs: %+v", list)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Every tool refuses an unknown argument, and one without its required
// arguments, with a tool error naming them: nothing runs on a default.
func TestEveryToolValidates(t *testing.T) {
	e := newEnv(t)
	tools, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		e.fails(tl.Name, map[string]any{"no_such_argument": 1}, `validating "arguments"`)
		var schema struct {
			Required []string `json:"required"`
		}
		b, _ := json.Marshal(tl.InputSchema)
		_ = json.Unmarshal(b, &schema)
		if len(schema.Required) > 0 {
			e.fails(tl.Name, map[string]any{}, "missing properties: [\""+schema.Required[0]+"\"")
		}
	}
	if list, err := e.op.ListSandboxes(context.Background(), ""); err != nil || len(list) != 0 {
		t.Errorf("refused calls made sandboxes: %d %v", len(list), err)
	}
}

// Over streamable HTTP a request the client cancels (notifications/
// cancelled, posted in the same session) gets no response, as over
// stdio, and its command is killed; a cancel posted by another identity
// with that session id drops nothing; another call's answer still comes.
func TestHTTPCancelledRequestGetsNoResponse(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	tcp := e.handler.TCP()
	post := func(h http.Handler, body, session string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest("POST", "http://airlock/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+e.key)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	w := post(tcp, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, "")
	session := w.Header().Get("Mcp-Session-Id")
	if w.Code != 200 || session == "" {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	post(tcp, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	call := func(id int, command string) chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			done <- post(tcp, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":%q,"command":%q}}}`, id, sb, command), session)
		}()
		return done
	}
	cancel := func(h http.Handler, id int) {
		t.Helper()
		post(h, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"user"}}`, id), session)
	}
	wait := func(done chan *httptest.ResponseRecorder) *httptest.ResponseRecorder {
		t.Helper()
		select {
		case w := <-done:
			return w
		case <-time.After(5 * time.Second):
			t.Fatal("the call's POST did not end")
			return nil
		}
	}
	done := call(2, "sleep 30")
	waitExecs(t, e, sb, func(n, ended int) bool { return n == 1 })
	cancel(tcp, 2)
	if w := wait(done); strings.Contains(w.Body.String(), `"id":2`) {
		t.Errorf("the cancelled request was answered: %d %s", w.Code, w.Body)
	}
	waitExecs(t, e, sb, func(n, ended int) bool { return ended == 1 })
	// The operator (another identity) cannot cancel the key's call.
	done = call(3, "sleep 0.3; echo finished")
	waitExecs(t, e, sb, func(n, ended int) bool { return n == 2 })
	cancel(e.handler, 3)
	if w := wait(done); !strings.Contains(w.Body.String(), `"id":3`) || !strings.Contains(w.Body.String(), "finished") {
		t.Errorf("another identity's cancel dropped the answer: %s", w.Body)
	}
	// A cancel in one session drops nothing of another session's call
	// with the same id, the same key's.
	w = post(tcp, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, "")
	second := w.Header().Get("Mcp-Session-Id")
	if second == "" || second == session {
		t.Fatalf("second session: %q", second)
	}
	post(tcp, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, second)
	done = make(chan *httptest.ResponseRecorder, 1)
	go func() {
		done <- post(tcp, fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":%q,"command":"sleep 0.3; echo other session"}}}`, sb), second)
	}()
	waitExecs(t, e, sb, func(n, ended int) bool { return n == 3 })
	cancel(tcp, 4) // in the first session
	if w := wait(done); !strings.Contains(w.Body.String(), "other session") {
		t.Errorf("a cancel in another session dropped the answer: %s", w.Body)
	}
	// A cancel of a call already answered drops no later answer to that
	// id (the SDK may apply the cancel to it: the answer is an error).
	cancel(tcp, 3)
	if w := wait(call(3, "echo again")); !strings.Contains(w.Body.String(), `"id":3`) {
		t.Errorf("a late cancel dropped a later answer: %s", w.Body)
	}
}
