package templatecmd

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"github.com/airlock-dev/airlock/internal/testroot"
	"github.com/airlock-dev/airlock/wire"
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

// `template build --socket` asks the daemon: the file and context go as
// absolute paths, the steps' lines are shown on stderr (escapes made
// harmless), the result on stdout. A socket nobody serves is an error,
// never a fallback to the in-process build.
func TestCmdBuildOnDaemon(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan wire.TemplateBuildRequest, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req wire.TemplateBuildRequest
		if r.Method != "POST" || r.URL.Path != "/v1/templates/build" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "unexpected", 400)
			return
		}
		got <- req
		enc := json.NewEncoder(w)
		enc.Encode(wire.TemplateBuildEvent{Progress: "RUN make\x1b[2J"})
		enc.Encode(wire.TemplateBuildEvent{Build: &wire.TemplateBuild{Template: wire.Template{Name: req.Name, Version: "0123456789ab", Kind: "build", Digest: "sha256:" + strings.Repeat("e", 64)}, Cached: 1, Built: 1}})
	})}
	go srv.Serve(ln)
	defer srv.Close()
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile("airlock.template", []byte("FROM base\nRUN make\n"), 0o644)
	data := t.TempDir()
	code, out, errs := run("build", "--data-dir", data, "--socket", sock, "img", "ctx")
	if code != 0 || !strings.HasPrefix(out, "img@0123456789ab sha256:eeee") || !strings.Contains(out, "(2 steps: 1 cached, 1 built") {
		t.Fatalf("build: %d %q %q", code, out, errs)
	}
	if strings.Contains(errs, "\x1b") || !strings.Contains(errs, "RUN make") {
		t.Errorf("progress: %q", errs)
	}
	req := <-got
	if req.Name != "img" || req.File != filepath.Join(dir, "airlock.template") || req.Context != filepath.Join(dir, "ctx") {
		t.Errorf("request: %+v", req)
	}
	code, _, errs = run("build", "--data-dir", data, "--socket", filepath.Join(dir, "none.sock"), "img2")
	if code != 1 || !strings.Contains(errs, "airlock template build:") {
		t.Errorf("no daemon: %d %q", code, errs)
	}
	if s, err := template.Open(filepath.Join(data, "templates")); err == nil {
		if _, err := s.Image("img2"); err == nil {
			t.Errorf("a failed daemon build fell back to the in-process one")
		}
	}
}
