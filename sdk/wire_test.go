package sdk

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// What the daemon sends that the SDK's own copies of the types once
// dropped: a task's write scope in a sandbox's isolation, a command's
// file activity in its status, a policy layer's egress and install
// scripts. The SDK's types are package wire's now; these are decoded.
func TestSDKDecodesWhatTheSDKOnceDropped(t *testing.T) {
	d := newFake(t)
	c := d.client(t)
	ctx := context.Background()
	d.setOverride(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/sandboxes/sb1":
			w.Write([]byte(`{"id":"sb1","state":"running","isolation":{"boundary":"b","cgroup":"v2",` +
				`"write_scope":{"paths":["/workspace/src"],"scratch":["/tmp"],"landlock_abi":7}}}`))
		case "/v1/sandboxes/sb1/execs/e1":
			w.Write([]byte(`{"id":"e1","status":{"code":0,"files":{"written":["/workspace/a"],"incomplete":true}}}`))
		default:
			http.NotFound(w, r)
		}
	})
	sb, err := c.GetSandbox(ctx, "sb1")
	if err != nil {
		t.Fatal(err)
	}
	if ws := sb.Isolation.WriteScope; ws == nil || len(ws.Paths) != 1 || ws.Paths[0] != "/workspace/src" || ws.LandlockABI != 7 {
		t.Errorf("write scope: %+v", sb.Isolation.WriteScope)
	}
	e, err := c.GetExec(ctx, "sb1", "e1")
	if err != nil {
		t.Fatal(err)
	}
	if e.Status == nil || e.Status.Files == nil || len(e.Status.Files.Written) != 1 || !e.Status.Files.Incomplete {
		t.Errorf("file activity: %+v", e.Status)
	}
	body, err := json.Marshal(CreateRequest{Policy: &PolicyLayer{InstallScripts: ActionDeny, Egress: json.RawMessage(`{"presets":["npm"]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"egress":{"presets":["npm"]}`) || !strings.Contains(string(body), `"install_scripts":"deny"`) {
		t.Errorf("create body: %s", body)
	}
}
