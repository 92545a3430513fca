package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Attack: a key's sandbox access token outlives the key. Once the key is
// revoked, the token (and a second key's token for the same sandbox,
// while that key lives) is judged by its own key: the revoked one's is
// refused, the other's still works, and what runs through it is the
// second key's on the record.
func TestAnAccessTokenIsItsKeys(t *testing.T) {
	pol, err := policy.Parse([]byte("classes: {read: allow, build: allow, write: allow, unknown: allow}\nrules: [{id: hold-push, command: 'git push *', action: ask}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := newDoor(t, func(c *stack.Config) { c.Policy = pol })
	id, tok := d.create()
	if out, _ := d.run(id, tok, "", "echo ok"); out != "ok\n" {
		t.Fatalf("the creator's token: %q", out)
	}
	ctx := context.Background()
	other, otherKey, err := d.keys.Make(ctx, apikeys.Request{Name: "second", Format: "e2b", Project: tenant.Default})
	if err != nil {
		t.Fatal(err)
	}
	resp, b := d.call("GET", "/sandboxes/"+id, nil, map[string]string{"X-API-KEY": otherKey})
	if resp.StatusCode != 200 || !strings.Contains(string(b), "envdAccessToken") {
		t.Fatalf("getInfo by a second key: %d %s", resp.StatusCode, b)
	}
	otherTok := between(string(b), `"envdAccessToken":"`, `"`)
	if otherTok == "" || otherTok == tok {
		t.Fatalf("the second key's token %q is the creator's", otherTok)
	}
	creator := d.keyID(t)
	if err := d.keys.Delete(ctx, creator); err != nil {
		t.Fatal(err)
	}
	h := envdHeaders(id, tok, map[string]string{"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
	if resp, b := d.call("POST", "/filesystem.Filesystem/Stat", []byte(`{"path":"/home/user"}`), h); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the revoked key's token: %d %s", resp.StatusCode, b)
	}
	// What runs through the second key's token is that key's: a held
	// command's approval names it as the requester.
	done := make(chan struct{})
	go func() { defer close(done); d.runQuiet(id, otherTok, "git push origin main") }()
	var ap *approvals.Approval
	for deadline := time.Now().Add(20 * time.Second); ap == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		l, err := d.appr.List(ctx, id, "pending")
		if err == nil && len(l) > 0 {
			ap = l[0]
		}
	}
	if ap == nil {
		t.Fatal("the held command made no approval")
	}
	if ap.RequestedBy != "apikey:"+other.ID {
		t.Errorf("the second key's command is requested by %q, want apikey:%s", ap.RequestedBy, other.ID)
	}
	if _, err := d.appr.Deny(sandbox.AsApprover(ctx), ap.ID, "test"); err != nil {
		t.Fatal(err)
	}
	<-done
}

// runQuiet is run, its answer not checked (a held command's).
func (d *door) runQuiet(id, tok, cmd string) {
	h := envdHeaders(id, tok, map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"})
	body, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "/bin/bash", "args": []string{"-l", "-c", cmd}}})
	req, _ := http.NewRequest("POST", d.url+"/process.Process/Start", bytes.NewReader(envelope(0, string(body))))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func between(s, a, b string) string {
	_, rest, ok := strings.Cut(s, a)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, b)
	return v
}

// keyID is the id of the door's own key.
func (d *door) keyID(t *testing.T) string {
	t.Helper()
	k, ok := d.keys.Of(context.Background(), d.key)
	if !ok {
		t.Fatal("the door's key is not valid")
	}
	return k.ID
}
