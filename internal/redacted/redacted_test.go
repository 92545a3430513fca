package redacted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
)

const (
	secret = "Zq7vK2pXw9LmN4tR8sYb3HcJ6dFg" // known from the start
	later  = "Hh5tWq8Lr2Zx9Vb4Nm7Kc3Pd6Sf1" // learned after the records were written
	marker = "[REDACTED:known-secret]"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// records is a Records on a store in a temp dir, its redactor knowing
// secret, with a sandbox sb-1 and another sb-2.
func records(t *testing.T) (Records, *redact.Redactor) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, id := range []string{"sb-1", "sb-2"} {
		if err := st.PutSandbox(context.Background(), &store.Sandbox{ID: id, State: "running", Backend: "fake", Template: "host", Created: t0}); err != nil {
			t.Fatal(err)
		}
	}
	red := redact.New(secret)
	return Records{Store: st, Redactor: red}, red
}

// leaks reports the secrets b still holds.
func leaks(b []byte) []string {
	var out []string
	for _, s := range []string{secret, later} {
		if strings.Contains(string(b), s) {
			out = append(out, s)
		}
	}
	return out
}

// An exec record is stored redacted in every field that can carry
// agent-chosen text (argv, cwd, variable names, error, decision,
// status), and a record with nothing secret is stored exactly as given
// (nil stays nil, empty stays empty).
func TestPutExecStoresEveryFieldRedacted(t *testing.T) {
	t.Parallel()
	r, _ := records(t)
	ctx := context.Background()
	plain := &store.Exec{ID: "e-1", SandboxID: "sb-1", Argv: []string{}, Cwd: "/workspace", Started: t0}
	ended := t0.Add(time.Second)
	leaky := &store.Exec{ID: "e-2", SandboxID: "sb-1", Argv: []string{"curl", "-H", "Authorization: token " + secret}, Cwd: "/w/" + secret,
		EnvNames: []string{"V_" + secret}, Started: t0, Ended: &ended, Error: "chdir /w/" + secret + ": no such file",
		Status:   json.RawMessage(`{"code":1,"files":{"written":["/workspace/` + secret + `"]}}`),
		Decision: json.RawMessage(`{"reason":"writes ` + secret + `"}`)}
	for _, e := range []*store.Exec{plain, leaky} {
		if err := r.PutExec(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.Store.GetExec(ctx, "e-1")
	if err != nil || !reflect.DeepEqual(got, plain) {
		t.Errorf("a record without secrets changed:\n got %+v\nwant %+v (%v)", got, plain, err)
	}
	got, err = r.Store.GetExec(ctx, "e-2")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if l := leaks(b); l != nil {
		t.Fatalf("stored with a secret: %s", b)
	}
	if got.Argv[2] != "Authorization: token "+marker || got.Cwd != "/w/"+marker || got.EnvNames[0] != "V_"+marker ||
		got.Error != "chdir /w/"+marker+": no such file" || !strings.Contains(string(got.Status), `"/workspace/`+marker+`"`) ||
		string(got.Decision) != `{"reason":"writes `+marker+`"}` || !got.Ended.Equal(ended) || got.ID != "e-2" {
		t.Errorf("not redacted field by field as expected: %s", b)
	}
	// What the store refuses is refused through it.
	if err := r.PutExec(ctx, &store.Exec{ID: "e-3", SandboxID: "sb-404", Started: t0}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("exec of an unknown sandbox: %v", err)
	}
}

// How an exec ended is stored redacted (status and error); a nil status
// stays absent, and a result once recorded is not rewritten.
func TestEndExecRedactsStatusAndError(t *testing.T) {
	t.Parallel()
	r, _ := records(t)
	ctx := context.Background()
	for _, id := range []string{"e-1", "e-2"} {
		if err := r.PutExec(ctx, &store.Exec{ID: id, SandboxID: "sb-1", Argv: []string{"make"}, Started: t0}); err != nil {
			t.Fatal(err)
		}
	}
	end := t0.Add(time.Minute)
	st := json.RawMessage(`{"code":2,"signal":"` + secret + `"}`)
	if err := r.EndExec(ctx, "e-1", end, st, "exec "+secret+": not found"); err != nil {
		t.Fatal(err)
	}
	if err := r.EndExec(ctx, "e-2", end, nil, ""); err != nil {
		t.Fatal(err)
	}
	e1, _ := r.Store.GetExec(ctx, "e-1")
	e2, _ := r.Store.GetExec(ctx, "e-2")
	if string(e1.Status) != `{"code":2,"signal":"`+marker+`"}` || e1.Error != "exec "+marker+": not found" || !e1.Ended.Equal(end) {
		t.Errorf("ended: %+v (status %s)", e1, e1.Status)
	}
	if e2.Status != nil || e2.Error != "" || e2.Ended == nil {
		t.Errorf("ended without status: %+v", e2)
	}
	if err := r.EndExec(ctx, "e-1", end, nil, "again"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a second end: %v", err)
	}
}

// What is shown is redacted again on its way out: a secret learned after
// the record was written is hidden too, in exec and sandbox records
// alike (label keys included).
func TestShownRecordsHideSecretsLearnedLater(t *testing.T) {
	t.Parallel()
	r, red := records(t)
	ctx := context.Background()
	// Written before anyone knew `later` was a secret.
	for i, argv := range [][]string{{"echo", later}, {"env"}} {
		if err := r.PutExec(ctx, &store.Exec{ID: fmt.Sprintf("e-%d", i+1), SandboxID: "sb-1", Argv: argv, Cwd: "/workspace", Started: t0.Add(time.Duration(i) * time.Second),
			Status: json.RawMessage(`{"code":0,"stdout_bytes":5}`)}); err != nil {
			t.Fatal(err)
		}
	}
	sb := &store.Sandbox{ID: "sb-3", State: "running", Backend: "fake", Template: "host", Created: t0,
		Labels: map[string]string{"token": later, later: "as a key", "team": "web"}}
	if err := r.Store.PutSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	rec, _ := r.Store.GetExec(ctx, "e-1")
	if shown, _ := r.ShownExec(rec); shown.Argv[1] != later {
		t.Fatalf("redacted before it was known: %+v", shown)
	}
	red.Add(later)

	execs, err := r.Execs(ctx, "sb-1")
	if err != nil || len(execs) != 2 || execs[0].ID != "e-1" || execs[1].ID != "e-2" {
		t.Fatalf("execs %+v: %v", execs, err)
	}
	if execs[0].Argv[1] != marker || execs[0].Status == nil || execs[0].Status.StdoutBytes != 5 {
		t.Errorf("shown exec %+v", execs[0])
	}
	srec, _ := r.Store.GetSandbox(ctx, "sb-3")
	shown, err := r.ShownSandbox(srec)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(shown)
	if leaks(b) != nil || shown.Labels["token"] != marker || shown.Labels[marker] != "as a key" || shown.Labels["team"] != "web" {
		t.Errorf("shown sandbox %s", b)
	}
	// The stored record is as it was: only what is shown changes.
	if srec.Labels["token"] != later {
		t.Errorf("the store's record was changed: %v", srec.Labels)
	}
}

// Listing execs: an unknown sandbox is not found (not an empty list), a
// sandbox with none is an empty list, and an exec is found only through
// its own sandbox.
func TestExecsAndGetExecKeepSandboxesApart(t *testing.T) {
	t.Parallel()
	r, _ := records(t)
	ctx := context.Background()
	if err := r.PutExec(ctx, &store.Exec{ID: "e-1", SandboxID: "sb-1", Argv: []string{"true"}, Started: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execs(ctx, "sb-404"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("execs of an unknown sandbox: %v", err)
	}
	if l, err := r.Execs(ctx, "sb-2"); err != nil || l == nil || len(l) != 0 {
		t.Errorf("execs of a sandbox with none: %v %v", l, err)
	}
	if e, err := r.GetExec(ctx, "sb-1", "e-1"); err != nil || e.ID != "e-1" {
		t.Errorf("own exec: %v", err)
	}
	if _, err := r.GetExec(ctx, "sb-2", "e-1"); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "exec e-1 not found in sandbox sb-2") {
		t.Errorf("another sandbox's exec: %v", err)
	}
	if _, err := r.GetExec(ctx, "sb-1", "e-404"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("unknown exec: %v", err)
	}
}

// A record that cannot be redacted is an error, never shown as it was:
// a secret that is a field's whole number (the marker is a string) and a
// kind the walk does not know (a channel) both fail; a nil record is nil.
func TestScrubbedFailsClosed(t *testing.T) {
	t.Parallel()
	const num = "8675309123456789"
	red := redact.New(num)
	type counted struct {
		Name  string `json:"name"`
		Count int64  `json:"count"`
	}
	v := &counted{Name: "n", Count: 8675309123456789}
	if out, err := Scrubbed[counted](red, v); !errors.Is(err, errdefs.ErrInvalid) || out != nil {
		t.Errorf("a secret number: %+v %v", out, err)
	}
	if out, err := Scrubbed(red, &struct{ C chan int }{C: make(chan int)}); err == nil || out != nil {
		t.Errorf("an unencodable record: %+v %v", out, err)
	}
	if out, err := Scrubbed[counted](red, nil); out != nil || err != nil {
		t.Errorf("nil: %+v %v", out, err)
	}
	// Through the store's path too: the exec is not stored.
	r, _ := records(t)
	r.Redactor = red
	ctx := context.Background()
	err := r.PutExec(ctx, &store.Exec{ID: "e-1", SandboxID: "sb-1", Argv: []string{"true"}, Started: t0,
		Status: json.RawMessage(`{"code":` + num + `}`)})
	if err != nil {
		t.Fatalf("a secret number in the status JSON: %v", err) // the raw status holds the marker as a string
	}
	rec, _ := r.Store.GetExec(ctx, "e-1")
	if string(rec.Status) != `{"code":"`+marker+`"}` {
		t.Errorf("status %s", rec.Status)
	}
	// ... and shown, the status no longer reads as an exit status: it is
	// left out rather than shown unredacted.
	if shown, err := r.ShownExec(rec); err != nil || shown.Status != nil {
		t.Errorf("shown %+v %v", shown, err)
	}
}

// fill sets every exported field of v (a pointer) to a value that is not
// its zero value, recursively.
func fill(t *testing.T, v reflect.Value, path string) {
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(t0.Add(time.Duration(len(path)) * time.Second)))
		return
	case reflect.TypeFor[json.RawMessage]():
		v.Set(reflect.ValueOf(json.RawMessage(`{"k":"` + path + `"}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("v-" + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0), path+"[0]")
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+".key")
		fill(t, e, path+".val")
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(t, v.Field(i), path+"."+f.Name)
			}
		}
	default:
		t.Fatalf("%s: cannot fill a %s", path, v.Kind())
	}
}

// sharedMemory names a slice, map or pointer of a that is b's too ("":
// none).
func sharedMemory(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		return sharedMemory(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return path
		}
		for i := range a.Len() {
			if s := sharedMemory(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); s != "" {
				return s
			}
		}
	case reflect.Map:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			return path
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				if s := sharedMemory(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); s != "" {
					return s
				}
			}
		}
	}
	return ""
}

// Scrubbed copies a record: every field of every record type it is
// given must survive the copy, and the copy must share nothing with the
// record (a field dropped would be lost from what is shown and stored).
// Filled field by field, a field added later is checked without anyone
// remembering it.
func TestScrubbedKeepsEveryFieldOfTheRecords(t *testing.T) {
	red := redact.New(secret)
	check := func(name string, v any, scrub func() (any, error)) {
		got, err := scrub()
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("%s lost something in the copy (%v):\n got %+v\nwant %+v", name, err, got, v)
		}
		if shared := sharedMemory(reflect.ValueOf(got), reflect.ValueOf(v), name); shared != "" {
			t.Errorf("the copy shares %s with the record", shared)
		}
	}
	var e store.Exec
	fill(t, reflect.ValueOf(&e).Elem(), "exec")
	check("store.Exec", &e, func() (any, error) { return Scrubbed(red, &e) })
	var x sandbox.Exec
	fill(t, reflect.ValueOf(&x).Elem(), "view")
	check("sandbox.Exec", &x, func() (any, error) { return Scrubbed(red, &x) })
	var s sandbox.Sandbox
	fill(t, reflect.ValueOf(&s).Elem(), "sandbox")
	check("sandbox.Sandbox", &s, func() (any, error) { return Scrubbed(red, &s) })
}

// The views of the stored records: the spec's limits and policy version,
// the isolation, the decision in short and the exit status; a spec or a
// status that cannot be read is left out, never guessed.
func TestViews(t *testing.T) {
	pol, err := policy.Defaults().With(policy.Layer{Classes: map[policy.Class]policy.Action{policy.Build: policy.Ask}}, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(Spec{Limits: runtime.Limits{MemoryBytes: 1 << 30, Pids: 64}, EnvNames: []string{"A"}, Policy: pol})
	iso, _ := json.Marshal(runtime.Isolation{Boundary: "fake", LandlockABI: 4})
	exp := t0.Add(time.Hour)
	v := View(&store.Sandbox{ID: "sb-1", State: "stopped", Backend: "fake", Template: "t", TemplateVersion: "v1", Labels: map[string]string{"a": "b"},
		Spec: spec, Isolation: iso, Created: t0, Expires: &exp, Stopped: &exp, StopReason: sandbox.StopExpired})
	if v.Limits.MemoryBytes != 1<<30 || v.Limits.Pids != 64 || v.Policy != pol.Version() || !reflect.DeepEqual(v.PolicySources, []string{"defaults", "sandbox"}) ||
		v.Isolation.Boundary != "fake" || v.Isolation.LandlockABI != 4 || v.StopReason != "expired" || v.Labels["a"] != "b" || !v.Expires.Equal(exp) {
		t.Errorf("view %+v", v)
	}
	v = View(&store.Sandbox{ID: "sb-2", State: "running", Spec: json.RawMessage(`[1]`), Created: t0})
	if v.Policy != "" || v.Limits != (runtime.Limits{}) {
		t.Errorf("unreadable spec: %+v", v)
	}
	dec, _ := json.Marshal(policy.Decision{Action: policy.Allow, Reason: "read", Analysis: &policy.Analysis{Classes: []policy.Class{policy.Read}},
		Matches: []policy.Match{{Rule: "class:read", Action: policy.Allow}}})
	ev := ExecView(&store.Exec{ID: "e-1", SandboxID: "sb-1", Argv: []string{"ls"}, Started: t0, Status: json.RawMessage(`{"code":3}`), Decision: dec})
	if ev.Status == nil || ev.Status.Code != 3 || ev.Policy == nil || ev.Policy.Action != policy.Allow || !reflect.DeepEqual(ev.Policy.Rules, []string{"class:read"}) {
		t.Errorf("exec view %+v", ev)
	}
	if ev := ExecView(&store.Exec{ID: "e-2", Status: json.RawMessage(`"exited"`)}); ev.Status != nil || ev.Policy != nil {
		t.Errorf("unreadable status: %+v", ev)
	}
}

// An attack on every other sandbox's records: the redactor is the
// daemon's, and any caller teaches it values (a secret-named variable's).
// A value that is also a field's name ("SandboxID", "sandbox_id", "state"),
// a piece of every timestamp or another sandbox's id must not change
// what the daemon writes around agent text: the record keeps its fields,
// times and ids (the JSON round trip redacted its keys too, so teaching
// "SandboxID" emptied the field of every exec record and the store
// refused them all: no command ran in any sandbox), while the value is
// still hidden where it is agent text.
func TestTaughtValuesDoNotBreakOtherRecords(t *testing.T) {
	t.Parallel()
	r, red := records(t)
	ctx := context.Background()
	taught := []string{"SandboxID", "sandbox_id", "Started", "started", "running", "2026-12-03T", "sb-2xyz", "Template", "labels"}
	red.Add(taught...)
	if err := r.Store.PutSandbox(ctx, &store.Sandbox{ID: "sb-2xyz", State: "running", Backend: "fake", Template: "host", Created: t0,
		Labels: map[string]string{"team": "web"}}); err != nil {
		t.Fatal(err)
	}
	in := &store.Exec{ID: "e-1", SandboxID: "sb-2xyz", Argv: []string{"echo", "SandboxID"}, Cwd: "/workspace", Started: t0}
	if err := r.PutExec(ctx, in); err != nil {
		t.Fatalf("an exec record after values were taught: %v", err)
	}
	if err := r.EndExec(ctx, "e-1", t0.Add(time.Second), json.RawMessage(`{"code":0}`), ""); err != nil {
		t.Fatal(err)
	}
	got, err := r.Store.GetExec(ctx, "e-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "e-1" || got.SandboxID != "sb-2xyz" || !got.Started.Equal(t0) || got.Cwd != "/workspace" || got.Argv[1] != marker {
		t.Errorf("stored %+v", got)
	}
	shown, err := r.ShownExec(got)
	if err != nil || shown.ID != "e-1" || shown.SandboxID != "sb-2xyz" || !shown.Started.Equal(t0) || shown.Argv[1] != marker {
		t.Errorf("shown exec %+v: %v", shown, err)
	}
	srec, _ := r.Store.GetSandbox(ctx, "sb-2xyz")
	sb, err := r.ShownSandbox(srec)
	if err != nil || sb.ID != "sb-2xyz" || sb.State != "running" || sb.Template != "host" || !sb.Created.Equal(t0) || sb.Labels["team"] != "web" {
		t.Errorf("shown sandbox %+v: %v", sb, err)
	}
}

// The raw JSON an exec record keeps (its status and decision) is the
// daemon's: a taught value that is one of its field names must not hide
// that field of every later record (a stored decision lost its action
// and classes, a status its byte counts), while the secret itself,
// where it is a value, is still hidden, and a key that is user data
// (not shaped like the daemon's field names) is still redacted.
func TestTaughtFieldNamesKeepRawRecords(t *testing.T) {
	t.Parallel()
	r, red := records(t)
	ctx := context.Background()
	red.Add("analysis", "classes", "stdout_bytes", "action", "reason")
	dec := json.RawMessage(`{"action":"allow","reason":"ok ` + secret + `","matches":[],"analysis":{"line":"ls","classes":["read"]},"policy":"v1"}`)
	in := &store.Exec{ID: "e-1", SandboxID: "sb-2", Argv: []string{"ls"}, Started: t0, Decision: dec}
	if err := r.PutExec(ctx, in); err != nil {
		t.Fatal(err)
	}
	st := json.RawMessage(`{"code":0,"stdout_bytes":12,"signal":"` + secret + `","files":{"written":["/workspace/a"]},"` + later + `":"k"}`)
	red.Add(later)
	if err := r.EndExec(ctx, "e-1", t0.Add(time.Second), st, ""); err != nil {
		t.Fatal(err)
	}
	got, _ := r.Store.GetExec(ctx, "e-1")
	if l := leaks(append(append([]byte{}, got.Decision...), got.Status...)); l != nil {
		t.Errorf("stored decision %s, status %s: leaks %q", got.Decision, got.Status, l)
	}
	shown, err := r.ShownExec(got)
	if err != nil || shown.Policy == nil || shown.Policy.Action != policy.Allow || !reflect.DeepEqual(shown.Policy.Classes, []policy.Class{"read"}) ||
		shown.Policy.Reason != "ok "+marker || shown.Policy.Version != "v1" {
		t.Fatalf("shown policy %+v: %v (stored %s)", shown.Policy, err, got.Decision)
	}
	if shown.Status == nil || shown.Status.StdoutBytes != 12 || shown.Status.Signal != marker || shown.Status.Files == nil ||
		shown.Status.Files.Written[0] != "/workspace/a" {
		t.Errorf("shown status %+v (stored %s)", shown.Status, got.Status)
	}
	if !strings.Contains(string(got.Status), `"`+marker+`":"k"`) {
		t.Errorf("a key that is user data: %s", got.Status)
	}
}

// RawJSON walks a document: a secret number becomes a marker, invalid
// JSON is redacted as bytes into a JSON string, nothing else changes.
func TestRawJSON(t *testing.T) {
	t.Parallel()
	red := redact.New(secret, "8675309123456789")
	for in, want := range map[string]string{
		`{"n":8675309123456789,"m":1.5e3,"ok":true,"z":null}`: `{"m":1.5e3,"n":"` + marker + `","ok":true,"z":null}`,
		`["a <b>", "` + secret + `"]`:                         `["a <b>","` + marker + `"]`,
		`not json ` + secret:                                  `"not json ` + marker + `"`,
		`{"password":"hunter2hunter2"}`:                       `{"password":"[REDACTED:generic-api-key]"}`,
	} {
		got, err := RawJSON(red, []byte(in))
		if err != nil || string(got) != want {
			t.Errorf("RawJSON(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}
