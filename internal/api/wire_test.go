package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/review"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/secrets"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/wire"
)

// The conversions of wire.go against the daemon's types: every field the
// daemon's type puts in JSON reaches the wire body with the same value
// (so the API sends what it sent before it had package wire), and every
// field a request body carries reaches the daemon's type. A field added
// to a manager, runtime, policy, egress or audit type fails here until it
// is mapped, or listed in notExposed with the reason.

// notExposed are JSON fields of the daemon's types that the API does not
// send, by type and path. (Fields tagged json:"-" are not in the JSON at
// all: Snapshot's BaseDir and Binds, CreateRequest's TightenOnly.)
var notExposed = map[string]map[string]string{}

// fillAll sets every exported field of v, recursively, to a value that is
// not zero (one element per slice and map), so that each is in the JSON.
func fillAll(v reflect.Value, depth int) {
	if depth > 8 || !v.CanSet() {
		return
	}
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)))
		return
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(`{"k":[1,"v"]}`))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fillAll(v.Field(i), depth+1)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(v.Index(0), depth+1)
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(k, depth+1)
		fillAll(e, depth+1)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	}
}

// filled returns a *T with every field set.
func filled[T any]() *T {
	v := new(T)
	fillAll(reflect.ValueOf(v).Elem(), 0)
	return v
}

// leaves flattens a JSON document to its leaf values by path
// ("isolation.write_scope.paths[]").
func leaves(t *testing.T, v any) map[string]string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(p string, x any)
	walk = func(p string, x any) {
		switch x := x.(type) {
		case map[string]any:
			if len(x) == 0 {
				out[p] = "{}"
			}
			for k, e := range x {
				walk(strings.TrimPrefix(p+"."+k, "."), e)
			}
		case []any:
			if len(x) == 0 {
				out[p] = "[]"
			}
			for _, e := range x {
				walk(p+"[]", e)
			}
		default:
			out[p] = fmt.Sprint(x)
		}
	}
	walk("", doc)
	return out
}

// jsonDiff lists every path of from's JSON that to's lacks or has with
// another value, but the ones listed as not exposed.
func jsonDiff(t *testing.T, name string, from, to any) []string {
	t.Helper()
	f, w := leaves(t, from), leaves(t, to)
	var bad []string
	for p, v := range f {
		if _, ok := notExposed[name][p]; ok {
			continue
		}
		if wv, ok := w[p]; !ok {
			bad = append(bad, fmt.Sprintf("%s is dropped", p))
		} else if wv != v {
			bad = append(bad, fmt.Sprintf("%s is %s, not %s", p, wv, v))
		}
	}
	sort.Strings(bad)
	return bad
}

// sameJSON fails the test where jsonDiff finds a difference.
func sameJSON(t *testing.T, name string, from, to any) {
	t.Helper()
	if bad := jsonDiff(t, name, from, to); len(bad) > 0 {
		t.Errorf("%s: %s (map it in wire.go, or list it in notExposed with the reason)", name, strings.Join(bad, "; "))
	}
	if n := len(leaves(t, from)); n < 3 {
		t.Errorf("%s: only %d fields filled: the check would be empty", name, n)
	}
}

func TestWireCarriesEveryFieldTheDaemonSends(t *testing.T) {
	sb := filled[sandbox.Sandbox]()
	sameJSON(t, "Sandbox", sb, sandboxOut(sb))
	e := filled[sandbox.Exec]()
	sameJSON(t, "Exec", e, execOut(e))
	st := filled[runtime.ExitStatus]()
	sameJSON(t, "ExitStatus", st, exitOut(st))
	fi := filled[runtime.FileInfo]()
	sameJSON(t, "FileInfo", fi, fileInfoOut(*fi))
	sn := filled[snapshots.Snapshot]()
	sameJSON(t, "Snapshot", sn, snapshotOut(sn))
	tpl := filled[sandbox.TemplateInfo]()
	sameJSON(t, "Template", tpl, templateOut(tpl))
	task := filled[tasks.Task]()
	sameJSON(t, "Task", task, taskOut(task))
	d := filled[tasks.Diff]()
	sameJSON(t, "Diff", d, diffOut(d))
	fr := filled[tasks.FinishResult]()
	sameJSON(t, "FinishResult", fr, finishOut(fr))
	dec := filled[policy.Decision]()
	wd, err := decisionOut(dec)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "Decision", dec, wd)
	ap := filled[approvals.Approval]()
	sameJSON(t, "Approval", ap, approvalOut(ap))
	bg := filled[approvals.BreakGlass]()
	sameJSON(t, "BreakGlass", bg, breakGlassOut(bg))
	si := filled[secrets.Info]()
	sameJSON(t, "SecretInfo", si, secretInfoOut(si))
	sg := filled[secrets.Grant]()
	sameJSON(t, "SecretGrant", sg, secretGrantOut(sg))
	ev := filled[audit.Event]()
	sameJSON(t, "AuditEvent", ev, auditEventOut(ev))
	rep := filled[audit.Report]()
	sameJSON(t, "AuditReport", rep, auditReportOut(rep))
	pr := filled[review.PurgeResult]()
	sameJSON(t, "PurgeResult", pr, purgeOut(pr))
	k := filled[apikeys.Key]()
	sameJSON(t, "APIKey", k, apiKeyOut(k))
	u := filled[egress.Usage]()
	sameJSON(t, "EgressUsage", u, usageOut(u))
}

// filledLayer is a request's policy layer with every field set, its
// egress layer one the daemon's egress type reads.
func filledLayer(t *testing.T) *wire.PolicyLayer {
	l := filled[wire.PolicyLayer]()
	eg, err := json.Marshal(filled[egress.Policy]())
	if err != nil {
		t.Fatal(err)
	}
	l.Egress = eg
	return l
}

func TestWireRequestsReachTheDaemon(t *testing.T) {
	cr := filled[wire.CreateSandboxRequest]()
	cr.Policy = filledLayer(t)
	mc, err := createIn(*cr)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "CreateSandboxRequest", cr, mc)
	tr := filled[wire.TaskRequest]()
	tr.Policy = filledLayer(t)
	mt, err := taskIn(*tr)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "TaskRequest", tr, mt)
	gr := filled[wire.SecretGrantRequest]()
	sameJSON(t, "SecretGrantRequest", gr, grantIn(*gr))

	// A policy layer is read as strictly as the body it is in.
	bad := filledLayer(t)
	bad.Egress = json.RawMessage(`{"no_such_field": 1}`)
	if _, err := policyLayerIn(bad); err == nil || !strings.Contains(err.Error(), "no_such_field") {
		t.Errorf("an unknown egress field in a policy layer: %v", err)
	}
}

// The check itself: a field the conversion drops, or changes, is caught.
func TestJSONDiffCatchesADroppedField(t *testing.T) {
	sb := filled[sandbox.Sandbox]()
	w := sandboxOut(sb)
	w.Isolation.WriteScope = nil
	w.Labels = map[string]string{"s": "other"}
	got := jsonDiff(t, "Sandbox", sb, w)
	want := []string{
		"isolation.write_scope.landlock_abi is dropped",
		"isolation.write_scope.paths[] is dropped",
		"isolation.write_scope.scratch[] is dropped",
		"labels.s is other, not s",
	}
	if !slices.Equal(got, want) {
		t.Errorf("jsonDiff = %q, want %q", got, want)
	}
}
