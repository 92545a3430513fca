package manager

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
)

// Behaviour tests of the sandbox core on the fake backend, through the
// Manager's exported API only (the fast tier; see fake_tier_test.go).

// kindsOf returns the kinds of a sandbox's audit events, in order.
func kindsOf(t *testing.T, log *audit.Log, id string) []string {
	t.Helper()
	evs, err := log.Query(context.Background(), store.AuditFilter{SandboxID: id})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

// eventsOf returns a sandbox's audit events of one kind.
func eventsOf(t *testing.T, log *audit.Log, id, kind string) []*audit.Event {
	t.Helper()
	evs, err := log.Query(context.Background(), store.AuditFilter{SandboxID: id})
	if err != nil {
		t.Fatal(err)
	}
	var out []*audit.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// waitEnded waits for an exec's record to say it ended.
func waitEnded(t *testing.T, m *Manager, id, execID string) *sandbox.Exec {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, err := getExec(m, context.Background(), id, execID)
		if err != nil {
			t.Fatal(err)
		}
		if e.Ended != nil {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("exec %s has not ended: %+v", execID, e)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitStopped waits for a sandbox's record to say it stopped.
func waitStopped(t *testing.T, m *Manager, id string) *sandbox.Sandbox {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sb, err := m.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if sb.State == "stopped" {
			return sb
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s has not stopped: %+v", id, sb)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// background starts argv in the background and returns its exec id.
func background(t *testing.T, m *Manager, id string, req sandbox.ExecRequest) string {
	t.Helper()
	req.Background = true
	execID, st, err := m.Exec(context.Background(), id, req, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st != nil {
		t.Fatalf("a background exec returned a status: %+v", st)
	}
	return execID
}

// List and Get show what Create made, newest first, by state; unknown
// sandboxes and states are told apart from stopped ones.
func TestCoreListGet(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeTierManager(t)
	a, err := m.Create(ctx, sandbox.CreateRequest{Labels: map[string]string{"who": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // distinct creation times for the order
	b, err := m.Create(ctx, sandbox.CreateRequest{Labels: map[string]string{"who": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || a.Template != "host" || a.Labels["who"] != "a" || a.Expires != nil {
		t.Fatalf("created %+v and %+v", a, b)
	}
	if n := m.LiveCount(); n != 2 {
		t.Errorf("live count %d, want 2", n)
	}
	if err := m.Destroy(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Destroy(ctx, a.ID); err != nil {
		t.Errorf("destroying a stopped sandbox again: %v, want nil", err)
	}
	ids := func(state string) []string {
		t.Helper()
		l, err := m.List(ctx, state)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range l {
			out = append(out, s.ID)
		}
		return out
	}
	if got := ids(""); !slices.Equal(got, []string{b.ID, a.ID}) {
		t.Errorf("all: %q, want %q newest first", got, []string{b.ID, a.ID})
	}
	if got := ids("running"); !slices.Equal(got, []string{b.ID}) {
		t.Errorf("running: %q", got)
	}
	if got := ids("stopped"); !slices.Equal(got, []string{a.ID}) {
		t.Errorf("stopped: %q", got)
	}
	if got := ids("paused"); len(got) != 0 {
		t.Errorf("paused: %q", got)
	}
	if _, err := m.List(ctx, "sleeping"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("list of an unknown state: %v, want invalid", err)
	}
	if n := m.LiveCount(); n != 1 {
		t.Errorf("live count %d, want 1", n)
	}
	for _, call := range []func(string) error{
		func(id string) error { _, err := m.Get(ctx, id); return err },
		func(id string) error { return m.Destroy(ctx, id) },
		func(id string) error { _, err := m.SetTTL(ctx, id, time.Hour); return err },
		func(id string) error { _, err := m.Pause(ctx, id); return err },
		func(id string) error { _, err := m.Reset(ctx, id); return err },
		func(id string) error { _, err := m.recs.Execs(ctx, id); return err },
		func(id string) error { _, err := m.Files(ctx, id); return err },
	} {
		if err := call("sb-nope"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("on an unknown sandbox: %v, want not found", err)
		}
	}
	for _, call := range []func(string) error{
		func(id string) error { _, err := m.SetTTL(ctx, id, time.Hour); return err },
		func(id string) error { _, err := m.Pause(ctx, id); return err },
		func(id string) error { _, err := m.Resume(ctx, id); return err },
		func(id string) error { _, err := m.Reset(ctx, id); return err },
		func(id string) error { _, err := m.Files(ctx, id); return err },
	} {
		if err := call(a.ID); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "stopped") {
			t.Errorf("on a stopped sandbox: %v, want a conflict that says stopped", err)
		}
	}
}

// A TTL set from now expires the sandbox (stopped, "expired", on the
// record); the maximum lifetime bounds every TTL, counted from creation.
func TestCoreTTL(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManagerWith(t, func(c *Config) { c.MaxLifetime = time.Hour })
	if got := m.MaxLifetime(); got != time.Hour {
		t.Errorf("MaxLifetime %v", got)
	}
	if _, err := m.Create(ctx, sandbox.CreateRequest{TTLSeconds: 2 * 3600}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("create with a TTL over the maximum lifetime: %v, want invalid", err)
	}
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Expires == nil || sb.Expires.Sub(sb.Created) != time.Hour {
		t.Fatalf("no TTL asked: expires %v, want created+1h (%v)", sb.Expires, sb.Created)
	}
	if _, err := m.SetTTL(ctx, sb.ID, -time.Second); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("negative TTL: %v", err)
	}
	if _, err := m.SetTTL(ctx, sb.ID, 2*time.Hour); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "maximum lifetime") {
		t.Errorf("TTL past the maximum lifetime: %v", err)
	}
	if got, err := m.SetTTL(ctx, sb.ID, 0); err != nil || got.Expires == nil || !got.Expires.Equal(*sb.Expires) {
		t.Errorf("TTL 0 under a maximum lifetime: %+v %v, want the lifetime's end", got, err)
	}
	got, err := m.SetTTL(ctx, sb.ID, 30*time.Minute)
	if err != nil || got.Expires == nil || time.Until(*got.Expires) > 30*time.Minute || time.Until(*got.Expires) < 29*time.Minute {
		t.Fatalf("TTL 30m: %+v %v", got, err)
	}
	if _, err := m.SetTTL(ctx, sb.ID, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	stopped := waitStopped(t, m, sb.ID)
	if stopped.StopReason != sandbox.StopExpired || stopped.Stopped == nil {
		t.Errorf("after its TTL: %+v, want stopped as %q", stopped, sandbox.StopExpired)
	}
	if n := m.LiveCount(); n != 0 {
		t.Errorf("live count %d after expiry", n)
	}
	if _, err := m.SetTTL(ctx, sb.ID, time.Minute); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("TTL of an expired sandbox: %v, want a conflict", err)
	}
	kinds := kindsOf(t, log, sb.ID)
	if n := strings.Count(strings.Join(kinds, " "), "sandbox.timeout"); n != 3 {
		t.Errorf("events %q: want 3 sandbox.timeout (one per TTL set)", kinds)
	}
	stops := eventsOf(t, log, sb.ID, "sandbox.stop")
	if len(stops) != 1 || !bytes.Contains(stops[0].Payload, []byte(`"reason":"expired"`)) {
		t.Errorf("sandbox.stop events: %v, want one with reason expired", stops)
	}
}

// A TTL without a maximum lifetime: 0 clears it, and a cleared TTL does
// not fire.
func TestCoreTTLCleared(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{TTLSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Expires == nil {
		t.Fatal("created with a TTL: no expiry")
	}
	// Long enough that the clearing call below comes first even on a
	// loaded machine (30 ms once expired the sandbox before it).
	const short = 250 * time.Millisecond
	if _, err := m.SetTTL(ctx, sb.ID, short); err != nil {
		t.Fatal(err)
	}
	got, err := m.SetTTL(ctx, sb.ID, 0)
	if err != nil || got.Expires != nil {
		t.Fatalf("TTL 0: %+v %v, want no expiry", got, err)
	}
	time.Sleep(short + 150*time.Millisecond)
	if got, err := m.Get(ctx, sb.ID); err != nil || got.State != "running" {
		t.Errorf("after a cleared TTL's time: %+v %v, want running", got, err)
	}
}

// The backend a request names: an unavailable one says why, an unknown
// one is invalid; neither falls back to another boundary.
func TestCoreBackendChoice(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeTierManagerWith(t, func(c *Config) {
		c.Unavailable = map[string]string{"gvisor": "runsc is not installed"}
	})
	if _, err := m.Create(ctx, sandbox.CreateRequest{Backend: "gvisor"}); !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "runsc is not installed") {
		t.Errorf("unavailable backend: %v", err)
	}
	if _, err := m.Create(ctx, sandbox.CreateRequest{Backend: "vmware"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("unknown backend: %v", err)
	}
	if _, err := m.Create(ctx, sandbox.CreateRequest{Template: "../etc"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("bad template name: %v", err)
	}
	if _, err := m.Create(ctx, sandbox.CreateRequest{Template: "nosuch"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("unknown template: %v", err)
	}
	sb, err := m.Create(ctx, sandbox.CreateRequest{Backend: fakert.Name})
	if err != nil || sb.Backend != fakert.Name {
		t.Fatalf("the default backend by name: %+v %v", sb, err)
	}
	if n := m.LiveCount(); n != 1 {
		t.Errorf("live count %d: a refused create left a sandbox", n)
	}
}

// What is stored of an exec's output is capped (the caller still gets
// all of it, streamed), its record lists it with its status, and another
// sandbox's id does not reach it.
func TestCoreExecRecordsAndOutputCap(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManagerWith(t, func(c *Config) { c.StoredOutput = 1000 })
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var startedID string
	var pid int
	execID, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x"}, Cwd: "/tmp"},
		func(id string, p int) { startedID, pid = id, p }, &out, nil)
	if err != nil || st.Code != 0 {
		t.Fatalf("exec: %+v %v", st, err)
	}
	if startedID != execID || pid <= 0 {
		t.Errorf("started(%q, %d), want %q and a pid", startedID, pid, execID)
	}
	if out.Len() != 5000 {
		t.Errorf("streamed %d bytes, want all 5000", out.Len())
	}
	stored, err := output(m, ctx, sb.ID, execID, "stdout")
	if err != nil || len(stored) != 1000 || strings.Trim(string(stored), "x") != "" {
		t.Errorf("stored %d bytes (%v), want the first 1000", len(stored), err)
	}
	if _, err := output(m, ctx, other.ID, execID, "stdout"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("output through another sandbox: %v, want not found", err)
	}
	if _, err := getExec(m, ctx, other.ID, execID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("exec through another sandbox: %v, want not found", err)
	}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "exit 7"}, Env: []string{"A=1"}}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	execs, err := m.recs.Execs(ctx, sb.ID)
	if err != nil || len(execs) != 2 {
		t.Fatalf("execs: %d %v", len(execs), err)
	}
	if e := execs[0]; e.ID != execID || e.Cwd != "/tmp" || e.Status == nil || e.Status.Code != 0 || e.Ended == nil || e.Policy == nil || e.Policy.Action != policy.Allow {
		t.Errorf("first exec record: %+v", e)
	}
	if e := execs[1]; e.Cwd != "/workspace" || e.Status == nil || e.Status.Code != 7 || !slices.Equal(e.EnvNames, []string{"A"}) {
		t.Errorf("second exec record: %+v", e)
	}
	if o, err := m.recs.Execs(ctx, other.ID); err != nil || len(o) != 0 {
		t.Errorf("the other sandbox's execs: %v %v", o, err)
	}
	if n := len(eventsOf(t, log, sb.ID, "exec.start")); n != 2 {
		t.Errorf("%d exec.start events, want 2", n)
	}
	if n := len(eventsOf(t, log, sb.ID, "exec.end")); n != 2 {
		t.Errorf("%d exec.end events, want 2", n)
	}
}

// A command that cannot start is still recorded, ended with its error;
// one over its timeout is ended and says so; a request
// the core refuses runs nothing and records nothing.
func TestCoreExecFailures(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	execID, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}, Cwd: "/workspace/no-such-dir"}, nil, nil, nil)
	if err == nil {
		t.Fatal("a command that does not exist started")
	}
	e, gerr := getExec(m, ctx, sb.ID, execID)
	if gerr != nil || e.Ended == nil || e.Error == "" {
		t.Fatalf("its record: %+v %v, want ended with its error", e, gerr)
	}
	ends := eventsOf(t, log, sb.ID, "exec.end")
	if len(ends) != 1 || !bytes.Contains(ends[0].Payload, []byte(`"started":false`)) {
		t.Errorf("exec.end events %v, want one that says it never started", ends)
	}
	start := time.Now()
	_, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sleep", "30"}, Timeout: 50 * time.Millisecond}, nil, nil, nil)
	if err != nil || st.Limit != "timeout" {
		t.Errorf("over its timeout: %+v %v, want the timeout limit", st, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a 50ms timeout took %v", d)
	}
	// the caller goes away: the command must not outlive the request
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	start = time.Now()
	goneID, st, err := m.Exec(cctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sleep", "30"}}, nil, nil, nil)
	cancel()
	if err != nil || st.Signal != "SIGKILL" || time.Since(start) > 10*time.Second {
		t.Errorf("an exec whose caller went away: %+v %v after %v, want killed at once", st, err, time.Since(start))
	}
	if e := waitEnded(t, m, sb.ID, goneID); e.Status == nil || e.Status.Signal != "SIGKILL" {
		t.Errorf("its record: %+v, want ended by the kill", e)
	}
	before := len(kindsOf(t, log, sb.ID))
	for _, req := range []sandbox.ExecRequest{
		{},
		{Argv: []string{"true"}, Env: []string{"NOEQUALS"}},
		{Argv: []string{"tr\x00ue"}},
		{Argv: []string{"true"}, Timeout: -time.Second},
	} {
		if _, _, err := m.Exec(ctx, sb.ID, req, nil, nil, nil); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("exec %+v: %v, want invalid", req, err)
		}
	}
	if after := len(kindsOf(t, log, sb.ID)); after != before {
		t.Errorf("refused requests wrote %d audit events", after-before)
	}
	if _, _, err := m.Exec(ctx, "sb-nope", sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("exec in an unknown sandbox: %v", err)
	}
}

// A secret the caller gives a command is learned before anything shows
// it: it is in neither the stored output, the exec record's argv, nor
// any audit event.
func TestCoreExecRedaction(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "exec-secret-91c2d7e4"
	var out bytes.Buffer
	execID, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"echo", "value", secret}, Env: []string{"DB_PASSWORD=" + secret}}, nil, &out, nil)
	if err != nil || st.Code != 0 {
		t.Fatalf("exec: %+v %v", st, err)
	}
	if !strings.Contains(out.String(), secret) {
		t.Errorf("the caller's own stream %q: it is the caller's, not redacted", out.String())
	}
	stored, err := output(m, ctx, sb.ID, execID, "stdout")
	if err != nil || bytes.Contains(stored, []byte(secret)) || !bytes.HasPrefix(stored, []byte("value ")) {
		t.Errorf("stored %q %v: want it without the secret", stored, err)
	}
	e, err := getExec(m, ctx, sb.ID, execID)
	if err != nil || slices.Contains(e.Argv, secret) || len(e.Argv) != 3 || !slices.Equal(e.EnvNames, []string{"DB_PASSWORD"}) {
		t.Errorf("exec record %+v %v: want argv without the secret", e, err)
	}
	evs, err := log.Query(ctx, store.AuditFilter{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if bytes.Contains(ev.Payload, []byte(secret)) {
			t.Errorf("audit event %s holds the secret: %s", ev.Kind, ev.Payload)
		}
	}
	j := (&core{m: m}).Redactor().JSON([]byte(`{"note":"it was ` + secret + `"}`))
	if bytes.Contains(j, []byte(secret)) || !bytes.Contains(j, []byte("it was ")) {
		t.Errorf("the redactor's JSON: %s", j)
	}
}

// A running command's stdin: input is written through, recorded a line
// at a time (a tail without a line end when stdin closes); closing it
// ends a command that reads to its end. Refusals for what has ended or
// never had an open stdin.
func TestCoreStdin(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	execID := background(t, m, sb.ID, sandbox.ExecRequest{Argv: []string{"cat"}, OpenStdin: true})
	for _, in := range []string{"hel", "lo\nwor", "ld"} {
		if err := m.Running(sb.ID, execID).Input(ctx, []byte(in)); err != nil {
			t.Fatalf("input %q: %v", in, err)
		}
	}
	if n := len(eventsOf(t, log, sb.ID, "exec.input")); n != 1 {
		t.Errorf("%d exec.input events before the close, want 1 (the one whole line)", n)
	}
	if err := m.Running(sb.ID, execID).CloseStdin(ctx); err != nil {
		t.Fatal(err)
	}
	e := waitEnded(t, m, sb.ID, execID)
	if e.Status == nil || e.Status.Code != 0 {
		t.Errorf("cat after its stdin closed: %+v", e)
	}
	if out, err := output(m, ctx, sb.ID, execID, "stdout"); err != nil || string(out) != "hello\nworld" {
		t.Errorf("output %q %v", out, err)
	}
	if n := len(eventsOf(t, log, sb.ID, "exec.input")); n != 2 {
		t.Errorf("%d exec.input events, want 2 (the line, then the tail at close)", n)
	}
	if err := m.Running(sb.ID, execID).Input(ctx, []byte("late\n")); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("input to an ended exec: %v, want a conflict", err)
	}
	if err := m.Running(sb.ID, execID).CloseStdin(ctx); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("close of an ended exec's stdin: %v, want a conflict", err)
	}
	closed := background(t, m, sb.ID, sandbox.ExecRequest{Argv: []string{"sleep", "30"}})
	if err := m.Running(sb.ID, closed).Input(ctx, []byte("x")); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "open stdin") {
		t.Errorf("input without an open stdin: %v", err)
	}
	if err := m.Running(sb.ID, "e-nope").Input(ctx, []byte("x")); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("input to an unknown exec: %v", err)
	}
	if err := m.Running(sb.ID, closed).Signal(ctx, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, m, sb.ID, closed)
}

// Signal reaches a running command (its end says which signal) and is on
// the record; Resize needs a terminal; both refuse what has ended, is
// unknown, or is out of range.
func TestCoreSignalResize(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	plain := background(t, m, sb.ID, sandbox.ExecRequest{Argv: []string{"sleep", "30"}})
	tty := background(t, m, sb.ID, sandbox.ExecRequest{Argv: []string{"sleep", "30"}, TTY: true, Rows: 24, Cols: 80})
	for _, sig := range []syscall.Signal{0, 65, -1} {
		if err := m.Running(sb.ID, plain).Signal(ctx, sig); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("signal %d: %v, want invalid", sig, err)
		}
	}
	if err := m.Running(other.ID, plain).Signal(ctx, syscall.SIGTERM); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("signal through another sandbox: %v, want not found", err)
	}
	if err := m.Running(sb.ID, tty).Resize(ctx, 0, 80); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("resize to 0 rows: %v", err)
	}
	if err := m.Running(sb.ID, tty).Resize(ctx, 40, 120); err != nil {
		t.Errorf("resize of a terminal: %v", err)
	}
	if err := m.Running(sb.ID, plain).Resize(ctx, 40, 120); err == nil || !strings.Contains(err.Error(), "no terminal") {
		t.Errorf("resize without a terminal: %v", err)
	}
	if err := m.Running(other.ID, tty).Resize(ctx, 40, 120); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("resize through another sandbox: %v", err)
	}
	for _, id := range []string{plain, tty} {
		if err := m.Running(sb.ID, id).Signal(ctx, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if e := waitEnded(t, m, sb.ID, id); e.Status == nil || e.Status.Signal != "SIGTERM" && e.Status.Code != 128+int(syscall.SIGTERM) {
			t.Errorf("exec %s after SIGTERM: %+v", id, e.Status)
		}
	}
	if err := m.Running(sb.ID, plain).Signal(ctx, syscall.SIGTERM); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("signal to an ended exec: %v, want a conflict", err)
	}
	if err := m.Running(sb.ID, tty).Resize(ctx, 40, 120); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("resize of an ended exec: %v, want a conflict", err)
	}
	sigs := eventsOf(t, log, sb.ID, "exec.signal")
	if len(sigs) != 2 || !bytes.Contains(sigs[0].Payload, []byte("terminated")) && !bytes.Contains(sigs[0].Payload, []byte("SIGTERM")) {
		t.Errorf("exec.signal events: %v, want 2 naming the signal", sigs)
	}
}

// Reset starts a sandbox over: what it wrote is gone, its id, record and
// exec records stay, it runs again; it is on the record. A paused
// sandbox may be reset (it comes back running).
func TestCoreReset(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "echo kept > mark"}}, nil, nil, nil); err != nil || st.Code != 0 {
		t.Fatalf("write a file: %+v %v", st, err)
	}
	if _, err := m.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	got, err := m.Reset(ctx, sb.ID)
	if err != nil || got.ID != sb.ID || got.State != "running" || !got.Created.Equal(sb.Created) {
		t.Fatalf("reset: %+v %v", got, err)
	}
	_, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"test", "-e", "mark"}}, nil, nil, nil)
	if err != nil || st.Code != 1 {
		t.Errorf("the file after reset: %+v %v, want gone (exit 1)", st, err)
	}
	if execs, err := m.recs.Execs(ctx, sb.ID); err != nil || len(execs) != 2 {
		t.Errorf("exec records after reset: %d %v, want both kept", len(execs), err)
	}
	kinds := kindsOf(t, log, sb.ID)
	if !slices.Contains(kinds, "sandbox.reset") || !slices.Contains(kinds, "sandbox.pause") {
		t.Errorf("events %q lack sandbox.pause or sandbox.reset", kinds)
	}
	if _, err := m.Resume(ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "already running") {
		t.Errorf("resume after reset: %v, want already running", err)
	}
	if n := m.LiveCount(); n != 1 {
		t.Errorf("live count %d after reset", n)
	}
}

// Pause and resume are on the record and in the stored state; a paused
// sandbox's files and commands are refused, not run late.
func TestCorePauseRecord(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Resume(ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("resume of a running sandbox: %v", err)
	}
	if _, err := m.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Get(ctx, sb.ID); err != nil || got.State != "paused" {
		t.Errorf("stored state: %+v %v", got, err)
	}
	if l, err := m.List(ctx, "paused"); err != nil || len(l) != 1 {
		t.Errorf("list paused: %v %v", l, err)
	}
	if _, err := m.Files(ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "paused") {
		t.Errorf("files of a paused sandbox: %v", err)
	}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("exec in a paused sandbox: %v, want a conflict", err)
	}
	if _, err := m.Resume(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	kinds := kindsOf(t, log, sb.ID)
	if !slices.Equal(kinds, []string{"sandbox.create", "sandbox.pause", "sandbox.resume"}) {
		t.Errorf("events %q", kinds)
	}
	if err := m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
}

// The store failing: nothing new is created or run (fail closed), and
// what the backend started for a create that could not be recorded is
// gone.
func TestCoreStoreFailureFailsClosed(t *testing.T) {
	ctx := context.Background()
	bdir := t.TempDir()
	var st *store.Store
	m, _ := fakeTierManagerWith(t, func(c *Config) {
		c.Backend = fakert.New(bdir)
		st = c.Store
	})
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := m.Create(ctx, sandbox.CreateRequest{}); err == nil {
		t.Error("create with a closed store succeeded")
	}
	if n := m.LiveCount(); n != 1 {
		t.Errorf("live count %d, want only the first sandbox", n)
	}
	dirs, _ := filepath.Glob(filepath.Join(bdir, "airlock-fake-*"))
	if len(dirs) != 1 {
		t.Errorf("backend sandboxes %q: the unrecorded create left its own", dirs)
	}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"touch", "ran"}}, nil, nil, nil); err == nil {
		t.Error("exec with a closed store succeeded")
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "workspace", "ran")); err == nil {
			t.Error("the command ran although it could not be recorded")
		}
	}
	if err := m.Healthy(); err == nil {
		t.Error("Healthy with an audit log that cannot be written: nil")
	}
}

// The daemon's own events (API requests, its wiring's) are on the record.
func TestCoreRecordAPI(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManager(t)
	if err := m.Healthy(); err != nil {
		t.Fatal(err)
	}
	m.RecordAPI(ctx, "POST", "/v1/sandboxes", 201)
	if err := m.Record(ctx, audit.Entry{Kind: "daemon.test", Payload: map[string]any{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	evs, err := log.Query(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var api, own bool
	for _, e := range evs {
		api = api || e.Kind == "api.request" && bytes.Contains(e.Payload, []byte(`"/v1/sandboxes"`)) && bytes.Contains(e.Payload, []byte("201"))
		own = own || e.Kind == "daemon.test"
	}
	if !api || !own {
		t.Errorf("api.request recorded %v, daemon.test recorded %v", api, own)
	}
	tpls, err := m.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range tpls {
		names = append(names, tp.Name)
	}
	if !slices.Contains(names, "host") {
		t.Errorf("templates %q lack the built-in host", names)
	}
}
