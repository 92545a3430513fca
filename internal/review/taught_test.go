package review

import (
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/redact"
)

// An attack on the bundle's contents: values taught the daemon's
// redactor that are its field names, an exec's id, a file status and a
// piece of every timestamp leave the ids, states and times whole (on
// the old JSON round trip the contents could not be redacted at all, so
// no bundle was written, or lost their exec ids); a secret is still
// hidden wherever it is a value, and an artifact whose name the
// redaction changes is no longer included (its bytes are filed under
// the name it had: it became an empty entry).
func TestScrubContentsKeepsTheDaemonsWords(t *testing.T) {
	const secret = "web-secret-9x4k2"
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	red := redact.New(secret, "exec_id", "e-victim1", "added", "2026-12-03T", "in_scope", "allow")
	c := &bundle.Contents{
		Manifest: bundle.Manifest{Task: "t-victim1", Sandbox: "sb-victim1", Commit: "c0ffee", Prompt: "use " + secret, Created: t0, Finished: t0},
		Patch:    "+" + secret, Files: []bundle.File{{Path: "a.go", Status: "added", InScope: true}},
		Commands:     []bundle.Command{{ExecID: "e-victim1", Argv: []string{"echo", secret}, Started: t0, Policy: &bundle.PolicySummary{Action: "allow", Classes: []string{"read"}}}},
		Artifacts:    []bundle.Artifact{{Path: "out/" + secret + ".txt", Type: "text", Included: true}, {Path: "ok.txt", Type: "text", Included: true}},
		ArtifactData: map[string][]byte{"out/" + secret + ".txt": []byte("x"), "ok.txt": []byte("fine")},
	}
	out, err := scrubContents(red, c)
	if err != nil {
		t.Fatal(err)
	}
	m := out.Manifest
	if m.Task != "t-victim1" || m.Sandbox != "sb-victim1" || !m.Created.Equal(t0) || m.Prompt != "use [REDACTED:known-secret]" {
		t.Errorf("manifest %+v", m)
	}
	if cmd := out.Commands[0]; cmd.ExecID != "e-victim1" || cmd.Argv[1] != "[REDACTED:known-secret]" || !cmd.Started.Equal(t0) || cmd.Policy.Action != "allow" {
		t.Errorf("command %+v", cmd)
	}
	if f := out.Files[0]; f.Status != "added" || !f.InScope {
		t.Errorf("file %+v", f)
	}
	if a := out.Artifacts; a[0].Included || strings.Contains(a[0].Path, secret) || !a[1].Included || a[1].Path != "ok.txt" {
		t.Errorf("artifacts %+v", a)
	}
	if c.Artifacts[0].Path != "out/"+secret+".txt" || c.Patch != "+"+secret {
		t.Errorf("the contents given were changed: %+v", c)
	}
	files, err := bundle.Entries(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if strings.HasPrefix(name, "artifacts/") && name != "artifacts/ok.txt" && name != "artifacts.json" {
			t.Errorf("entry %s (%q): an artifact filed under a name it never had", name, b)
		}
	}
	if string(files["artifacts/ok.txt"]) != "fine" {
		t.Errorf("artifacts/ok.txt: %q", files["artifacts/ok.txt"])
	}
}
