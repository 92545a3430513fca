package api

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/review"
	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/wire"
)

// auditDaemon runs with the audit log and the redactor, as airlock serve
// does, and the permissive policy (these tests are of the record).
func auditDaemon(t *testing.T) (*daemon, *audit.Log) {
	t.Helper()
	d, log, _ := auditDaemonClock(t)
	return d, log
}

func auditDaemonClock(t *testing.T) (*daemon, *audit.Log, *clock) {
	t.Helper()
	var log *audit.Log
	clk := &clock{}
	d := newDaemonWith(t, func(c *stack.Config) {
		c.Now = clk.Now
		red := redact.New()
		var err error
		log, err = audit.Open(context.Background(), audit.Config{Store: c.Store, Redactor: red, KeyFile: filepath.Join(t.TempDir(), "audit.key"),
			CheckpointFile: filepath.Join(t.TempDir(), "audit-head.json")})
		if err != nil {
			t.Fatal(err)
		}
		c.Policy, c.Audit, c.Redactor = allowAll, log, red
	})
	return d, log, clk
}

func (d *daemon) events(query string) []audit.Event {
	d.t.Helper()
	var out struct{ Events []audit.Event }
	if code := d.do("GET", "/v1/audit?"+query, nil, &out); code != 200 {
		d.t.Fatalf("audit query: %d", code)
	}
	return out.Events
}

func (d *daemon) bundle(taskID string) []byte {
	d.t.Helper()
	resp, err := d.client.Get("http://airlock/v1/tasks/" + taskID + "/bundle")
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		d.t.Fatalf("bundle: %d %s", resp.StatusCode, b)
	}
	return b
}

func untarAll(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name], _ = io.ReadAll(tr)
	}
	return out
}

// The record of a task: events for what happened, a bundle that
// verifies, and a secret the sandbox printed, wrote and was given stored
// nowhere: not in any event, blob, exec record, output, bundle entry or
// report.
func TestAuditRecordAndBundleKeepNoSecret(t *testing.T) {
	d, log := auditDaemon(t)
	const secret = "s3cr3t-Pa55w0rd-for-the-test-77"
	const token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"
	repo, first := sampleRepo(t)
	var task tasks.Task
	if code := d.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first, "scope": []string{"src/**"}, "test": "sh test.sh", "prompt": "fix calc"}, &task); code != 201 {
		t.Fatalf("start: %d", code)
	}
	script := `echo "token is $API_TOKEN"; echo ` + token + ` >&2; printf 'key=%s\n' "$API_TOKEN" > src/leak.txt; printf 'MZ\0\0binary' > src/tool.exe; sed -i 's/-/+/' src/calc.sh; ` +
		// a file named after the secret, and a dependency spec that holds it
		`echo x > "src/$API_TOKEN.txt"; printf '{"dependencies": {"left-pad": "%s"}}\n' "$API_TOKEN" > src/package.json; ` +
		// and an archive that holds it, compressed
		`printf 'T=%s\n' "$API_TOKEN" > /tmp/e; tar czf src/dist.tgz -C /tmp e`
	code, events, _ := d.exec(task.SandboxID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"API_TOKEN=" + secret}})
	out, errOut, _ := collect(events)
	if code != 200 || !strings.Contains(out, "token is ") {
		t.Fatalf("exec: %d %q %q", code, out, errOut)
	}
	if passed, _ := d.testTask(task.ID); !passed {
		t.Fatal("tests failed after the fix")
	}
	// The agent's own verification command counts as a test run too.
	if code, _, _ := d.exec(task.SandboxID, wire.ExecRequest{Argv: []string{"python3", "-m", "unittest"}}); code != 200 {
		t.Fatalf("python3 -m unittest: %d", code)
	}
	// Events for what happened.
	evs := d.events("sandbox=" + task.SandboxID)
	kinds := map[string]int{}
	for _, e := range evs {
		kinds[e.Kind]++
	}
	for _, k := range []string{"sandbox.create", "task.start", "exec.start", "exec.end", "task.test"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event: %v", k, kinds)
		}
	}
	if n := len(d.events("kind=exec&sandbox=" + task.SandboxID)); n != kinds["exec.start"]+kinds["exec.end"] {
		t.Errorf("kind=exec matched %d events", n)
	}
	b := d.bundle(task.ID)
	v, err := bundle.Verify(bytes.NewReader(b), log.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if v.Manifest.Task != task.ID || v.Manifest.Commit != first || v.Events == 0 {
		t.Fatalf("verified: %+v", v.Manifest)
	}
	files := untarAll(t, b)
	// Each command's record says what it changed, as the sandbox saw it.
	var wrote bool
	for _, line := range strings.Split(strings.TrimSpace(string(files["commands.jsonl"])), "\n") {
		var c bundle.Command
		_ = json.Unmarshal([]byte(line), &c)
		if len(c.Argv) == 3 && strings.Contains(c.Argv[2], "leak.txt") && strings.Contains(strings.Join(c.Writes, " "), "/workspace/src/leak.txt") && strings.Contains(strings.Join(c.Writes, " "), "/workspace/src/calc.sh") {
			wrote = true
		}
	}
	if !wrote {
		t.Errorf("the script's file activity is not in commands.jsonl:\n%s", files["commands.jsonl"])
	}
	var runs []bundle.TestRun
	_ = json.Unmarshal(files["tests.json"], &runs)
	if len(runs) != 2 || runs[0].Command != "sh test.sh" || runs[1].Command != "python3 -m unittest" {
		t.Errorf("test runs: %+v", runs)
	}
	var arts []bundle.Artifact
	_ = json.Unmarshal(files["artifacts.json"], &arts)
	byPath := map[string]bundle.Artifact{}
	for _, a := range arts {
		byPath[a.Path] = a
	}
	if a := byPath["src/leak.txt"]; len(a.Findings) == 0 || a.Included {
		t.Errorf("the leaked file is not flagged: %+v", arts)
	}
	if a := byPath["src/tool.exe"]; a.Type != "executable" {
		t.Errorf("the executable is not flagged: %+v", arts)
	}
	if !strings.Contains(html.UnescapeString(string(files["report.html"])), "echo $(( $1 + $2 ))") {
		t.Errorf("the report lacks the diff")
	}
	if a := byPath["src/dist.tgz"]; a.Type != "archive" || a.Included {
		t.Errorf("the archive is copied into the bundle: %+v", arts)
	}
	if a := byPath["src/[REDACTED:known-secret].txt"]; a.Included || len(a.Findings) == 0 {
		t.Errorf("the file named after the secret: %+v", arts)
	}
	// The diff and the exec records over the API.
	var diffBody, execsBody []byte
	for p, into := range map[string]*[]byte{"/v1/tasks/" + task.ID + "/diff": &diffBody, "/v1/sandboxes/" + task.SandboxID + "/execs": &execsBody} {
		resp, err := d.client.Get("http://airlock" + p)
		if err != nil {
			t.Fatal(err)
		}
		*into, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
	}
	if !bytes.Contains(diffBody, []byte("[REDACTED:known-secret].txt")) {
		t.Errorf("the diff does not show the file named after the secret: %s", diffBody)
	}
	// Nowhere: the database file (and its WAL), every bundle entry (and
	// every entry's name), the diff, the exec records.
	for _, s := range []string{secret, token, base64.StdEncoding.EncodeToString([]byte(secret))} {
		for name, data := range files {
			if bytes.Contains(data, []byte(s)) || strings.Contains(name, s) {
				t.Errorf("bundle entry %s holds a secret", name)
			}
		}
		if bytes.Contains(diffBody, []byte(s)) || bytes.Contains(execsBody, []byte(s)) {
			t.Errorf("the diff or the exec records hold a secret")
		}
		for _, f := range []string{d.dbPath, d.dbPath + "-wal"} {
			data, _ := os.ReadFile(f)
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds a secret", filepath.Base(f))
			}
		}
	}
	// The record still verifies, through the daemon.
	var rep audit.Report
	if code := d.do("GET", "/v1/audit/verify", nil, &rep); code != 200 || !rep.OK() || rep.Events < int64(len(evs)) {
		t.Fatalf("verify: %d %s", code, rep.String())
	}
}

// tamper runs statements on the daemon's database behind its back, as
// someone with the file would.
func (d *daemon) tamper(t *testing.T, stmts ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+d.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// An edit made directly in the database is found by the daemon's verify.
func TestAuditVerifyThroughTheAPI(t *testing.T) {
	d, _ := auditDaemon(t)
	id := d.sandbox()
	for i := 0; i < 3; i++ {
		d.sh(id, "echo hi", nil)
	}
	var rep audit.Report
	if d.do("GET", "/v1/audit/verify", nil, &rep); !rep.OK() {
		t.Fatalf("before: %s", rep.String())
	}
	d.tamper(t, "DROP TRIGGER audit_no_update", `UPDATE audit_events SET payload = replace(payload, 'echo hi', 'echo ok') WHERE kind = 'exec.start' AND seq = (SELECT min(seq) FROM audit_events WHERE kind = 'exec.start')`)
	if d.do("GET", "/v1/audit/verify", nil, &rep); rep.OK() || !strings.Contains(rep.String(), "changed") {
		t.Fatalf("the edit was not found: %s", rep.String())
	}
}

// The daemon knows how far it wrote: a tail cut from under it shows in its
// verify even when the checkpoint is gone too (found in review: a cut tail
// with the checkpoint replaced by garbage verified "ok").
func TestAuditVerifyKnowsTheDaemonsOwnHead(t *testing.T) {
	d, _ := auditDaemon(t)
	id := d.sandbox()
	for i := 0; i < 3; i++ {
		d.sh(id, "echo hi", nil)
	}
	var rep audit.Report
	if d.do("GET", "/v1/audit/verify", nil, &rep); !rep.OK() {
		t.Fatalf("before: %s", rep.String())
	}
	d.tamper(t, "DROP TRIGGER audit_no_delete", `DELETE FROM audit_events WHERE seq > (SELECT max(seq) - 3 FROM audit_events)`)
	if d.do("GET", "/v1/audit/verify", nil, &rep); rep.OK() || !strings.Contains(rep.String(), "this daemon wrote up to event") {
		t.Fatalf("the cut tail was not found: %s", rep.String())
	}
}

// A bundle that was changed, or carries a path that escapes, is refused.
func TestBundleVerifyRefusesBadBundles(t *testing.T) {
	d, log := auditDaemon(t)
	repo, first := sampleRepo(t)
	var task tasks.Task
	d.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first}, &task)
	d.sh(task.SandboxID, "echo more >> README", nil)
	good := d.bundle(task.ID)
	if _, err := bundle.Verify(bytes.NewReader(good), log.PublicKey()); err != nil {
		t.Fatal(err)
	}
	rewrite := func(edit func(name string, data []byte) (string, []byte, byte)) []byte {
		files := untarAll(t, good)
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for name, data := range files {
			n, b, typ := edit(name, data)
			hdr := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: typ}
			if typ == tar.TypeSymlink {
				hdr.Size, hdr.Linkname, b = 0, "/etc/passwd", nil
			}
			_ = tw.WriteHeader(hdr)
			_, _ = tw.Write(b)
		}
		_ = tw.Close()
		_ = gz.Close()
		return buf.Bytes()
	}
	for what, bad := range map[string][]byte{
		"changed patch": rewrite(func(n string, b []byte) (string, []byte, byte) {
			if n == "patch.diff" {
				b = append(b, "+sneaky\n"...)
			}
			return n, b, tar.TypeReg
		}),
		"dot-dot path": rewrite(func(n string, b []byte) (string, []byte, byte) {
			if n == "report.html" {
				n = "../report.html"
			}
			return n, b, tar.TypeReg
		}),
		"absolute path": rewrite(func(n string, b []byte) (string, []byte, byte) {
			if n == "tests.json" {
				n = "/tmp/tests.json"
			}
			return n, b, tar.TypeReg
		}),
		"symlink": rewrite(func(n string, b []byte) (string, []byte, byte) {
			if n == "tests.json" {
				return n, b, tar.TypeSymlink
			}
			return n, b, tar.TypeReg
		}),
		"forged manifest": rewrite(func(n string, b []byte) (string, []byte, byte) {
			if n == "manifest.json" {
				b = bytes.Replace(b, []byte(first), []byte(strings.Repeat("0", len(first))), 1)
			}
			return n, b, tar.TypeReg
		}),
	} {
		if _, err := bundle.Verify(bytes.NewReader(bad), log.PublicKey()); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
}

// Purge removes results, outputs and blobs, keeps the chain verifiable,
// and is itself recorded.
func TestPurgeKeepsTheChain(t *testing.T) {
	d, _, clk := auditDaemonClock(t)
	repo, first := sampleRepo(t)
	var task tasks.Task
	d.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first}, &task)
	code, events, _ := d.exec(task.SandboxID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "head -c 10000 /dev/zero | tr '\\0' x; echo more >> README"}})
	out, _, _ := collect(events)
	if code != 200 || len(out) != 10000 {
		t.Fatalf("exec: %d %d", code, len(out))
	}
	if code := d.do("POST", "/v1/tasks/"+task.ID+"/finish", map[string]any{}, nil); code != 200 {
		t.Fatalf("finish: %d", code)
	}
	if b := d.bundle(task.ID); len(b) == 0 {
		t.Fatal("no bundle after finish")
	}
	var rep audit.Report
	if d.do("GET", "/v1/audit/verify", nil, &rep); !rep.OK() || rep.Blobs == 0 {
		t.Fatalf("before: %s", rep.String())
	}
	if code := d.do("POST", "/v1/purge", map[string]any{"older_than_seconds": 0}, nil); code != 400 {
		t.Fatalf("purge of nothing: %d", code)
	}
	clk.advance(2 * time.Hour)
	var res review.PurgeResult
	if code := d.do("POST", "/v1/purge", map[string]any{"older_than_seconds": 3600}, &res); code != 200 || res.TaskResults != 1 || res.Outputs == 0 || res.AuditBlobs == 0 {
		t.Fatalf("purge: %d %+v", code, res)
	}
	if resp, err := d.client.Get("http://airlock/v1/tasks/" + task.ID + "/bundle"); err != nil || resp.StatusCode != 404 {
		t.Fatalf("bundle after purge: %v %v", resp.StatusCode, err)
	}
	if d.do("GET", "/v1/audit/verify", nil, &rep); !rep.OK() || rep.Purged == 0 {
		t.Fatalf("after purge: %s", rep.String())
	}
	if n := len(d.events("kind=operator.purge")); n != 1 {
		t.Fatalf("purge events: %d", n)
	}
}

// Values of secret-named variables a request brings are learned in one
// batch, at most MaxLearned per request (one by one, a request of 6,000
// cost minutes of the daemon's CPU; found in an interface review), and
// each is redacted from what is stored.
func TestLearnedSecretsAreBatchedAndCapped(t *testing.T) {
	d, _ := auditDaemon(t)
	var sb sandbox.Sandbox
	if code := d.do("POST", "/v1/sandboxes", nil, &sb); code != 201 {
		t.Fatal(code)
	}
	env := func(n int) []string {
		var e []string
		for i := range n {
			e = append(e, fmt.Sprintf("SVC%d_TOKEN=learned-value-%04d-x", i, i))
		}
		return e
	}
	code, _, e := d.exec(sb.ID, wire.ExecRequest{Argv: []string{"true"}, Env: env(sandbox.MaxLearned + 1)})
	if code != 400 || e.Code != "invalid" || !strings.Contains(e.Message, "secret-named variables") {
		t.Fatalf("%d secret-named variables: %d %+v", sandbox.MaxLearned+1, code, e)
	}
	code, events, _ := d.exec(sb.ID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "env | grep _TOKEN= | sort"}, Env: env(sandbox.MaxLearned)})
	out, _, exit := collect(events)
	if code != 200 || exit == nil || strings.Count(out, "learned-value-") != sandbox.MaxLearned {
		t.Fatalf("exec with %d: %d %+v %q", sandbox.MaxLearned, code, exit, out)
	}
	execID := ""
	for _, ev := range events {
		if ev.Type == "start" {
			execID = ev.ExecID
		}
	}
	resp, err := d.client.Get("http://airlock/v1/sandboxes/" + sb.ID + "/execs/" + execID + "/output?stream=stdout")
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(stored), "learned-value-") || strings.Count(string(stored), "[REDACTED") != sandbox.MaxLearned {
		t.Errorf("stored output keeps a learned value: %q", stored)
	}
}

// Typed input is recorded a line at a time, so a secret typed in pieces is
// redacted whole (found in a review-plane review: two chunks of a password
// were recorded, each unredacted); what is held without a line end is
// recorded when stdin closes.
func TestTypedInputIsRecordedByLine(t *testing.T) {
	d, _ := auditDaemon(t)
	const secret = "s3cr3t-Pa55w0rd-for-the-test-77"
	var sb sandbox.Sandbox
	if code := d.do("POST", "/v1/sandboxes", map[string]any{"env": []string{"DB_PASSWORD=" + secret}}, &sb); code != 201 {
		t.Fatal(code)
	}
	var started struct {
		ExecID string `json:"exec_id"`
	}
	if code := d.do("POST", "/v1/sandboxes/"+sb.ID+"/exec", map[string]any{"argv": []string{"/bin/sh", "-c", "cat >/dev/null"}, "background": true, "stdin_open": true}, &started); code != 202 {
		t.Fatal(code)
	}
	base := "/v1/sandboxes/" + sb.ID + "/execs/" + started.ExecID
	for _, chunk := range []string{secret[:12], secret[12:] + "\n", "tail without a line end"} {
		if code := d.do("POST", base+"/input", map[string]any{"data": []byte(chunk)}, nil); code != 204 {
			t.Fatalf("input: %d", code)
		}
	}
	if code := d.do("POST", base+"/close-stdin", nil, nil); code != 204 {
		t.Fatalf("close-stdin: %d", code)
	}
	var inputs []string
	for _, ev := range d.events("kind=exec.input&exec=" + started.ExecID) {
		var p struct{ Data string }
		_ = json.Unmarshal(ev.Payload, &p)
		inputs = append(inputs, p.Data)
	}
	if len(inputs) != 2 || inputs[0] != "[REDACTED:known-secret]\n" || inputs[1] != "tail without a line end" {
		t.Errorf("recorded input: %q", inputs)
	}
	for _, in := range inputs {
		if strings.Contains(in, secret[:12]) || strings.Contains(in, secret[12:]) {
			t.Errorf("a piece of the secret is on record: %q", in)
		}
	}
}

// The daemon's verify, while commands keep writing the log, reports no
// problem (found in a review of this session's changes: it compared the
// log with a head that counted events still being written).
func TestAuditVerifyUnderLoad(t *testing.T) {
	d, _ := auditDaemon(t)
	id := d.sandbox()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				d.exec(id, wire.ExecRequest{Argv: []string{"true"}})
			}
		})
	}
	for i := range 20 {
		var rep audit.Report
		if code := d.do("GET", "/v1/audit/verify", nil, &rep); code != 200 || !rep.OK() {
			t.Errorf("verify %d under load: %d %s", i, code, rep.String())
			break
		}
	}
	close(stop)
	wg.Wait()
}

// Closing stdin is not held up by an input blocked on a command that does
// not read (found in a review of this session's changes: close-stdin
// waited behind it; with no client timeout, for ever).
func TestCloseStdinBehindABlockedInput(t *testing.T) {
	d, _ := auditDaemon(t)
	id := d.sandbox()
	var started struct {
		ExecID string `json:"exec_id"`
	}
	if code := d.do("POST", "/v1/sandboxes/"+id+"/exec", map[string]any{"argv": []string{"sleep", "30"}, "background": true, "stdin_open": true}, &started); code != 202 {
		t.Fatal(code)
	}
	base := "http://airlock/v1/sandboxes/" + id + "/execs/" + started.ExecID
	blocked := make(chan int, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"data": make([]byte, 256<<10)}) // more than a pipe holds
		resp, err := d.client.Post(base+"/input", "application/json", bytes.NewReader(body))
		if err != nil {
			blocked <- 0
			return
		}
		resp.Body.Close()
		blocked <- resp.StatusCode
	}()
	time.Sleep(300 * time.Millisecond) // the input is now stuck in the pipe
	c := &http.Client{Transport: d.client.Transport, Timeout: 10 * time.Second}
	resp, err := c.Post(base+"/close-stdin", "application/json", nil)
	if err != nil {
		t.Fatalf("close-stdin behind a blocked input: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Errorf("close-stdin: %d", resp.StatusCode)
	}
	select {
	case code := <-blocked:
		if code != 409 {
			t.Errorf("the blocked input, once stdin closed: %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Error("the blocked input was not released by close-stdin")
	}
}

// A tar upload is on record as two events, before and after, with the
// paths it wrote (an event per entry made large uploads slow).
func TestTarUploadIsRecordedOnce(t *testing.T) {
	d, _ := auditDaemon(t)
	id := d.sandbox()
	entries := map[string]string{}
	for i := range 50 {
		entries[fmt.Sprintf("src/f%02d.txt", i)] = "x"
	}
	req, _ := http.NewRequest("PUT", "http://airlock/v1/sandboxes/"+id+"/files/tar?path=/workspace", bytes.NewReader(tarOf(t, entries)))
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	evs := d.events("kind=file.upload&sandbox=" + id)
	if len(evs) != 2 {
		t.Fatalf("%d file.upload events, want 2", len(evs))
	}
	var done struct {
		State   string
		Entries int
		Paths   []string
	}
	_ = json.Unmarshal(evs[1].Payload, &done)
	if done.State != "done" || done.Entries != 50 || len(done.Paths) != 50 || done.Paths[0] != "/workspace/src/f00.txt" {
		t.Errorf("the upload's record: %+v", done)
	}
}

// The record, its verification and purging are the operator's; the
// public key that verifies bundles is anyone's (it is public).
func TestAuditPubkeyIsPublicTheRecordIsNot(t *testing.T) {
	roles := routeRoles(New(nil, Modules{}, Health{}))
	for pattern, want := range map[string]tenant.Role{"GET /v1/audit": tenant.Operator, "GET /v1/audit/verify": tenant.Operator,
		"GET /v1/audit/blobs/{hash}": tenant.Operator, "POST /v1/purge": tenant.Operator, "GET /v1/audit/pubkey": tenant.Agent} {
		if roles[pattern] != want {
			t.Errorf("%s: role %q, want %q", pattern, roles[pattern], want)
		}
	}
}
