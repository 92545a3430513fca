package audit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/store"
)

// An attack: values one caller teaches the daemon's redactor (a
// secret-named variable's) that are the payloads' field names hid those
// fields of every sandbox's later events ("argv" and "decision" became
// markers: the exec.start events of every sandbox lost them). The keys
// are kept now, the taught secret is still hidden as a value, and the
// chain verifies.
func TestTaughtFieldNamesKeepPayloads(t *testing.T) {
	const secret = "attacker-secret-3a9c5e"
	red := redact.New(secret, "decision", "env_names", "classes")
	l, st, _ := openLog(t, red)
	ctx := context.Background()
	if _, err := l.Record(ctx, Entry{SandboxID: "sb-victim", Kind: "exec.start", Payload: map[string]any{
		"argv": []string{"echo", secret}, "env_names": []string{"HOME"}, "decision": map[string]any{"action": "allow", "classes": []string{"read"}}}}); err != nil {
		t.Fatal(err)
	}
	evs, err := l.Query(ctx, store.AuditFilter{SandboxID: "sb-victim"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("%+v %v", evs, err)
	}
	var p struct {
		Argv     []string `json:"argv"`
		EnvNames []string `json:"env_names"`
		Decision struct {
			Action  string   `json:"action"`
			Classes []string `json:"classes"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(evs[0].Payload, &p); err != nil || len(p.Argv) != 2 || p.Argv[1] != "[REDACTED:known-secret]" ||
		len(p.EnvNames) != 1 || p.Decision.Action != "allow" || len(p.Decision.Classes) != 1 {
		t.Errorf("payload %s: %+v %v", evs[0].Payload, p, err)
	}
	if strings.Contains(string(evs[0].Payload), secret) {
		t.Errorf("payload %s shows the secret", evs[0].Payload)
	}
	if r := verify(t, st, nil); !r.OK() {
		t.Fatalf("%s", r)
	}
}
