package templatecmd

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"github.com/airlock-dev/airlock/internal/testroot"
)

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := CmdTemplate(args, &out, &errb)
	return code, out.String(), errb.String()
}

// `template build` end to end on a store (no RUN: no sandbox): the
// result is listed, inspect shows its provenance, a rebuild takes every
// step from the cache, and a bad file is a usage-free error naming its
// line.
func TestCmdBuild(t *testing.T) {
	testroot.Need(t, "layers are unpacked as host root")
	data := t.TempDir()
	s, err := template.Open(filepath.Join(data, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.Close()
	id, err := s.UnpackLayer("", &b, layertar.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	img := &template.Image{Name: "base", Kind: "image", Source: "test", Digest: "sha256:" + strings.Repeat("c", 64), Platform: "linux/amd64", Layers: []template.ImageLayer{{DiffID: id}}}
	if img.AirlockLayer, err = s.AirlockLayer([]string{id}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutImage(img); err != nil {
		t.Fatal(err)
	}
	ctxDir := t.TempDir()
	os.WriteFile(filepath.Join(ctxDir, "a.txt"), []byte("a\n"), 0o644)
	file := filepath.Join(t.TempDir(), "airlock.template")
	os.WriteFile(file, []byte("FROM base\nCOPY a.txt /opt/a.txt\nENV K=V\nWORKDIR /opt\n"), 0o644)
	code, out, errs := run("build", "--data-dir", data, "-f", file, "--quiet", "built", ctxDir)
	if code != 0 || !strings.Contains(out, "(3 steps: 0 cached, 3 built") {
		t.Fatalf("build: %d %q %q", code, out, errs)
	}
	code, out, errs = run("build", "--data-dir", data, "-f", file, "--quiet", "built", ctxDir)
	if code != 0 || !strings.Contains(out, "(3 steps: 3 cached, 0 built") {
		t.Fatalf("rebuild: %d %q %q", code, out, errs)
	}
	code, out, _ = run("inspect", "--data-dir", data, "built")
	var got template.Image
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Kind != "build" || got.Build == nil || got.Build.BaseHash != img.Hash || len(got.Build.Steps) != 3 || got.Config.WorkingDir != "/opt" {
		t.Fatalf("inspect: %d %s", code, out)
	}
	if code, out, _ = run("ls", "--data-dir", data); code != 0 || !strings.Contains(out, "built") || !strings.Contains(out, "build") {
		t.Errorf("ls: %q", out)
	}
	// rm and gc take its layers: the cache no longer has those steps
	if code, _, errs = run("rm", "--data-dir", data, "built"); code != 0 {
		t.Fatalf("rm: %q", errs)
	}
	if code, out, errs = run("gc", "--data-dir", data); code != 0 || !strings.HasPrefix(out, "removed 2 layers") /* COPY, WORKDIR: its airlock layer is the base's */ {
		t.Fatalf("gc: %d %q %q", code, out, errs)
	}
	code, out, errs = run("build", "--data-dir", data, "-f", file, "--quiet", "built", ctxDir)
	if code != 0 || !strings.Contains(out, "(3 steps: 1 cached, 2 built") {
		t.Fatalf("build after gc: %d %q %q", code, out, errs)
	}
	os.WriteFile(file, []byte("FROM base\nCOPY ../x /y\n"), 0o644)
	if code, _, errs = run("build", "--data-dir", data, "-f", file, "bad", ctxDir); code != 1 || !strings.Contains(errs, "airlock.template:2: COPY ../x: leads out of the context directory") {
		t.Errorf("bad file: %d %q", code, errs)
	}
}
