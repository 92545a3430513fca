package manager

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/store"
)

// An exec record goes through redaction whole: a known secret in any of
// its fields is replaced, and the rest comes back exactly as it was
// (nil stays nil, empty stays empty).
func TestExecRecordRedactedWhole(t *testing.T) {
	ctx := context.Background()
	m, st, _ := testManager(t, t.TempDir())
	const secret = "Zq7vK2pXw9LmN4tR8sYb3HcJ6dFg"
	m.cfg.Redactor.Add(secret)
	now := time.Now().UTC()
	if err := st.PutSandbox(ctx, &store.Sandbox{ID: "sb-1", State: "running", Backend: "fake", Template: "host", Created: now}); err != nil {
		t.Fatal(err)
	}
	plain := &store.Exec{ID: "e-1", SandboxID: "sb-1", Argv: []string{}, Cwd: "/workspace", Started: now}
	leaky := &store.Exec{ID: "e-2", SandboxID: "sb-1", Argv: []string{"echo", secret}, Cwd: "/w/" + secret, EnvNames: []string{"V_" + secret},
		Started: now, Ended: &now, Error: "chdir /w/" + secret, Decision: json.RawMessage(`{"reason":"` + secret + `"}`)}
	for _, e := range []*store.Exec{plain, leaky} {
		if err := m.recs.PutExec(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.GetExec(ctx, "e-1")
	if err != nil || !reflect.DeepEqual(got, plain) {
		t.Errorf("a record without secrets changed:\n got %+v\nwant %+v (%v)", got, plain, err)
	}
	got, _ = st.GetExec(ctx, "e-2")
	b, _ := json.Marshal(got)
	if want := "[REDACTED:known-secret]"; !json.Valid(b) || got.Cwd != "/w/"+want || got.Argv[1] != want || got.EnvNames[0] != "V_"+want ||
		got.Error != "chdir /w/"+want || string(got.Decision) != `{"reason":"`+want+`"}` || got.Status != nil {
		t.Errorf("the record is not redacted whole: %s", b)
	}
}

// getExec is exec execID of sandbox id as the API shows it.
func getExec(m *Manager, ctx context.Context, id, execID string) (*sandbox.Exec, error) {
	return (&core{m: m}).ExecRecord(ctx, id, execID)
}

// output is the stored output of one stream of exec execID of sandbox id.
func output(m *Manager, ctx context.Context, id, execID, stream string) ([]byte, error) {
	if _, err := m.recs.GetExec(ctx, id, execID); err != nil {
		return nil, err
	}
	return m.cfg.Store.GetOutput(ctx, execID, stream)
}

// One caller's secret-named variable teaches the daemon's redactor its
// value; a value that is also a record's field name or another
// sandbox's id must not stop the commands of every other sandbox (it
// did: the exec record lost its sandbox id to the redactor and the store
// refused it, so no exec could start anywhere).
func TestFakeTierTaughtValueStopsNoOtherSandbox(t *testing.T) {
	m, _ := fakeTierManager(t)
	ctx := context.Background()
	victim, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	attacker, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"API_TOKEN=SandboxID", "GITHUB_TOKEN=" + victim.ID, "DB_PASSWORD=running"}
	if _, _, err := m.Exec(ctx, attacker.ID, sandbox.ExecRequest{Argv: []string{"true"}, Env: env}, nil, nil, nil); err != nil {
		t.Fatalf("the teaching exec: %v", err)
	}
	execID, st, err := m.Exec(ctx, victim.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil)
	if err != nil || st.Code != 0 {
		t.Fatalf("another sandbox's exec after the values were taught: %v", err)
	}
	e, err := getExec(m, ctx, victim.ID, execID)
	if err != nil || e.SandboxID != victim.ID {
		t.Errorf("its record: %+v, %v", e, err)
	}
	if sb, err := m.Get(ctx, victim.ID); err != nil || sb.ID != victim.ID || sb.State != "running" {
		t.Errorf("the other sandbox shown: %+v, %v", sb, err)
	}
}

// A label's key is user data: a secret there is hidden in the
// sandbox.create event too, though the audit log keeps keys shaped like
// a field's name (a taught "labels" or "backend" hides no field), and
// shown in the sandbox's record.
func TestFakeTierSecretLabelKeyRedacted(t *testing.T) {
	m, log := fakeTierManager(t)
	ctx := context.Background()
	const secret = "teamsecretvalue42"
	sb, err := m.Create(ctx, sandbox.CreateRequest{Env: []string{"API_TOKEN=" + secret, "DB_PASSWORD=labels", "GH_TOKEN=backend"},
		Labels: map[string]string{secret: "x", "team": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := log.Query(ctx, store.AuditFilter{SandboxID: sb.ID, Kind: "sandbox.create"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("%+v %v", evs, err)
	}
	var p struct {
		Backend string            `json:"backend"`
		Labels  map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(evs[0].Payload, &p); err != nil || p.Backend != sb.Backend || p.Labels["team"] != "web" ||
		p.Labels["[REDACTED:known-secret]"] != "x" || len(p.Labels) != 2 {
		t.Errorf("the create event's payload %s: %+v %v", evs[0].Payload, p, err)
	}
	shown, err := m.Get(ctx, sb.ID)
	if err != nil || shown.Labels["[REDACTED:known-secret]"] != "x" || shown.Labels["team"] != "web" {
		t.Errorf("shown %+v %v", shown, err)
	}
}
