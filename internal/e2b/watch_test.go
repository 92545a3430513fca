package e2b

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/usage"
)

// openWatch starts a WatchDir stream and returns its reader once the
// start event came (or the stream's end, if it ended first).
func (d *door) openWatch(id, tok, body string) (*bufio.Reader, func(), string) {
	d.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", d.url+"/filesystem.Filesystem/WatchDir", bytes.NewReader(envelope(0, body)))
	for k, v := range envdHeaders(id, tok, map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	stop := func() { cancel(); resp.Body.Close() }
	flags, msg := readEnvelope(d.t, br)
	if flags&flagEndStream != 0 {
		stop()
		return nil, nil, string(msg)
	}
	if string(msg) != `{"start":{}}` {
		d.t.Fatalf("first message %s", msg)
	}
	return br, stop, ""
}

func readEnvelope(t *testing.T, r io.Reader) (byte, []byte) {
	t.Helper()
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatalf("read envelope: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("read message: %v", err)
	}
	return hdr[0], b
}

// events reads filesystem events until want are all seen (in order,
// others between them allowed) or the time is up; it returns all seen.
func watchUntil(t *testing.T, br *bufio.Reader, want []string, within time.Duration) []string {
	t.Helper()
	got := []string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		i := 0
		for i < len(want) {
			var hdr [5]byte
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				return
			}
			b := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
			if _, err := io.ReadFull(br, b); err != nil || hdr[0]&flagEndStream != 0 {
				got = append(got, "END "+string(b))
				return
			}
			var m watchMessage
			if json.Unmarshal(b, &m) != nil || m.Filesystem == nil {
				continue
			}
			e := m.Filesystem.Type + " " + m.Filesystem.Name
			got = append(got, e)
			if e == want[i] {
				i++
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(within):
		t.Errorf("timed out waiting for %v; got %v", want, got)
	}
	return got
}

// WatchDir reports the changes of a directory's entries (and, recursive,
// its tree) as envd does: names relative to it, a write through the
// file API as the file's creation and write (not its temporary file),
// a rename as the old name's rename and the new one's creation.
func TestE2BWatchDir(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	if out, _ := d.run(id, tok, "", "mkdir -p /home/user/w/sub && echo made"); out != "made\n" {
		t.Fatal("setup")
	}
	br, stop, end := d.openWatch(id, tok, `{"path":"/home/user/w","recursive":true}`)
	if end != "" {
		t.Fatalf("watch: %s", end)
	}
	defer stop()
	if resp, b := d.call("POST", "/files?path=/home/user/w/up.txt", []byte("data"), envdHeaders(id, tok, map[string]string{"Content-Type": "application/octet-stream"})); resp.StatusCode != 200 {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	d.run(id, tok, "", "echo x > /home/user/w/sub/c.txt; mv /home/user/w/up.txt /home/user/w/moved.txt; chmod 600 /home/user/w/moved.txt; rm /home/user/w/sub/c.txt")
	got := watchUntil(t, br, []string{
		"EVENT_TYPE_CREATE up.txt", "EVENT_TYPE_WRITE up.txt",
		"EVENT_TYPE_CREATE sub/c.txt", "EVENT_TYPE_WRITE sub/c.txt",
		"EVENT_TYPE_RENAME up.txt", "EVENT_TYPE_CREATE moved.txt",
		"EVENT_TYPE_CHMOD moved.txt", "EVENT_TYPE_REMOVE sub/c.txt",
	}, 10*time.Second)
	t.Logf("events: %v", got)
	for _, e := range got {
		if strings.Contains(e, "airlock-upload") {
			t.Errorf("the upload's temporary file was reported: %v", got)
		}
	}
	// Not recursive: only the directory's own entries.
	br2, stop2, end := d.openWatch(id, tok, `{"path":"/home/user/w"}`)
	if end != "" {
		t.Fatalf("watch: %s", end)
	}
	defer stop2()
	d.run(id, tok, "", "echo y > /home/user/w/sub/deep.txt; echo z > /home/user/w/top.txt")
	got = watchUntil(t, br2, []string{"EVENT_TYPE_CREATE top.txt"}, 10*time.Second)
	for _, e := range got {
		if strings.Contains(e, "deep.txt") {
			t.Errorf("a non-recursive watch reported %s", e)
		}
	}
}

// Attacks on WatchDir: a watch cannot look beyond the trees airlock
// watches (directly, by a symlink or by climbing), and never tells the
// name of a change to a file the caller may not read.
func TestE2BWatchDirAttacks(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	if out, _ := d.run(id, tok, "", "ln -s /etc /home/user/etc-link && echo made"); out != "made\n" {
		t.Fatal("setup")
	}
	for body, want := range map[string]string{
		`{"path":"/etc"}`:                 `"code":"unimplemented"`,
		`{"path":"/home/user/etc-link"}`:  `"code":"unimplemented"`,
		`{"path":"/home/user/../../etc"}`: `"code":"unimplemented"`,
		`{"path":"/tmp"}`:                 `"code":"unimplemented"`,
		`{"path":"/home/user/nope"}`:      `"code":"not_found"`,
		`{"path":"/etc/hostname"}`:        `"code":"invalid_argument"`,
	} {
		if _, _, end := d.openWatch(id, tok, body); !strings.Contains(end, want) {
			t.Errorf("%s: %q, want %s", body, end, want)
		}
	}
	br, stop, end := d.openWatch(id, tok, `{"path":"/workspace"}`)
	if end != "" {
		t.Fatalf("watch: %s", end)
	}
	defer stop()
	// (the daemon writes the secret file: no policy of the caller's)
	own, err := d.m.Files(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := own.WriteFile(context.Background(), "/workspace/.env", strings.NewReader("TOKEN=x\n"), 0o644, false); err != nil {
		t.Fatal(err)
	}
	d.run(id, tok, "", "echo ok > /workspace/after.txt")
	got := watchUntil(t, br, []string{"EVENT_TYPE_CREATE after.txt"}, 10*time.Second)
	for _, e := range got {
		if strings.Contains(e, ".env") {
			t.Errorf("a change to a secret file was told: %v", got)
		}
	}
}

// A watch ends as E2B's does: with deadline_exceeded at its timeout, and
// with unavailable when the sandbox is killed under it.
func TestE2BWatchDirEnds(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	req, _ := http.NewRequest("POST", d.url+"/filesystem.Filesystem/WatchDir", bytes.NewReader(envelope(0, `{"path":"/workspace"}`)))
	for k, v := range envdHeaders(id, tok, map[string]string{"Content-Type": "application/connect+json", "Connect-Timeout-Ms": "300"}) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if msgs, end := frames(t, b); len(msgs) != 1 || !strings.Contains(end, `"code":"deadline_exceeded"`) {
		t.Errorf("timeout: %v %s", msgs, end)
	}
	br, stop, end := d.openWatch(id, tok, `{"path":"/workspace"}`)
	if end != "" {
		t.Fatalf("watch: %s", end)
	}
	defer stop()
	if r, _ := d.call("DELETE", "/sandboxes/"+id, nil, map[string]string{"X-API-KEY": d.key}); r.StatusCode != 204 {
		t.Fatal("kill")
	}
	flags, msg := readEnvelope(t, br)
	if flags&flagEndStream == 0 || !strings.Contains(string(msg), `"code":"unavailable"`) {
		t.Errorf("killed: %x %s", flags, msg)
	}
}

// The polled watchers (the Python SDK's watch_dir): the changes since
// the last poll, each poll; a watcher is its sandbox's only, and one
// whose sandbox stopped says so.
func TestE2BPolledWatchers(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	other, otherTok := d.create()
	code, b := d.fileRPC(id, tok, "CreateWatcher", `{"path":"/workspace","recursive":true}`)
	var c struct{ WatcherID string }
	if err := json.Unmarshal([]byte(b), &c); code != 200 || err != nil || len(c.WatcherID) != 32 {
		t.Fatalf("create: %d %s", code, b)
	}
	poll := func(sb, tk string) (int, []fsEvent, string) {
		code, b := d.fileRPC(sb, tk, "GetWatcherEvents", `{"watcherId":"`+c.WatcherID+`"}`)
		var r struct{ Events []fsEvent }
		_ = json.Unmarshal([]byte(b), &r)
		return code, r.Events, b
	}
	if code, evs, b := poll(id, tok); code != 200 || len(evs) != 0 || !strings.Contains(b, `"events":[]`) {
		t.Errorf("first poll: %d %s", code, b)
	}
	// the file once the new directory is seen: a write made in it before
	// its watch is added is part of the create its scan reports
	var seen []string
	collect := func(n int) {
		for i := 0; i < 50 && len(seen) < n; i++ {
			_, evs, _ := poll(id, tok)
			for _, e := range evs {
				seen = append(seen, e.Type+" "+e.Name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	d.run(id, tok, "", "mkdir /workspace/p")
	collect(1)
	d.run(id, tok, "", "echo 1 > /workspace/p/f")
	collect(3)
	if want := []string{"EVENT_TYPE_CREATE p", "EVENT_TYPE_CREATE p/f", "EVENT_TYPE_WRITE p/f"}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("events %v, want %v", seen, want)
	}
	// Another sandbox's token cannot poll or remove it.
	if code, _, b := poll(other, otherTok); code != 404 {
		t.Errorf("polled from another sandbox: %d %s", code, b)
	}
	if code, b := d.fileRPC(other, otherTok, "RemoveWatcher", `{"watcherId":"`+c.WatcherID+`"}`); code != 404 {
		t.Errorf("removed from another sandbox: %d %s", code, b)
	}
	if code, b := d.fileRPC(id, tok, "RemoveWatcher", `{"watcherId":"`+c.WatcherID+`"}`); code != 200 {
		t.Errorf("remove: %d %s", code, b)
	}
	if code, _, _ := poll(id, tok); code != 404 {
		t.Errorf("poll after remove: %d", code)
	}
	for body, want := range map[string]string{
		`{"path":"/etc"}`: "can be watched",
	} {
		if code, b := d.fileRPC(id, tok, "CreateWatcher", body); code != 501 || !strings.Contains(b, want) {
			t.Errorf("%s: %d %s", body, code, b)
		}
	}
	// The sandbox stops: the next poll says so.
	_, b = d.fileRPC(id, tok, "CreateWatcher", `{"path":"/workspace"}`)
	_ = json.Unmarshal([]byte(b), &c)
	if r, _ := d.call("DELETE", "/sandboxes/"+id, nil, map[string]string{"X-API-KEY": d.key}); r.StatusCode != 204 {
		t.Fatal("kill")
	}
	code, _, b = poll(id, tok)
	for i := 0; i < 50 && code == 200; i++ {
		time.Sleep(20 * time.Millisecond)
		code, _, b = poll(id, tok)
	}
	if !strings.Contains(b, "unavailable") && !strings.Contains(b, "not_found") {
		t.Errorf("after kill: %d %s", code, b)
	}
}

// A door given a nil usage module serves as one given none: no
// metrics, and a command's own end is not taken for a kill.
func TestNilUsageIsNone(t *testing.T) {
	var none *usage.Usage
	s := New(Config{Usage: none})
	if _, ok := s.usage.(noUsage); !ok || !s.usage.Live("sb") {
		t.Errorf("usage %T", s.usage)
	}
}

// includeEntry (envd 0.6.3): each event carries what its path is when
// the event is sent, as Stat describes it; a removal carries none. The
// polled watchers (the Python SDK's watch_dir) do the same.
func TestE2BWatchDirIncludeEntry(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	br, stop, end := d.openWatch(id, tok, `{"path":"/home/user","includeEntry":true}`)
	if end != "" {
		t.Fatalf("watch: %s", end)
	}
	defer stop()
	code, b := d.fileRPC(id, tok, "CreateWatcher", `{"path":"/home/user","includeEntry":true}`)
	var c struct{ WatcherID string }
	if code != 200 || json.Unmarshal([]byte(b), &c) != nil {
		t.Fatalf("CreateWatcher: %d %s", code, b)
	}
	entries := map[string]*entryInfo{}
	// until want (an event type of e.txt) is seen
	until := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, seen := entries[want]; !seen; _, seen = entries[want] {
			if time.Now().After(deadline) {
				t.Fatalf("no %s event: %v", want, entries)
			}
			flags, msg := readEnvelope(t, br)
			var m watchMessage
			if flags&flagEndStream != 0 {
				t.Fatalf("stream ended: %s", msg)
			}
			if json.Unmarshal(msg, &m) == nil && m.Filesystem != nil && m.Filesystem.Name == "e.txt" {
				entries[m.Filesystem.Type] = m.Filesystem.Entry
			}
		}
	}
	d.run(id, tok, "", "printf abc > /home/user/e.txt; chmod 640 /home/user/e.txt")
	until("EVENT_TYPE_CHMOD")
	if e := entries["EVENT_TYPE_CHMOD"]; e == nil || e.Path != "/home/user/e.txt" || e.Type != "FILE_TYPE_FILE" || e.Size != "3" ||
		e.Mode != 0o640 || e.Permissions != "-rw-r-----" || e.Owner != UserName || e.ModifiedTime == "" {
		t.Errorf("chmod event's entry: %+v", e)
	}
	polled := ""
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(polled, "EVENT_TYPE_CHMOD") && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		code, b = d.fileRPC(id, tok, "GetWatcherEvents", `{"watcherId":"`+c.WatcherID+`"}`)
		if code != 200 {
			t.Fatalf("GetWatcherEvents: %d %s", code, b)
		}
		polled += b
	}
	if !strings.Contains(polled, `"type":"EVENT_TYPE_CHMOD","entry":{"name":"e.txt","type":"FILE_TYPE_FILE","path":"/home/user/e.txt"`) {
		t.Errorf("polled watcher's events: %s, want the chmod's entry", polled)
	}
	d.run(id, tok, "", "rm /home/user/e.txt")
	until("EVENT_TYPE_REMOVE")
	if e := entries["EVENT_TYPE_REMOVE"]; e != nil {
		t.Errorf("remove event's entry: %+v, want none", e)
	}
}
