package e2b

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// run starts cmd through the door (as the SDK's commands.run does, with
// its Basic user if asUser is set) and returns its stdout and exit code.
func (d *door) run(id, tok, asUser, cmd string) (string, string) {
	d.t.Helper()
	return d.runProc(id, tok, asUser, map[string]any{"cmd": "/bin/bash", "args": []string{"-l", "-c", cmd}})
}

// runProc is run of E2B's process (cmd, args, cwd, ...).
func (d *door) runProc(id, tok, asUser string, process map[string]any) (string, string) {
	d.t.Helper()
	h := envdHeaders(id, tok, map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"})
	if asUser != "" {
		h["Authorization"] = basicAuth(asUser)
	}
	body, _ := json.Marshal(map[string]any{"process": process})
	resp, b := d.call("POST", "/process.Process/Start", envelope(0, string(body)), h)
	if resp.StatusCode != 200 {
		d.t.Fatalf("start %v: %d %s", process, resp.StatusCode, b)
	}
	msgs, end := frames(d.t, b)
	var out []byte
	last := ""
	for _, m := range msgs {
		var ev eventMessage
		if json.Unmarshal([]byte(m), &ev) == nil && ev.Event.Data != nil {
			out = append(out, ev.Event.Data.Stdout...)
		}
		last = m
	}
	if end != "{}" {
		return string(out), end
	}
	return string(out), last
}

func basicAuth(user string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, "")
	return req.Header.Get("Authorization")
}

// The door's sandboxes follow E2B's conventions: the user is "user",
// home /home/user, the default cwd and the base of relative paths, and
// underneath it is airlock's unprivileged command user.
func TestE2BUserAndHome(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	for _, as := range []string{"", "user"} {
		out, end := d.run(id, tok, as, `whoami; pwd; echo "$HOME $USER $LOGNAME"; id -u; id -un; touch probe && ls /home/user/probe`)
		if want := "user\n/home/user\n/home/user user user\n1000\nuser\n/home/user/probe\n"; out != want {
			t.Errorf("as %q: got %q (end %s), want %q", as, out, end, want)
		}
	}
	if out, _ := d.run(id, tok, "", `cd /tmp && cd && pwd; cd notes 2>/dev/null || echo no-notes`); out != "/home/user\nno-notes\n" {
		t.Errorf("cd home: %q", out)
	}
	// A file written with a relative path lands in /home/user.
	h := envdHeaders(id, tok, map[string]string{"Content-Type": "application/octet-stream"})
	resp, b := d.call("POST", "/files?path=notes/a.txt&username=user", []byte("one\n"), h)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"path":"/home/user/notes/a.txt"`) {
		t.Fatalf("write notes/a.txt: %d %s", resp.StatusCode, b)
	}
	if out, _ := d.run(id, tok, "", `cat /home/user/notes/a.txt; cat notes/a.txt; find notes/a.txt -printf '%u\n'`); out != "one\none\nuser\n" {
		t.Errorf("the written file: %q", out)
	}
	if resp, b := d.call("GET", "/files?path=notes/a.txt", nil, envdHeaders(id, tok, nil)); resp.StatusCode != 200 || string(b) != "one\n" {
		t.Errorf("read notes/a.txt: %d %q", resp.StatusCode, b)
	}
	// The files API names the owner as the sandbox does.
	uh := envdHeaders(id, tok, map[string]string{"Content-Type": "application/json"})
	if resp, b := d.call("POST", "/filesystem.Filesystem/Stat", []byte(`{"path":"notes/a.txt"}`), uh); resp.StatusCode != 200 || !strings.Contains(string(b), `"owner":"user"`) {
		t.Errorf("stat notes/a.txt: %d %s", resp.StatusCode, b)
	}
	// A command's cwd, relative, is below the home too.
	if out, end := d.runProc(id, tok, "", map[string]any{"cmd": "pwd", "cwd": "notes"}); out != "/home/user/notes\n" {
		t.Errorf("cwd notes: %q %s", out, end)
	}
}

// Acting as root (or any user but "user") is refused, loudly, on the
// commands and the files, whichever way the SDK names the user.
func TestE2BRootIsRefused(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	for _, as := range []string{"root", "sandbox", "nobody", "user\x00root"} {
		h := envdHeaders(id, tok, map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1", "Authorization": basicAuth(as)})
		body, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "touch", "args": []string{"/home/user/ran-as-" + strings.ReplaceAll(as, "\x00", "")}}})
		resp, b := d.call("POST", "/process.Process/Start", envelope(0, string(body)), h)
		msgs, end := frames(t, b)
		if resp.StatusCode != 200 || len(msgs) != 0 || !strings.Contains(end, `"code":"permission_denied"`) || !strings.Contains(end, "no root and no sudo") {
			t.Errorf("start as %q: %d %q %s", as, resp.StatusCode, msgs, end)
		}
	}
	h := envdHeaders(id, tok, map[string]string{"Content-Type": "application/octet-stream"})
	if resp, b := d.call("POST", "/files?path=/home/user/by-root&username=root", []byte("x"), h); resp.StatusCode != 403 || !strings.Contains(string(b), `unprivileged user \"user\"`) {
		t.Errorf("write as root: %d %s", resp.StatusCode, b)
	}
	if out, _ := d.run(id, tok, "", "ls -A /home/user | grep -c . || true"); out != "0\n" {
		t.Errorf("a refused request left something in the home: %q", out)
	}
}
