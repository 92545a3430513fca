package e2b

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// E2B's createSnapshot, Sandbox.create(snapshotId) and listSnapshots
// through the door: a snapshot of a door sandbox keeps /home/user and
// /workspace, a sandbox made from it has them, and the list finds it by
// its sandbox and its name. A door caller never replaces a snapshot.
func TestSnapshotThroughTheDoor(t *testing.T) {
	d := newDoor(t)
	key := map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"}
	id, tok := d.create()
	put := func(id, tok, p, data string) {
		if resp, b := d.call("POST", "/files?path="+p, []byte(data), envdHeaders(id, tok, map[string]string{"Content-Type": "application/octet-stream"})); resp.StatusCode != 200 {
			t.Fatalf("write %s: %d %s", p, resp.StatusCode, b)
		}
	}
	get := func(id, tok, p string) string {
		resp, b := d.call("GET", "/files?path="+p, nil, envdHeaders(id, tok, nil))
		if resp.StatusCode != 200 {
			return ""
		}
		return string(b)
	}
	put(id, tok, "notes.txt", "home") // relative: /home/user/notes.txt
	put(id, tok, "/workspace/w.txt", "work")
	resp, b := d.call("POST", "/sandboxes/"+id+"/snapshots", []byte(`{"name":"my-snap"}`), key)
	var info snapshotInfo
	if resp.StatusCode != 201 || json.Unmarshal(b, &info) != nil || info.SnapshotID != "my-snap" || !slices.Equal(info.Names, []string{"my-snap"}) {
		t.Fatalf("createSnapshot: %d %s", resp.StatusCode, b)
	}
	resp, b = d.call("POST", "/v2/sandboxes", []byte(`{"templateID":"my-snap","timeout":300}`), key)
	var c struct{ SandboxID, EnvdAccessToken, TemplateID string }
	if resp.StatusCode != 201 || json.Unmarshal(b, &c) != nil || c.TemplateID != "my-snap" {
		t.Fatalf("create from the snapshot: %d %s", resp.StatusCode, b)
	}
	if h, w := get(c.SandboxID, c.EnvdAccessToken, "/home/user/notes.txt"), get(c.SandboxID, c.EnvdAccessToken, "/workspace/w.txt"); h != "home" || w != "work" {
		t.Errorf("the new sandbox's files: %q %q", h, w)
	}
	if out, _ := d.run(c.SandboxID, c.EnvdAccessToken, "", "whoami; pwd; cat notes.txt"); out != "user\n/home/user\nhome" {
		t.Errorf("in the new sandbox: %q", out)
	}
	// A snapshot without a name gets one; the list filters.
	resp, b = d.call("POST", "/sandboxes/"+id+"/snapshots", nil, key)
	var anon snapshotInfo
	if resp.StatusCode != 201 || json.Unmarshal(b, &anon) != nil || !strings.HasPrefix(anon.SnapshotID, "snapshot-") {
		t.Fatalf("createSnapshot without a name: %d %s", resp.StatusCode, b)
	}
	list := func(q string) []snapshotInfo {
		resp, b := d.call("GET", "/snapshots"+q, nil, key)
		var l []snapshotInfo
		if resp.StatusCode != 200 || json.Unmarshal(b, &l) != nil {
			t.Fatalf("list %s: %d %s", q, resp.StatusCode, b)
		}
		return l
	}
	if l := list("?sandboxID=" + id); len(l) != 2 {
		t.Errorf("list by sandbox: %+v", l)
	}
	if l := list("?sandboxID=" + c.SandboxID); len(l) != 0 {
		t.Errorf("list by another sandbox: %+v", l)
	}
	if l := list("?name=my-snap"); len(l) != 1 || l[0].SnapshotID != "my-snap" {
		t.Errorf("list by name: %+v", l)
	}
	if l := list("?limit=1"); len(l) != 1 {
		t.Errorf("list limit 1: %+v", l)
	}

	// Refused: replacing a snapshot, a name that is no template name, a
	// built-in's name, a list filter airlock lacks, deleting a shared
	// template, a sandbox that does not exist. Deleting the snapshot
	// takes its name away; the sandbox made from it keeps working.
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/sandboxes/" + id + "/snapshots", `{"name":"my-snap"}`, 409},
		{"POST", "/sandboxes/" + id + "/snapshots", `{"name":"../etc"}`, 400},
		{"POST", "/sandboxes/" + id + "/snapshots", `{"name":"host"}`, 409},
		{"POST", "/sandboxes/" + id + "/snapshots", `{"name":"x","memory":true}`, 400},
		{"GET", "/snapshots?teamID=x", ``, 400},
		{"DELETE", "/templates/host", ``, 403},
		{"DELETE", "/templates/my-snap", ``, 204},
		{"DELETE", "/templates/my-snap", ``, 404}, // the SDK's false
		{"POST", "/v2/sandboxes", `{"templateID":"my-snap"}`, 404},
		{"POST", "/sandboxes/nosuch/snapshots", `{}`, 404},
	} {
		resp, b := d.call(c.method, c.path, []byte(c.body), key)
		if resp.StatusCode != c.status {
			t.Errorf("%s %s %s: %d %s, want %d", c.method, c.path, c.body, resp.StatusCode, b, c.status)
		}
	}
	if h := get(c.SandboxID, c.EnvdAccessToken, "/home/user/notes.txt"); h != "home" {
		t.Errorf("after the refusals: %q", h)
	}
	// A paused sandbox is not snapshotted (resume it first).
	if resp, b := d.call("POST", "/sandboxes/"+id+"/pause", nil, key); resp.StatusCode != 204 {
		t.Fatalf("pause: %d %s", resp.StatusCode, b)
	}
	if resp, b := d.call("POST", "/sandboxes/"+id+"/snapshots", []byte(`{"name":"paused"}`), key); resp.StatusCode != 409 {
		t.Errorf("snapshot of a paused sandbox: %d %s, want 409", resp.StatusCode, b)
	}
}

// fork: count sandboxes from one snapshot, each with the source's files,
// metadata and network layer; a fork never gets more egress than its
// source, and a source the operator narrowed at run time is refused
// rather than copied without that layer.
func TestForkThroughTheDoor(t *testing.T) {
	d := newDoor(t, withEgress)
	ctx := context.Background()
	key := map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"}
	resp, b := d.call("POST", "/v2/sandboxes", []byte(`{"templateID":"base","timeout":300,"allow_internet_access":false,"metadata":{"k":"v"}}`), key)
	var src struct{ SandboxID, EnvdAccessToken string }
	if resp.StatusCode != 201 || json.Unmarshal(b, &src) != nil {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	if resp, b := d.call("POST", "/files?path=a.txt", []byte("A"), envdHeaders(src.SandboxID, src.EnvdAccessToken, map[string]string{"Content-Type": "application/octet-stream"})); resp.StatusCode != 200 {
		t.Fatalf("write: %d %s", resp.StatusCode, b)
	}
	resp, b = d.call("POST", "/sandboxes/"+src.SandboxID+"/fork", []byte(`{"timeout":120,"count":2}`), key)
	var forks []struct {
		Sandbox *struct{ SandboxID, EnvdAccessToken, TemplateID string }
		Error   *apiError
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &forks) != nil || len(forks) != 2 {
		t.Fatalf("fork: %d %s", resp.StatusCode, b)
	}
	for i, f := range forks {
		if f.Sandbox == nil || f.Error != nil {
			t.Fatalf("fork %d: %s", i, b)
		}
		id := f.Sandbox.SandboxID
		if out, _ := d.run(id, f.Sandbox.EnvdAccessToken, "", "cat a.txt"); out != "A" {
			t.Errorf("fork %d's files: %q", i, out)
		}
		sb, err := d.m.Get(ctx, id)
		if err != nil || sb.Labels["k"] != "v" || !strings.HasPrefix(sb.Template, "fork-") {
			t.Errorf("fork %d: %+v %v", i, sb, err)
		}
		p, err := d.net.EgressPolicy(ctx, id)
		if err != nil || !slices.ContainsFunc(p.Rules, func(r netpolicy.Rule) bool { return r.ID == noEgressRule && r.Action == netpolicy.Deny }) {
			t.Errorf("fork %d of a sandbox without internet access: egress %+v %v, want its deny-all rule", i, p, err)
		}
		_, gb := d.call("GET", "/sandboxes/"+id, nil, key)
		var g map[string]any
		if json.Unmarshal(gb, &g) != nil || g["allowInternetAccess"] != false {
			t.Errorf("GET of fork %d: %s", i, gb)
		}
	}
	// The operator narrows the source at run time: a fork would drop
	// that layer, so none is made.
	if _, err := d.net.SetEgress(ctx, src.SandboxID, egress.Policy{Rules: []egress.Rule{{ID: "op-runtime", Action: "deny", CIDRs: []string{"127.0.0.8/32"}}}}, false); err != nil {
		t.Fatal(err)
	}
	before, _ := d.m.List(ctx, "running")
	for body, status := range map[string]int{`{}`: 409, `{"count":0}`: 400, `{"count":11}`: 400, `{"count":1,"memory":true}`: 400, `{"timeout":-1}`: 400} {
		if resp, b := d.call("POST", "/sandboxes/"+src.SandboxID+"/fork", []byte(body), key); resp.StatusCode != status {
			t.Errorf("fork %s: %d %s, want %d", body, resp.StatusCode, b, status)
		}
	}
	if resp, _ := d.call("POST", "/sandboxes/nosuch/fork", []byte(`{}`), key); resp.StatusCode != 404 {
		t.Errorf("fork of an unknown sandbox: %d", resp.StatusCode)
	}
	if after, _ := d.m.List(ctx, "running"); len(after) != len(before) {
		t.Errorf("refused forks made sandboxes: %d then %d", len(before), len(after))
	}
}
