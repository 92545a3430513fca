package lost

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/store"
)

// What a previous daemon left running is ended, each end recorded
// before the store changes (a task's command's with its task); what had
// ended stays as it was; a record that cannot be written stops End with
// the store unchanged.
func TestEnd(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	created := time.Now().UTC().Add(-time.Hour)
	ended := created.Add(time.Second)
	for _, sb := range []*store.Sandbox{
		{ID: "sb-running", State: "running", Backend: "fake", Template: "host", Labels: map[string]string{"task": "t-1"}, Created: created},
		{ID: "sb-paused", State: "paused", Backend: "fake", Template: "host", Created: created},
		{ID: "sb-stopped", State: "stopped", Backend: "fake", Template: "host", Created: created, Stopped: &created, StopReason: "destroyed"},
	} {
		if err := st.PutSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []*store.Exec{
		{ID: "e-1", SandboxID: "sb-running", Argv: []string{"sleep"}, Started: created},
		{ID: "e-2", SandboxID: "sb-stopped", Argv: []string{"make"}, Started: created},
		{ID: "e-3", SandboxID: "sb-running", Argv: []string{"true"}, Started: created, Ended: &ended, Status: json.RawMessage(`{"code":0}`)},
	} {
		if err := st.PutExec(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := End(ctx, st, func(context.Context, audit.Entry) error { return errors.New("log full") }, t.Logf); err == nil {
		t.Fatal("End past a failing record")
	}
	if sb, _ := st.GetSandbox(ctx, "sb-running"); sb.State != "running" {
		t.Errorf("the store changed past a failing record: %+v", sb)
	}
	var got []string
	rec := func(_ context.Context, e audit.Entry) error {
		got = append(got, e.Kind+" "+e.SandboxID+" "+e.ExecID+" "+e.TaskID)
		return nil
	}
	if err := End(ctx, st, rec, t.Logf); err != nil {
		t.Fatal(err)
	}
	want := []string{"exec.end sb-running e-1 t-1", "sandbox.stop sb-running  t-1", "sandbox.stop sb-paused  ", "exec.end sb-stopped e-2 "}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("recorded %q, want %q", got, want)
	}
	for _, id := range []string{"sb-running", "sb-paused"} {
		if sb, _ := st.GetSandbox(ctx, id); sb.State != "stopped" || sb.StopReason != Reason {
			t.Errorf("%s: %+v", id, sb)
		}
	}
	for _, id := range []string{"e-1", "e-2"} {
		if e, _ := st.GetExec(ctx, id); e.Ended == nil || e.Error != ExecError {
			t.Errorf("%s: %+v", id, e)
		}
	}
	if e, _ := st.GetExec(ctx, "e-3"); e.Error != "" || string(e.Status) != `{"code":0}` {
		t.Errorf("an ended exec is changed: %+v", e)
	}
}
