package records

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"
)

// An attack: a value taught the daemon's redactor (a secret-named
// variable of an exec in one sandbox) that is a field name of what a
// door answers with must not hide that field of every other caller's
// answer (on the old JSON round trip the key itself was redacted); the
// secret is still hidden where it is a value, and a key that is user
// data (not shaped like the daemon's field names) is still redacted.
func TestTaughtFieldNameKeepsRedactedJSONWhole(t *testing.T) {
	ctx := context.Background()
	m, r, _ := newRig(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "attacker-secret-5d1e8c"
	env := []string{"API_TOKEN=processes", "GITHUB_TOKEN=cmd_line", "DB_PASSWORD=" + secret}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}, Env: env}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	j, err := r.RedactedJSON(map[string]any{"processes": []map[string]any{{"cmd_line": "echo " + secret, "pid": 7,
		"env": map[string]string{"DB_PASSWORD": secret, secret: "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(j, []byte(secret)) {
		t.Errorf("the secret is shown: %s", j)
	}
	var got struct {
		Processes []struct {
			CmdLine string            `json:"cmd_line"`
			PID     int               `json:"pid"`
			Env     map[string]string `json:"env"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(j, &got); err != nil || len(got.Processes) != 1 {
		t.Fatalf("%s: %v", j, err)
	}
	p := got.Processes[0]
	if p.CmdLine != "echo [REDACTED:known-secret]" || p.PID != 7 || p.Env["DB_PASSWORD"] != "[REDACTED:known-secret]" ||
		p.Env["[REDACTED:known-secret]"] != "x" || len(p.Env) != 2 {
		t.Errorf("answer %s", j)
	}
}
