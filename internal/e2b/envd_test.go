package e2b

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fileRPC calls a unary filesystem RPC and returns its status and body.
func (d *door) fileRPC(id, tok, method, body string) (int, string) {
	d.t.Helper()
	resp, b := d.call("POST", "/filesystem.Filesystem/"+method, []byte(body), envdHeaders(id, tok, map[string]string{"Content-Type": "application/json"}))
	return resp.StatusCode, string(b)
}

// entryOfAnswer decodes the entry of a Stat or Move answer.
func entryOfAnswer(t *testing.T, b string) entryInfo {
	t.Helper()
	var a struct{ Entry entryInfo }
	if err := json.Unmarshal([]byte(b), &a); err != nil {
		t.Fatalf("answer %s: %v", b, err)
	}
	return a.Entry
}

// Removing what is not there succeeds, as envd's Remove does; the policy
// still judges the path first.
func TestE2BRemoveMissing(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	for _, p := range []string{"/home/user/nope", "/home/user/nope/deeper", "nope-relative"} {
		if code, b := d.fileRPC(id, tok, "Remove", `{"path":"`+p+`"}`); code != 200 || strings.TrimSpace(b) != "{}" {
			t.Errorf("remove missing %s: %d %s", p, code, b)
		}
	}
	// (a secret path is refused whether it exists or not)
	if code, b := d.fileRPC(id, tok, "Remove", `{"path":"/workspace/.env"}`); code != 403 || !strings.Contains(b, "permission_denied") {
		t.Errorf("remove a missing secret file: %d %s", code, b)
	}
	if out, _ := d.run(id, tok, "", "mkdir -p /home/user/gone/sub && echo x > /home/user/gone/sub/f && echo made"); out != "made\n" {
		t.Fatalf("setup: %q", out)
	}
	if code, b := d.fileRPC(id, tok, "Remove", `{"path":"/home/user/gone"}`); code != 200 {
		t.Fatalf("remove a tree: %d %s", code, b)
	}
	if code, _ := d.fileRPC(id, tok, "Stat", `{"path":"/home/user/gone"}`); code != 404 {
		t.Errorf("the tree is still there: %d", code)
	}
}

// Stat and ListDir describe a symlink as envd does: the type of what it
// resolves to and the resolved path as its target, resolved inside the
// sandbox (an absolute link, or one that climbs past the root, stays in
// it).
func TestE2BSymlinkTargets(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	if out, end := d.run(id, tok, "", `cd /home/user && mkdir d && echo hi > d/f && ln -s d/f rel && ln -s /home/user/d abs && ln -s abs/f chain && ln -s nowhere dangling && ln -s ../../../../../etc/hostname up && echo made`); out != "made\n" {
		t.Fatalf("setup: %q %s", out, end)
	}
	for p, want := range map[string][2]string{
		"rel":      {"FILE_TYPE_FILE", "/home/user/d/f"},
		"abs":      {"FILE_TYPE_DIRECTORY", "/home/user/d"},
		"chain":    {"FILE_TYPE_FILE", "/home/user/d/f"},
		"dangling": {"FILE_TYPE_UNSPECIFIED", "/home/user/dangling"},
		"up":       {"FILE_TYPE_FILE", "/etc/hostname"},
	} {
		code, b := d.fileRPC(id, tok, "Stat", `{"path":"/home/user/`+p+`"}`)
		e := entryOfAnswer(t, b)
		if code != 200 || e.Type != want[0] || e.SymlinkTarget == nil || *e.SymlinkTarget != want[1] || !strings.HasPrefix(e.Permissions, "L") {
			t.Errorf("stat %s: %d %s, want %v", p, code, b, want)
		}
	}
	code, b := d.fileRPC(id, tok, "ListDir", `{"path":"/home/user","depth":1}`)
	var l struct{ Entries []entryInfo }
	_ = json.Unmarshal([]byte(b), &l)
	got := map[string]string{}
	for _, e := range l.Entries {
		if e.SymlinkTarget != nil {
			got[e.Name] = *e.SymlinkTarget
		}
	}
	if code != 200 || got["rel"] != "/home/user/d/f" || got["abs"] != "/home/user/d" || got["up"] != "/etc/hostname" {
		t.Errorf("list: %d %v", code, got)
	}
}

// Move is files.rename: rename(2) with the destination's parents made,
// answering the destination's entry; under the policy, as a read and a
// removal of the source and a write of the destination.
func TestE2BMove(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	if out, _ := d.run(id, tok, "", "echo one > /home/user/a && mkdir -p /home/user/tree/sub && echo t > /home/user/tree/sub/x && echo made"); out != "made\n" {
		t.Fatalf("setup: %q", out)
	}
	code, b := d.fileRPC(id, tok, "Move", `{"source":"a","destination":"/home/user/new/deep/b"}`)
	if e := entryOfAnswer(t, b); code != 200 || e.Path != "/home/user/new/deep/b" || e.Name != "b" || e.Type != "FILE_TYPE_FILE" || e.Size != "4" {
		t.Fatalf("move: %d %s", code, b)
	}
	if out, _ := d.run(id, tok, "", "cat /home/user/new/deep/b; test -e /home/user/a || echo gone"); out != "one\ngone\n" {
		t.Errorf("after move: %q", out)
	}
	code, b = d.fileRPC(id, tok, "Move", `{"source":"/home/user/tree","destination":"/workspace/tree"}`)
	if e := entryOfAnswer(t, b); code != 200 || e.Type != "FILE_TYPE_DIRECTORY" {
		t.Fatalf("move a tree: %d %s", code, b)
	}
	if out, _ := d.run(id, tok, "", "cat /workspace/tree/sub/x"); out != "t\n" {
		t.Errorf("moved tree: %q", out)
	}
	if code, b := d.fileRPC(id, tok, "Move", `{"source":"/home/user/nope","destination":"/home/user/b"}`); code != 404 || !strings.Contains(b, "source file not found") {
		t.Errorf("move a missing file: %d %s", code, b)
	}
	if code, b := d.fileRPC(id, tok, "Move", `{"source":"/home/user/new"}`); code != 400 || !strings.Contains(b, "invalid_argument") {
		t.Errorf("move without a destination: %d %s", code, b)
	}
}

// Attacks on Move: a rename may not carry a secret file out from under
// the rules that keep it, directly or inside a directory, nor put one
// where a write is refused, nor move the root or a directory into itself.
func TestE2BMoveAttacks(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	// The secret files are put there by the daemon (no policy), as a
	// checkout would.
	own, err := d.m.Files(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/workspace/.env", "/workspace/cfg/.env"} {
		if _, err := own.WriteFile(context.Background(), p, strings.NewReader("TOKEN=s3cret\n"), 0o644, true); err != nil {
			t.Fatal(err)
		}
	}
	if out, _ := d.run(id, tok, "", "echo plain > /tmp/plain && echo made"); out != "made\n" {
		t.Fatalf("setup: %q", out)
	}
	for name, body := range map[string]string{
		"a secret file out":            `{"source":"/workspace/.env","destination":"/tmp/loot"}`,
		"a secret file in a directory": `{"source":"/workspace/cfg","destination":"/tmp/cfg"}`,
		"a file onto a secret name":    `{"source":"/tmp/plain","destination":"/workspace/.env"}`,
		"the workspace itself":         `{"source":"/workspace","destination":"/tmp/ws"}`,
	} {
		if code, b := d.fileRPC(id, tok, "Move", body); code != 403 || !strings.Contains(b, "permission_denied") {
			t.Errorf("%s: %d %s", name, code, b)
		}
	}
	for name, body := range map[string]string{
		"the root":                `{"source":"/","destination":"/tmp/root"}`,
		"onto the root":           `{"source":"/tmp/plain","destination":"/"}`,
		"a directory into itself": `{"source":"/home/user","destination":"/home/user/inside"}`,
		"a climb":                 `{"source":"/tmp/plain/../../","destination":"/tmp/x"}`,
	} {
		if code, b := d.fileRPC(id, tok, "Move", body); code != 400 || !strings.Contains(b, "invalid_argument") {
			t.Errorf("%s: %d %s", name, code, b)
		}
	}
	var buf bytes.Buffer
	if _, err := own.ReadFile(context.Background(), "/workspace/cfg/.env", &buf, 0); err != nil || buf.String() != "TOKEN=s3cret\n" {
		t.Errorf("the secret file moved: %v %q", err, buf.String())
	}
	if out, _ := d.run(id, tok, "", "cat /tmp/plain; ls /tmp"); !strings.HasPrefix(out, "plain\n") || strings.Contains(out, "loot") || strings.Contains(out, "cfg") {
		t.Errorf("after the attacks: %q", out)
	}
}

// getMetrics: one sample now from the sandbox's cgroup, in E2B's shape;
// what airlock cannot answer (history) is refused, not answered empty.
func TestE2BMetrics(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	key := map[string]string{"X-API-KEY": d.key}
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		d.run(id, tok, "", "timeout 3 sh -c 'while :; do :; done'; true")
	}()
	time.Sleep(500 * time.Millisecond)
	resp, b := d.call("GET", "/sandboxes/"+id+"/metrics", nil, key)
	var ms []map[string]any
	if err := json.Unmarshal(b, &ms); resp.StatusCode != 200 || err != nil || len(ms) != 1 {
		t.Fatalf("metrics: %d %s", resp.StatusCode, b)
	}
	m := ms[0]
	ts, _ := time.Parse(time.RFC3339, m["timestamp"].(string))
	if time.Since(ts) > time.Minute || m["memUsed"].(float64) <= 0 || m["memTotal"].(float64) < m["memUsed"].(float64) || m["cpuCount"].(float64) < 1 ||
		m["cpuUsedPct"].(float64) <= 1 || m["cpuUsedPct"].(float64) > 100 || int64(m["timestampUnix"].(float64)) != ts.Unix() {
		t.Errorf("metric: %v", m)
	}
	<-busy
	// The disk's figures are the sandbox's disk as statfs sees it inside
	// (the default 1 GiB limit, less ext4's own), and a file of known
	// size written there is counted at once; the page cache is part of
	// the memory.
	diskBefore, total, ok := diskFigures(m)
	if mc, cached := m["memCache"].(float64); !ok || total <= 512<<20 || total > 1<<30 || diskBefore <= 0 || !cached || mc < 0 || mc > m["memUsed"].(float64) {
		t.Errorf("metric: %v", m)
	}
	d.run(id, tok, "", "head -c 10485760 /dev/zero > /workspace/ten")
	resp, b = d.call("GET", "/sandboxes/"+id+"/metrics", nil, key)
	if err := json.Unmarshal(b, &ms); resp.StatusCode != 200 || err != nil || len(ms) != 1 {
		t.Fatalf("metrics: %d %s", resp.StatusCode, b)
	}
	if used, _, _ := diskFigures(ms[0]); used-diskBefore < 10<<20 || used-diskBefore > 11<<20 {
		t.Errorf("diskUsed %d -> %d after a 10 MiB file", diskBefore, used)
	}
	now := time.Now().Unix()
	for q, want := range map[string]string{
		"?end=" + itoa(now-3600): "keeps no history",
		"?start=1&end=0":         "before start",
		"?step=5":                "unsupported by airlock: metrics parameter",
		"?start=x":               "Unix seconds",
		"?start=1&start=2":       "given 2 times",
	} {
		if resp, b := d.call("GET", "/sandboxes/"+id+"/metrics"+q, nil, key); resp.StatusCode != 400 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s", q, resp.StatusCode, b)
		}
	}
	if resp, b := d.call("GET", "/sandboxes/"+id+"/metrics?start="+itoa(now+3600), nil, key); resp.StatusCode != 200 || strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("a range after now: %d %s", resp.StatusCode, b)
	}
	if resp, b := d.call("GET", "/sandboxes/"+id+"/metrics?start="+itoa(now-60)+"&end="+itoa(now+60), nil, key); resp.StatusCode != 200 || !strings.Contains(string(b), "memUsed") {
		t.Errorf("a range around now: %d %s", resp.StatusCode, b)
	}
	if resp, _ := d.call("GET", "/sandboxes/"+id+"/metrics", nil, nil); resp.StatusCode != 401 {
		t.Errorf("no key: %d", resp.StatusCode)
	}
	if resp, _ := d.call("POST", "/sandboxes/"+id+"/pause", nil, key); resp.StatusCode != 204 {
		t.Fatalf("pause: %d", resp.StatusCode)
	}
	if resp, b := d.call("GET", "/sandboxes/"+id+"/metrics", nil, key); resp.StatusCode != 409 || !strings.Contains(string(b), "paused") {
		t.Errorf("paused: %d %s", resp.StatusCode, b)
	}
	if resp, _ := d.call("DELETE", "/sandboxes/"+id, nil, key); resp.StatusCode != 204 {
		t.Fatalf("kill: %d", resp.StatusCode)
	}
	if resp, _ := d.call("GET", "/sandboxes/"+id+"/metrics", nil, key); resp.StatusCode != 404 {
		t.Errorf("killed: %d", resp.StatusCode)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// diskFigures is a metric's diskUsed and diskTotal; ok: both there.
func diskFigures(m map[string]any) (used, total int64, ok bool) {
	u, uok := m["diskUsed"].(float64)
	tt, tok := m["diskTotal"].(float64)
	return int64(u), int64(tt), uok && tok
}

// A sandbox killed under a running command ends the command's stream
// with "unavailable", which the SDKs report as a TimeoutError; a command
// killed on its own (SendSignal) still ends with its signal.
func TestE2BKilledUnderACommand(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	for _, how := range []string{"signal", "kill"} {
		if how == "kill" {
			defer func() { _ = d.m.Destroy(context.Background(), id) }()
		}
		h := envdHeaders(id, tok, map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"})
		req, _ := http.NewRequest("POST", d.url+"/process.Process/Start", bytes.NewReader(envelope(0, `{"process":{"cmd":"sleep","args":["30"]}}`)))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		first := readFrame(t, br)
		var ev eventMessage
		if json.Unmarshal(first, &ev) != nil || ev.Event.Start == nil {
			t.Fatalf("%s: first event %s", how, first)
		}
		start := time.Now()
		if how == "signal" {
			sig := `{"process":{"pid":` + itoa(int64(ev.Event.Start.PID)) + `},"signal":"SIGNAL_SIGKILL"}`
			if r, b := d.call("POST", "/process.Process/SendSignal", []byte(sig), envdHeaders(id, tok, map[string]string{"Content-Type": "application/json"})); r.StatusCode != 200 {
				t.Fatalf("signal: %d %s", r.StatusCode, b)
			}
		} else if r, _ := d.call("DELETE", "/sandboxes/"+id, nil, map[string]string{"X-API-KEY": d.key}); r.StatusCode != 204 {
			t.Fatalf("kill: %d", r.StatusCode)
		}
		rest, _ := io.ReadAll(br)
		resp.Body.Close()
		msgs, end := frames(t, rest)
		if time.Since(start) > 10*time.Second {
			t.Errorf("%s: the stream took %s to end", how, time.Since(start))
		}
		switch how {
		case "signal":
			if end != "{}" || len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1], `"status":"signal: killed"`) {
				t.Errorf("signal: %v %s", msgs, end)
			}
		case "kill":
			if !strings.Contains(end, `"code":"unavailable"`) || !strings.Contains(end, "killed") {
				t.Errorf("kill: %v %s", msgs, end)
			}
		}
	}
}

// readFrame reads one envelope's message.
func readFrame(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatalf("read envelope: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("read message: %v", err)
	}
	return b
}

// The range parameters, as a client other than the SDKs may send them.
func TestMetricsRange(t *testing.T) {
	for q, bad := range map[string]bool{
		"": false, "start=0": false, "start=1&end=2": false, "end=99": false,
		"start=-1": true, "end=1e9": true, "start=2&end=1": true, "start=1&start=1": true, "limit=1": true, "end=99999999999999999999": true,
	} {
		r := httptest.NewRequest("GET", "/sandboxes/x/metrics?"+q, nil)
		_, _, err := metricsRange(r)
		if (err != nil) != bad {
			t.Errorf("%q: %v, want refused %v", q, err, bad)
		}
	}
}
