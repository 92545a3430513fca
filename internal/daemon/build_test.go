package daemon

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"github.com/airlock-dev/airlock/internal/testroot"
	"github.com/airlock-dev/airlock/sdk"
)

// The daemon serves template builds into its own store: a build over its
// socket (the SDK's BuildTemplate) makes the template there, with its
// provenance; a rebuild is the same template from the cache.
func TestServeBuildsTemplates(t *testing.T) {
	testroot.Need(t, "the native backend and layers unpacked as host root")
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	tpls, err := template.Open(filepath.Join(data, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	_ = tw.WriteHeader(&tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.Close()
	id, err := tpls.UnpackLayer("", &b, layertar.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	img := &template.Image{Name: "base", Kind: "image", Source: "test", Digest: "sha256:" + strings.Repeat("a", 64), Platform: "linux/amd64", Layers: []template.ImageLayer{{DiffID: id}}}
	if img.AirlockLayer, err = tpls.AirlockLayer([]string{id}); err != nil {
		t.Fatal(err)
	}
	if err := tpls.PutImage(img); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	var log strings.Builder
	d, err := New(context.Background(), Config{Socket: sock, StateDir: filepath.Join(dir, "state"), DataDir: data, NoEgress: true, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx) }()
	defer func() {
		cancel()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Error("serve did not end")
		}
	}()
	file := filepath.Join(dir, "airlock.template")
	if err := os.WriteFile(file, []byte("FROM base\nENV K=V\nWORKDIR /opt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := sdk.New(sdk.WithSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.BuildTemplate(context.Background(), "built", file, "", nil)
	if err != nil || got.Template.Name != "built" || got.Template.Kind != "build" || got.Built != 2 {
		t.Fatalf("build: %+v %v", got, err)
	}
	again, err := c.BuildTemplate(context.Background(), "built", file, "", func(string) {})
	if err != nil || !again.Same || again.Cached != 2 || again.Template.Version != got.Template.Version {
		t.Fatalf("rebuild: %+v %v", again, err)
	}
	if bi, err := tpls.Image("built"); err != nil || bi.Build == nil || bi.Build.BaseHash != img.Hash {
		t.Errorf("the daemon's store: %+v %v", bi, err)
	}
}
