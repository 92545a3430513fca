package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A refusal tells the client why in the status line, where npm, go and
// pip show it; a reason carrying what the sandbox sent cannot add a
// field or end the head there.
func TestRefusalReasonCannotSplitTheHead(t *testing.T) {
	hostile := "evil.example.test\r\nSet-Cookie: a=b\r\n\r\nHTTP/1.1 200 OK\x00\xff" + strings.Repeat("x", 500)
	var buf bytes.Buffer
	WriteRefusal(&buf, http.StatusForbidden, "default-deny", hostile+" is not in this sandbox's egress policy")
	resp, err := http.ReadResponse(bufio.NewReader(&buf), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || !strings.HasPrefix(resp.Status, "403 Forbidden by airlock egress: evil.example.test??Set-Cookie") {
		t.Errorf("status line %q", resp.Status)
	}
	if len(resp.Status) > maxReasonLine+4 {
		t.Errorf("status line of %d bytes", len(resp.Status))
	}
	if resp.Header.Get("Set-Cookie") != "" || len(resp.Header) != 4 || !resp.Close { // Connection: close is resp.Close
		t.Errorf("the reason added fields: %v", resp.Header)
	}
	if r := resp.Header.Get("X-Airlock-Reason"); !strings.HasPrefix(r, "evil.example.test??Set-Cookie: a=b????HTTP/1.1 200 OK??") {
		t.Errorf("X-Airlock-Reason %q", r)
	}
	if resp.Header.Get("X-Airlock-Rule") != "default-deny" {
		t.Errorf("rule %q", resp.Header.Get("X-Airlock-Rule"))
	}
	if !bytes.Contains(body, []byte(hostile)) || buf.Len() != 0 {
		t.Errorf("the body is not the whole reason, or bytes follow it: %q", body)
	}
}
