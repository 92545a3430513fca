package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// task start --egress FILE and --preset make the task's egress layer,
// and a typo fails before anything is cloned.
func TestTaskEgressLayer(t *testing.T) {
	if l, err := egressLayer("", nil); l != nil || err != nil {
		t.Errorf("neither flag: %s %v", l, err)
	}
	l, err := egressLayer("", []string{"go,npm", "npm"})
	if err != nil || string(l) != `{"presets":["go","npm"]}` {
		t.Errorf("presets: %s %v", l, err)
	}
	file := filepath.Join(t.TempDir(), "egress.yaml")
	if err := os.WriteFile(file, []byte("rules:\n  - {id: mirror, action: allow, cidrs: [192.0.2.7/32], ports: [443]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = egressLayer(file, []string{"go"})
	if err != nil || !strings.Contains(string(l), `"presets":["go"]`) || !strings.Contains(string(l), `"id":"mirror"`) {
		t.Errorf("file and preset: %s %v", l, err)
	}
	if _, err := egressLayer("", []string{"nmp"}); err == nil || !strings.Contains(err.Error(), `unknown preset "nmp"`) {
		t.Errorf("a typo: %v", err)
	}
	if err := os.WriteFile(file, []byte("rulez: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := egressLayer(file, nil); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("an unknown key: %v", err)
	}
	if _, err := egressLayer(filepath.Join(t.TempDir(), "none"), nil); err == nil {
		t.Error("a missing file")
	}
}
