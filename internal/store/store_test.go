package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// t0 is a time with nanoseconds in a non-UTC zone: what comes back must be
// the same instant, in UTC.
var t0 = time.Date(2026, 11, 29, 21, 0, 0, 123456789, time.FixedZone("CET", 3600))

func openTest(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "airlock.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func ptr[T any](v T) *T { return &v }

// utc returns the sandbox as the store should give it back: times in UTC.
func utcSandbox(sb Sandbox) *Sandbox {
	sb.Created = sb.Created.UTC()
	if sb.Expires != nil {
		sb.Expires = ptr(sb.Expires.UTC())
	}
	if sb.Stopped != nil {
		sb.Stopped = ptr(sb.Stopped.UTC())
	}
	return &sb
}

func utcExec(e Exec) *Exec {
	e.Started = e.Started.UTC()
	if e.Ended != nil {
		e.Ended = ptr(e.Ended.UTC())
	}
	return &e
}

func fullSandbox(id string) *Sandbox {
	return &Sandbox{
		ID:              id,
		State:           StateStopped,
		Backend:         "native",
		Template:        "host",
		TemplateVersion: "4ed206e18971",
		Labels:          map[string]string{"k": "v", "<html>&": "ünïcode ✓", "": "empty key"},
		// Odd spacing and key order: raw JSON comes back byte for byte.
		Spec:       json.RawMessage(`{"limits": {"memory_bytes":536870912,  "pids":256}, "env_names":["A","B"]}`),
		Isolation:  json.RawMessage(`{"boundary":"userns","landlock_abi":7}`),
		Created:    t0,
		Expires:    ptr(t0.Add(time.Hour + time.Nanosecond)),
		Stopped:    ptr(t0.Add(time.Minute + 7)),
		StopReason: "destroyed",
	}
}

func minimalSandbox(id string, created time.Time) *Sandbox {
	return &Sandbox{ID: id, State: StateRunning, Created: created}
}

func wantKind(t *testing.T, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error = %v, want %v", err, kind)
	}
}

func TestSandboxRoundTrip(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	cases := []*Sandbox{
		fullSandbox("full"),
		minimalSandbox("minimal", t0), // nil labels, nil JSON, nil times
		{ID: "empty-labels", State: StateRunning, Created: t0, Labels: map[string]string{},
			Spec: json.RawMessage(`null`), Isolation: json.RawMessage(`[]`)},
		{ID: "now", State: StateRunning, Created: time.Now()}, // monotonic reading, local zone
	}
	for _, sb := range cases {
		if err := s.PutSandbox(ctx, sb); err != nil {
			t.Fatalf("PutSandbox(%s): %v", sb.ID, err)
		}
	}
	for _, sb := range cases {
		got, err := s.GetSandbox(ctx, sb.ID)
		if err != nil {
			t.Fatalf("GetSandbox(%s): %v", sb.ID, err)
		}
		want := utcSandbox(*sb)
		want.Created = want.Created.Round(0) // drop the monotonic reading
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GetSandbox(%s):\n got %#v\nwant %#v", sb.ID, got, want)
		}
		if got.Created.Location() != time.UTC || !got.Created.Equal(sb.Created) {
			t.Errorf("%s: created %v, want %v in UTC", sb.ID, got.Created, sb.Created)
		}
	}
	// nil stays nil, empty stays empty.
	min, _ := s.GetSandbox(ctx, "minimal")
	if min.Labels != nil || min.Spec != nil || min.Isolation != nil || min.Expires != nil || min.Stopped != nil {
		t.Errorf("minimal sandbox came back with non-nil fields: %#v", min)
	}
	el, _ := s.GetSandbox(ctx, "empty-labels")
	if el.Labels == nil || len(el.Labels) != 0 {
		t.Errorf("empty labels came back as %#v", el.Labels)
	}
}

func TestSandboxConflictNotFoundUpdate(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	sb := fullSandbox("a")
	if err := s.PutSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	dup := minimalSandbox("a", t0.Add(time.Hour))
	wantKind(t, s.PutSandbox(ctx, dup), errdefs.ErrConflict)
	got, err := s.GetSandbox(ctx, "a")
	if err != nil || got.StopReason != "destroyed" {
		t.Fatalf("duplicate put changed the record: %#v, %v", got, err)
	}

	_, err = s.GetSandbox(ctx, "nope")
	wantKind(t, err, errdefs.ErrNotFound)
	wantKind(t, s.UpdateSandbox(ctx, minimalSandbox("nope", t0)), errdefs.ErrNotFound)
	if _, err := s.GetSandbox(ctx, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("update of an unknown id created it: %v", err)
	}

	// Update replaces every field: pointers go from set to nil and back.
	up := &Sandbox{
		ID: "a", State: StateRunning, Backend: "b2", Template: "t2", TemplateVersion: "v2",
		Labels: map[string]string{"new": "1"}, Spec: json.RawMessage(`{"x":1}`),
		Created: t0.Add(time.Second), Expires: nil, Stopped: nil, StopReason: "",
		Project: DefaultProject, // not an update's to change (projects_test.go)
	}
	if err := s.UpdateSandbox(ctx, up); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetSandbox(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := utcSandbox(*up); !reflect.DeepEqual(got, want) {
		t.Fatalf("after update:\n got %#v\nwant %#v", got, want)
	}
	up.State, up.Stopped, up.StopReason = StateStopped, ptr(t0.Add(2*time.Second)), "expired"
	if err := s.UpdateSandbox(ctx, up); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetSandbox(ctx, "a")
	if want := utcSandbox(*up); !reflect.DeepEqual(got, want) {
		t.Fatalf("after second update:\n got %#v\nwant %#v", got, want)
	}
}

func TestSandboxValidation(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	bad := map[string]*Sandbox{
		"nil":           nil,
		"empty id":      {State: StateRunning, Created: t0},
		"empty state":   {ID: "x", Created: t0},
		"zero created":  {ID: "x", State: StateRunning},
		"created range": {ID: "x", State: StateRunning, Created: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"zero expires":  {ID: "x", State: StateRunning, Created: t0, Expires: &time.Time{}},
		"bad spec":      {ID: "x", State: StateRunning, Created: t0, Spec: json.RawMessage(`{"a":`)},
		"bad isolation": {ID: "x", State: StateRunning, Created: t0, Isolation: json.RawMessage(`nope`)},
		"label utf8":    {ID: "x", State: StateRunning, Created: t0, Labels: map[string]string{"k": "\xff"}},
	}
	for name, sb := range bad {
		wantKind(t, s.PutSandbox(ctx, sb), errdefs.ErrInvalid)
		wantKind(t, s.UpdateSandbox(ctx, sb), errdefs.ErrInvalid)
		_ = name
	}
	_, err := s.GetSandbox(ctx, "")
	wantKind(t, err, errdefs.ErrInvalid)
	if l, _ := s.ListSandboxes(ctx, ""); len(l) != 0 {
		t.Fatalf("invalid sandboxes were stored: %d", len(l))
	}
}

func ids[T any](xs []T, id func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

func sbID(sb *Sandbox) string { return sb.ID }
func exID(e *Exec) string     { return e.ID }

func TestListSandboxesOrder(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	l, err := s.ListSandboxes(ctx, "")
	if err != nil || l == nil || len(l) != 0 {
		t.Fatalf("empty list = %#v, %v; want empty non-nil", l, err)
	}
	// Inserted out of order; "b" and "c" tie on created (to the nanosecond)
	// and differ from "d" by one nanosecond.
	put := []*Sandbox{
		minimalSandbox("c", t0.Add(time.Hour)),
		minimalSandbox("a", t0),
		minimalSandbox("d", t0.Add(time.Hour+1)),
		minimalSandbox("b", t0.Add(time.Hour)),
		minimalSandbox("e", t0.Add(-time.Hour)),
	}
	put[1].State, put[3].State = StateStopped, StateStopped
	for _, sb := range put {
		if err := s.PutSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	for state, want := range map[string][]string{
		"":           {"d", "b", "c", "a", "e"},
		StateRunning: {"d", "c", "e"},
		StateStopped: {"b", "a"},
		"lost":       {},
	} {
		l, err := s.ListSandboxes(ctx, state)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(l, sbID); !slices.Equal(got, want) {
			t.Errorf("ListSandboxes(%q) = %v, want %v", state, got, want)
		}
	}
}

func TestMarkRunningStopped(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for i, id := range []string{"r1", "r2", "r3"} {
		sb := minimalSandbox(id, t0.Add(time.Duration(i)*time.Second))
		if id == "r2" {
			sb.State = "paused" // a paused sandbox dies with its daemon too
		}
		if err := s.PutSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	done := fullSandbox("done")
	if err := s.PutSandbox(ctx, done); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Hour + 42)
	got, err := s.MarkRunningStopped(ctx, "lost", at)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"r3", "r2", "r1"}; !slices.Equal(got, want) {
		t.Fatalf("MarkRunningStopped = %v, want %v", got, want)
	}
	for _, id := range got {
		sb, err := s.GetSandbox(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if sb.State != StateStopped || sb.StopReason != "lost" || sb.Stopped == nil || !sb.Stopped.Equal(at) {
			t.Errorf("%s after MarkRunningStopped: %#v", id, sb)
		}
	}
	d, _ := s.GetSandbox(ctx, "done")
	if !reflect.DeepEqual(d, utcSandbox(*done)) {
		t.Errorf("an already stopped sandbox was changed: %#v", d)
	}
	again, err := s.MarkRunningStopped(ctx, "lost", at)
	if err != nil || again == nil || len(again) != 0 {
		t.Fatalf("second MarkRunningStopped = %#v, %v; want empty", again, err)
	}
	_, err = s.MarkRunningStopped(ctx, "", at)
	wantKind(t, err, errdefs.ErrInvalid)
	_, err = s.MarkRunningStopped(ctx, "lost", time.Time{})
	wantKind(t, err, errdefs.ErrInvalid)
}

func TestExecRoundTripAndFinish(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if err := s.PutSandbox(ctx, minimalSandbox("sb", t0)); err != nil {
		t.Fatal(err)
	}
	running := &Exec{
		ID: "e1", SandboxID: "sb", Argv: []string{"/bin/sh", "-c", "echo \"hi\" > /tmp/x; exit 3", ""},
		Cwd: "/workspace", EnvNames: []string{"PATH", "HOME"}, Started: t0,
	}
	failed := &Exec{ // could not start: recorded already ended
		ID: "e2", SandboxID: "sb", Argv: []string{"nope"}, Started: t0.Add(1),
		Ended: ptr(t0.Add(2)), Status: json.RawMessage(`{"code":127}`), Error: "executable not found",
	}
	bare := &Exec{ID: "e3", SandboxID: "sb", Argv: []string{}, EnvNames: nil, Started: t0.Add(3)}
	for _, e := range []*Exec{running, failed, bare} {
		if err := s.PutExec(ctx, e); err != nil {
			t.Fatalf("PutExec(%s): %v", e.ID, err)
		}
		got, err := s.GetExec(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := utcExec(*e); !reflect.DeepEqual(got, want) {
			t.Errorf("GetExec(%s):\n got %#v\nwant %#v", e.ID, got, want)
		}
	}
	if got, _ := s.GetExec(ctx, "e1"); got.Ended != nil || got.Status != nil {
		t.Errorf("running exec has an end: %#v", got)
	}
	if got, _ := s.GetExec(ctx, "e3"); got.Argv == nil || got.EnvNames != nil {
		t.Errorf("argv [] / env_names nil did not round-trip: %#v", got)
	}

	status := json.RawMessage(`{"code":3, "signal":"", "limit":"", "stdout_bytes":12}`)
	ended := t0.Add(5*time.Second + 9)
	if err := s.FinishExec(ctx, "e1", ended, status, ""); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetExec(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	want := utcExec(*running)
	want.Ended, want.Status = ptr(ended.UTC()), status
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after FinishExec:\n got %#v\nwant %#v", got, want)
	}
	wantKind(t, s.FinishExec(ctx, "e1", ended, status, ""), errdefs.ErrConflict)
	wantKind(t, s.FinishExec(ctx, "e2", ended, nil, "again"), errdefs.ErrConflict)
	wantKind(t, s.FinishExec(ctx, "zz", ended, status, ""), errdefs.ErrNotFound)
	wantKind(t, s.FinishExec(ctx, "", ended, status, ""), errdefs.ErrInvalid)
	wantKind(t, s.FinishExec(ctx, "e3", time.Time{}, status, ""), errdefs.ErrInvalid)
	wantKind(t, s.FinishExec(ctx, "e3", ended, json.RawMessage(`{`), ""), errdefs.ErrInvalid)
	// FinishExec with no status (killed before it reported, say).
	if err := s.FinishExec(ctx, "e3", ended, nil, "agent lost"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetExec(ctx, "e3"); got.Status != nil || got.Error != "agent lost" || !got.Ended.Equal(ended) {
		t.Errorf("e3 after FinishExec: %#v", got)
	}
}

func TestExecErrors(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if err := s.PutSandbox(ctx, minimalSandbox("sb", t0)); err != nil {
		t.Fatal(err)
	}
	e := &Exec{ID: "e", SandboxID: "sb", Argv: []string{"true"}, Started: t0}
	if err := s.PutExec(ctx, e); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.PutExec(ctx, e), errdefs.ErrConflict)
	wantKind(t, s.PutExec(ctx, &Exec{ID: "e9", SandboxID: "ghost", Started: t0}), errdefs.ErrNotFound)
	if _, err := s.GetExec(ctx, "e9"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("exec for an unknown sandbox was stored: %v", err)
	}
	_, err := s.GetExec(ctx, "ghost")
	wantKind(t, err, errdefs.ErrNotFound)

	bad := map[string]*Exec{
		"nil":          nil,
		"empty id":     {SandboxID: "sb", Started: t0},
		"empty sb":     {ID: "x", Started: t0},
		"zero started": {ID: "x", SandboxID: "sb"},
		"env value":    {ID: "x", SandboxID: "sb", Started: t0, EnvNames: []string{"SECRET=hunter2"}},
		"env empty":    {ID: "x", SandboxID: "sb", Started: t0, EnvNames: []string{""}},
		"argv utf8":    {ID: "x", SandboxID: "sb", Started: t0, Argv: []string{"\xfe"}},
		"bad status":   {ID: "x", SandboxID: "sb", Started: t0, Status: json.RawMessage(`{]`)},
	}
	for name, e := range bad {
		if err := s.PutExec(ctx, e); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: PutExec = %v, want invalid", name, err)
		}
	}
	_, err = s.GetExec(ctx, "")
	wantKind(t, err, errdefs.ErrInvalid)
	_, err = s.ListExecs(ctx, "")
	wantKind(t, err, errdefs.ErrInvalid)
}

func TestListExecsOrder(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for _, id := range []string{"sb", "other", "empty"} {
		if err := s.PutSandbox(ctx, minimalSandbox(id, t0)); err != nil {
			t.Fatal(err)
		}
	}
	// Started ties are broken by insertion order, not by id.
	put := []struct {
		id, sb  string
		started time.Time
	}{
		{"z", "sb", t0.Add(time.Second)},
		{"late", "sb", t0.Add(time.Minute)},
		{"a", "sb", t0.Add(time.Second)},
		{"first", "sb", t0},
		{"m", "sb", t0.Add(time.Second)},
		{"o1", "other", t0},
	}
	for _, p := range put {
		if err := s.PutExec(ctx, &Exec{ID: p.id, SandboxID: p.sb, Argv: []string{"x"}, Started: p.started}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.ListExecs(ctx, "sb")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(l, exID), []string{"first", "z", "a", "m", "late"}; !slices.Equal(got, want) {
		t.Fatalf("ListExecs = %v, want %v", got, want)
	}
	l, err = s.ListExecs(ctx, "empty")
	if err != nil || l == nil || len(l) != 0 {
		t.Fatalf("ListExecs(empty) = %#v, %v; want empty non-nil", l, err)
	}
	_, err = s.ListExecs(ctx, "ghost")
	wantKind(t, err, errdefs.ErrNotFound)
}

func TestOutput(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if err := s.PutSandbox(ctx, minimalSandbox("sb", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutExec(ctx, &Exec{ID: "e", SandboxID: "sb", Started: t0}); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{Stdout, Stderr} {
		got, err := s.GetOutput(ctx, "e", stream)
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("GetOutput before any put = %#v, %v; want empty, nil", got, err)
		}
	}
	bin := []byte("a\x00b\xff\xfe\xc3(\x00\x00end\n")
	if err := s.PutOutput(ctx, "e", Stdout, bin); err != nil {
		t.Fatal(err)
	}
	if err := s.PutOutput(ctx, "e", Stderr, []byte("err")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetOutput(ctx, "e", Stdout); err != nil || !bytes.Equal(got, bin) {
		t.Fatalf("stdout = %q, %v; want %q", got, err, bin)
	}
	if got, err := s.GetOutput(ctx, "e", Stderr); err != nil || string(got) != "err" {
		t.Fatalf("stderr = %q, %v", got, err)
	}
	// Put replaces, per stream.
	if err := s.PutOutput(ctx, "e", Stderr, []byte("second")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetOutput(ctx, "e", Stderr); string(got) != "second" {
		t.Fatalf("stderr after replace = %q", got)
	}
	if got, _ := s.GetOutput(ctx, "e", Stdout); !bytes.Equal(got, bin) {
		t.Fatalf("stdout changed by a stderr put: %q", got)
	}
	// Empty and nil both store an empty output.
	for _, data := range [][]byte{nil, {}} {
		if err := s.PutOutput(ctx, "e", Stderr, data); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetOutput(ctx, "e", Stderr); err != nil || got == nil || len(got) != 0 {
			t.Fatalf("GetOutput after put %#v = %#v, %v", data, got, err)
		}
	}
	// 8 MiB of random bytes.
	big := make([]byte, 8<<20)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(big)
	if err := s.PutOutput(ctx, "e", Stdout, big); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetOutput(ctx, "e", Stdout); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("8 MiB output: %d bytes back, equal=%v, err %v", len(got), bytes.Equal(got, big), err)
	}

	wantKind(t, s.PutOutput(ctx, "ghost", Stdout, bin), errdefs.ErrNotFound)
	_, err := s.GetOutput(ctx, "ghost", Stdout)
	wantKind(t, err, errdefs.ErrNotFound)
	for _, stream := range []string{"", "stdin", "STDOUT", "stdout "} {
		wantKind(t, s.PutOutput(ctx, "e", stream, bin), errdefs.ErrInvalid)
		_, err := s.GetOutput(ctx, "e", stream)
		wantKind(t, err, errdefs.ErrInvalid)
	}
	wantKind(t, s.PutOutput(ctx, "", Stdout, bin), errdefs.ErrInvalid)
	_, err = s.GetOutput(ctx, "", Stdout)
	wantKind(t, err, errdefs.ErrInvalid)
}

func TestReopenPersists(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	sb := fullSandbox("sb")
	e := &Exec{ID: "e", SandboxID: "sb", Argv: []string{"ls", "-l"}, Cwd: "/w", EnvNames: []string{"A"},
		Started: t0, Ended: ptr(t0.Add(time.Second)), Status: json.RawMessage(`{"code":0}`)}
	out := []byte("out\x00put")
	if err := s.PutSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := s.PutExec(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := s.PutOutput(ctx, "e", Stdout, out); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSandbox(ctx, "sb"); err == nil {
		t.Fatal("a closed store still answers")
	}

	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	gotSB, err := s2.GetSandbox(ctx, "sb")
	if err != nil || !reflect.DeepEqual(gotSB, utcSandbox(*sb)) {
		t.Fatalf("sandbox after reopen: %#v, %v", gotSB, err)
	}
	gotE, err := s2.GetExec(ctx, "e")
	if err != nil || !reflect.DeepEqual(gotE, utcExec(*e)) {
		t.Fatalf("exec after reopen: %#v, %v", gotE, err)
	}
	gotOut, err := s2.GetOutput(ctx, "e", Stdout)
	if err != nil || !bytes.Equal(gotOut, out) {
		t.Fatalf("output after reopen: %q, %v", gotOut, err)
	}
	if v := schemaVersion(t, s2); v != len(migrations) {
		t.Fatalf("schema version %d, want %d", v, len(migrations))
	}
}

func TestFileModesAndPragmas(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	if err := s.PutSandbox(ctx, minimalSandbox("sb", t0)); err != nil { // makes the -wal file
		t.Fatal(err)
	}
	check := func(p string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("mode of %s = %o, want %o", p, got, want)
		}
	}
	check(filepath.Dir(path), 0o700)
	check(path, 0o600)
	check(path+"-wal", 0o600)
	check(path+"-shm", 0o600)

	for _, db := range []*sql.DB{s.w, s.r} {
		var mode string
		var fk, busy int
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || fk != 1 || busy != 5000 {
			t.Errorf("journal_mode=%q foreign_keys=%d busy_timeout=%d; want wal 1 5000", mode, fk, busy)
		}
	}
	// The read pool is read-only.
	if _, err := s.r.ExecContext(ctx, "DELETE FROM sandboxes"); err == nil {
		t.Error("the read pool accepted a write")
	}
	// WAL is a property of the file: a fresh connection sees it too.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var mode string
	if err := raw.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode on a fresh connection = %q, %v", mode, err)
	}
}

func TestOpenTightensMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loose.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o, want 600", fi.Mode().Perm())
	}
}

func TestOpenNotSQLite(t *testing.T) {
	dir := t.TempDir()
	random := make([]byte, 8192)
	rand.NewChaCha8([32]byte{2}).Read(random)
	files := map[string][]byte{
		"text":   []byte("this is a config file, not a database\n"),
		"short":  []byte("SQLite"),
		"random": random,
		// Right header, garbage after it.
		"damaged": append([]byte(sqliteHeader), bytes.Repeat([]byte{0xff}, 4096)...),
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path)
		if err == nil {
			s.Close()
			t.Errorf("%s: Open succeeded", name)
			continue
		}
		if !errors.Is(err, ErrNotDatabase) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q should wrap ErrNotDatabase and name the file", name, err)
		}
		t.Logf("%s: %v", name, err)
		after, _ := os.ReadFile(path)
		if !bytes.Equal(after, content) {
			t.Errorf("%s: Open modified the file", name)
		}
		if _, err := os.Stat(path + "-wal"); err == nil {
			t.Errorf("%s: Open left a -wal file", name)
		}
	}
	if _, err := Open(dir); err == nil {
		t.Error("Open of a directory succeeded")
	}
	_, err := Open("")
	wantKind(t, err, errdefs.ErrInvalid)
}

func schemaVersion(t *testing.T, s *Store) int {
	t.Helper()
	var v int
	if err := s.r.QueryRow(`SELECT version FROM schema_version WHERE id = 1`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// rawDB opens path with plain driver defaults (rollback journal), as an
// older airlock or a person with the sqlite3 shell would.
func rawDB(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestMigrateFromVersion0(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v0.db")
	rawDB(t, path, schemaVersionDDL, `INSERT INTO schema_version (id, version) VALUES (1, 0)`)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := schemaVersion(t, s); v != len(migrations) {
		t.Fatalf("version %d after migration, want %d", v, len(migrations))
	}
	ctx := context.Background()
	if err := s.PutSandbox(ctx, fullSandbox("sb")); err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := s.r.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q, %v", mode, err)
	}
}

// A database written at version 1, reopened by a binary that knows a
// version 2, is migrated in place and keeps its data; one written by a
// binary newer than this one is refused, untouched.
func TestMigrateForward(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	// Version 1, written by hand with the version-1 DDL.
	rawDB(t, path, schemaVersionDDL, migrations[0],
		`INSERT INTO schema_version (id, version) VALUES (1, 1)`,
		`INSERT INTO sandboxes (id, state, backend, template, template_version, created, stop_reason)
		 VALUES ('old', 'running', 'native', 'host', 'v', 1, '')`)

	v2 := append(slices.Clip(migrations),
		`ALTER TABLE sandboxes ADD COLUMN owner TEXT NOT NULL DEFAULT 'nobody';
		 CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;`)
	s, err := open(path, v2)
	if err != nil {
		t.Fatal(err)
	}
	if v := schemaVersion(t, s); v != len(v2) {
		t.Fatalf("version %d, want %d", v, len(v2))
	}
	sb, err := s.GetSandbox(ctx, "old")
	if err != nil || sb.Created != time.Unix(0, 1).UTC() || sb.State != StateRunning {
		t.Fatalf("old row after migration: %#v, %v", sb, err)
	}
	var owner string
	if err := s.r.QueryRow(`SELECT owner FROM sandboxes WHERE id = 'old'`).Scan(&owner); err != nil || owner != "nobody" {
		t.Fatalf("migration 2 not applied: owner %q, %v", owner, err)
	}
	// The new code's writes still work with the extra column.
	if err := s.PutSandbox(ctx, fullSandbox("new")); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Reopening at version 2 applies nothing again.
	s, err = open(path, v2)
	if err != nil {
		t.Fatalf("reopen at version 2: %v", err)
	}
	s.Close()

	// This binary (version 1) must refuse a version-2 database.
	before, _ := os.ReadFile(path)
	_, err = Open(path)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer schema = %v, want a 'newer' error", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("refusing a newer schema modified the file")
	}
}

// A migration that fails leaves the database at the version before it.
func TestMigrateFailureRollsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fail.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutSandbox(context.Background(), minimalSandbox("keep", t0)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	broken := append(slices.Clip(migrations),
		`CREATE TABLE half (x INTEGER); INSERT INTO no_such_table VALUES (1);`)
	if _, err := open(path, broken); err == nil {
		t.Fatal("a failing migration did not fail Open")
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := schemaVersion(t, s); v != len(migrations) {
		t.Fatalf("version %d after a failed migration, want %d", v, len(migrations))
	}
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'half'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the failed migration's table exists: %d, %v", n, err)
	}
	if _, err := s.GetSandbox(context.Background(), "keep"); err != nil {
		t.Fatal(err)
	}
}

// 50 goroutines each write 20 execs (record, output, finish) while others
// read; no call may fail (no SQLITE_BUSY, no lost write).
func TestConcurrentWriters(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	const writers, perWriter = 50, 20
	for w := range writers {
		if err := s.PutSandbox(ctx, minimalSandbox(fmt.Sprintf("sb%02d", w), t0)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		stop   = make(chan struct{})
		readWG sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for r := range 4 { // readers, running until the writers are done
		readWG.Add(1)
		go func() {
			defer readWG.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.ListExecs(ctx, fmt.Sprintf("sb%02d", (r*7+i)%writers)); err != nil {
					fail(err)
				}
				if _, err := s.ListSandboxes(ctx, StateRunning); err != nil {
					fail(err)
				}
			}
		}()
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb := fmt.Sprintf("sb%02d", w)
			for i := range perWriter {
				id := fmt.Sprintf("e-%02d-%02d", w, i)
				e := &Exec{ID: id, SandboxID: sb, Argv: []string{"echo", id}, Started: t0.Add(time.Duration(i))}
				if err := s.PutExec(ctx, e); err != nil {
					fail(err)
					continue
				}
				if err := s.PutOutput(ctx, id, Stdout, []byte(id)); err != nil {
					fail(err)
				}
				if err := s.FinishExec(ctx, id, t0.Add(time.Second), json.RawMessage(`{"code":0}`), ""); err != nil {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readWG.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	total := 0
	for w := range writers {
		sb := fmt.Sprintf("sb%02d", w)
		l, err := s.ListExecs(ctx, sb)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range l {
			if want := fmt.Sprintf("e-%02d-%02d", w, i); e.ID != want || e.Ended == nil {
				t.Fatalf("%s exec %d = %#v, want %s finished", sb, i, e, want)
			}
			if out, err := s.GetOutput(ctx, e.ID, Stdout); err != nil || string(out) != e.ID {
				t.Fatalf("output of %s = %q, %v", e.ID, out, err)
			}
		}
		total += len(l)
	}
	if total != writers*perWriter {
		t.Fatalf("%d execs stored, want %d", total, writers*perWriter)
	}
}

func TestContextCanceled(t *testing.T) {
	s, _ := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.PutSandbox(ctx, minimalSandbox("x", t0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutSandbox with a canceled context = %v", err)
	}
	if _, err := s.GetSandbox(context.Background(), "x"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("a canceled put was stored: %v", err)
	}
}
