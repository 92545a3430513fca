package admin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/wire"
)

// 'project policy': set from a YAML file, shown, cleared; a file with a
// template section is refused before anything is sent; a relaxing layer
// is the daemon's refusal; and --egress is a quota of 'project quota'.
func TestProjectPolicyCommand(t *testing.T) {
	sock := daemonSocket(t)
	dir := t.TempDir()
	layer := filepath.Join(dir, "layer.yaml")
	if err := os.WriteFile(layer, []byte("classes: {network: deny}\negress:\n  rules:\n    - {id: no-x, action: deny, hosts: [x.example.test]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runProject(t, sock, "policy", "--file", layer, "default")
	var l wire.PolicyLayer
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || l.Classes["network"] != "deny" || !strings.Contains(string(l.Egress), "no-x") {
		t.Fatalf("policy --file: %d %s %s", code, out, errOut)
	}
	if code, out, _ = runProject(t, sock, "policy", "default"); code != 0 || !strings.Contains(out, `"network": "deny"`) {
		t.Errorf("policy: %d %s", code, out)
	}
	withTemplate := filepath.Join(dir, "file.yaml")
	if err := os.WriteFile(withTemplate, []byte("templates:\n  host: {classes: {network: allow}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = runProject(t, sock, "policy", "--file", withTemplate, "default"); code != 2 || !strings.Contains(errOut, "one layer") {
		t.Errorf("a file with a template section: %d %s", code, errOut)
	}
	relax := filepath.Join(dir, "relax.yaml")
	if err := os.WriteFile(relax, []byte("classes: {destructive: allow}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = runProject(t, sock, "policy", "--file", relax, "default"); code == 0 || !strings.Contains(errOut, "denied") {
		t.Errorf("a relaxing layer: %d %s", code, errOut)
	}
	if code, out, _ = runProject(t, sock, "policy", "--clear", "default"); code != 0 || !strings.Contains(out, "no policy layer") {
		t.Errorf("--clear: %d %s", code, out)
	}
	if code, out, errOut = runProject(t, sock, "quota", "--egress", "1G", "default"); code != 0 || !strings.Contains(out, "egress/day") {
		t.Errorf("quota --egress: %d %s %s", code, out, errOut)
	}
}

// 'project settings': set one, the other stays; default gives it back;
// a bad duration is a usage error.
func TestProjectSettingsCommand(t *testing.T) {
	sock := daemonSocket(t)
	code, out, errOut := runProject(t, sock, "settings", "--max-lifetime", "90m", "default")
	if code != 0 || !strings.Contains(out, "max lifetime\t1h30m0s") || !strings.Contains(out, "the daemon's (host)") {
		t.Fatalf("settings --max-lifetime: %d %s %s", code, out, errOut)
	}
	code, out, _ = runProject(t, sock, "settings", "--default-template", "host", "--json", "default")
	var s wire.ProjectSettings
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.DefaultTemplate != "host" || s.MaxLifetimeSeconds != 5400 {
		t.Errorf("settings --default-template: %d %s", code, out)
	}
	if code, out, _ = runProject(t, sock, "settings", "--max-lifetime", "default", "default"); code != 0 || !strings.Contains(out, "max lifetime\tthe daemon's") {
		t.Errorf("--max-lifetime default: %d %s", code, out)
	}
	if code, _, _ = runProject(t, sock, "settings", "--max-lifetime", "soon", "default"); code != 2 {
		t.Errorf("a bad duration: %d", code)
	}
}
