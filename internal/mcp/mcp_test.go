package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/sdk"
)

func TestProtocol(t *testing.T) {
	s := &Server{Version: "test"}
	ctx := context.Background()
	for _, tc := range []struct {
		msg, want string
	}{
		{`{`, `"code":-32700`},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, `"code":-32600`},
		{`{"jsonrpc":"2.0","id":1,"method":"nope"}`, `"code":-32601`},
		{`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `"result":{}`},
		{`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}`, `"protocolVersion":"2024-11-05"`},
		{`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}`, `"protocolVersion":"2025-06-18"`},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"rm_rf"}}`, `unknown tool rm_rf`},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"exec","arguments":[1]}}`, `arguments must be an object`},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":"x"}}}`, `"isError":true`},
	} {
		resp := s.Handle(ctx, []byte(tc.msg))
		b, _ := json.Marshal(resp)
		if !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %s, want %s", tc.msg, b, tc.want)
		}
	}
	if resp := s.Handle(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); resp != nil {
		t.Errorf("a notification was answered: %+v", resp)
	}
	var list struct {
		Result struct {
			Tools []struct {
				Name        string         `json:"name"`
				InputSchema map[string]any `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	b, _ := json.Marshal(s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)))
	_ = json.Unmarshal(b, &list)
	if len(list.Result.Tools) != 10 || list.Result.Tools[2].Name != "exec" || list.Result.Tools[2].InputSchema["type"] != "object" {
		t.Fatalf("tools: %s", b)
	}
}

func TestStdioAndHTTPFraming(t *testing.T) {
	s := &Server{Version: "test"}
	var out bytes.Buffer
	in := strings.NewReader("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
	if err := s.ServeStdio(context.Background(), in, &out); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Fatalf("stdio answers: %q", out.String())
	}
	h := HTTP("test", func(*http.Request) *sdk.Client { return nil })
	for _, tc := range []struct {
		method, body string
		status       int
		want         string
	}{
		{"POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, 200, `"serverInfo"`},
		{"POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202, ""},
		{"POST", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, 200, `"id":2`},
		{"GET", ``, 405, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, "/mcp", strings.NewReader(tc.body)))
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s %s: %d %s", tc.method, tc.body, rec.Code, rec.Body.String())
		}
		if strings.Contains(tc.body, `"method":"initialize"`) && rec.Header().Get("Mcp-Session-Id") == "" {
			t.Error("no session id on initialize")
		}
	}
}
