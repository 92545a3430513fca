package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/testroot"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type file struct{ name, body string }

func layerOf(t *testing.T, files ...file) v1.Layer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, f.body)
	}
	tw.Close()
	data := b.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var (
	baseFiles = []file{{"etc/", ""}, {"etc/passwd", "root:x:0:0:root:/root:/bin/sh\napp:x:1001:1001::/app:/bin/sh\n"}, {"etc/group", "root:x:0:\n"}, {"bin/", ""}, {"bin/hello", "#!/bin/sh\necho hello\n"}}
	appFiles  = []file{{"app/", ""}, {"app/main.txt", "app v1\n"}}
)

func imageOf(t *testing.T, arch string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Env = []string{"PATH=/bin:/usr/bin", "APP_MODE=test"}
	cf.Config.WorkingDir = "/app"
	cf.Config.User = "root"
	cf.Config.Labels = map[string]string{"org.example.team": "infra"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

func writeLayout(t *testing.T, dir string, imgs ...v1.Image) {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		cf, _ := img.ConfigFile()
		if err := p.AppendImage(img, layout.WithPlatform(v1.Platform{OS: cf.OS, Architecture: cf.Architecture})); err != nil {
			t.Fatal(err)
		}
	}
}

// tarDir writes dir as a tar (an OCI archive of a layout).
func tarDir(t *testing.T, dir, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if rel == "." || err != nil {
			return err
		}
		h, _ := tar.FileInfoHeader(fi, "")
		h.Name = rel
		tw.WriteHeader(h)
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			tw.Write(b)
		}
		return nil
	})
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

func openStore(t *testing.T) *template.Store {
	t.Helper()
	testroot.Need(t, "layers are unpacked as host root (chown, whiteout device nodes)")
	s, err := template.Open(filepath.Join(t.TempDir(), "templates"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serveRegistry runs go-containerregistry's registry on loopback.
func serveRegistry(t *testing.T) string {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// One image, four kinds of source: each imports, the layers are stored
// once and shared, the config is recorded, airlock's layer is on top.
func TestImportEverySource(t *testing.T) {
	s := openStore(t)
	img := imageOf(t, "amd64", layerOf(t, baseFiles...), layerOf(t, appFiles...))
	dgst, _ := img.Digest()
	tmp := t.TempDir()

	lay := filepath.Join(tmp, "layout")
	writeLayout(t, lay, img)
	ociTar := filepath.Join(tmp, "image.oci.tar")
	tarDir(t, lay, ociTar)
	dockerTar := filepath.Join(tmp, "image.docker.tar")
	tag, _ := name.NewTag("example.test/app:v1")
	if err := tarball.WriteToFile(dockerTar, tag, img); err != nil {
		t.Fatal(err)
	}
	reg := serveRegistry(t)
	ref := reg + "/team/app:v1"
	rtag, _ := name.NewTag(ref)
	if err := remote.Write(rtag, img); err != nil {
		t.Fatal(err)
	}

	var lines []string
	opt := Options{Progress: func(f string, a ...any) { lines = append(lines, f) }}
	for _, c := range []struct{ name, src string }{
		{"from-layout", lay}, {"from-oci", ociTar}, {"from-docker", dockerTar},
		{"from-registry", ref}, {"from-digest", reg + "/team/app@" + dgst.String()},
	} {
		got, err := Import(context.Background(), s, c.name, c.src, opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.name != "from-docker" && got.Digest != dgst.String() {
			t.Errorf("%s: digest %s, want %s", c.name, got.Digest, dgst)
		}
		if len(got.Layers) != 2 || got.Config.WorkingDir != "/app" || got.Config.User != "root" || got.Config.Labels["org.example.team"] != "infra" {
			t.Errorf("%s: %+v", c.name, got)
		}
		tp, err := s.Get(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(tp.Lowers) != 2 || tp.WorkDir != "/app" || !contains(tp.Env, "APP_MODE=test") {
			t.Errorf("%s: template %+v", c.name, tp)
		}
		// top first: the app layer, then the base
		if b, err := os.ReadFile(filepath.Join(tp.Lowers[0], "app/main.txt")); err != nil || string(b) != "app v1\n" {
			t.Errorf("%s: app layer: %q %v", c.name, b, err)
		}
		pw, err := os.ReadFile(filepath.Join(tp.Dir, "etc/passwd"))
		if err != nil || !strings.Contains(string(pw), "app:x:1001") || !strings.Contains(string(pw), "sandbox:x:1000:1000") {
			t.Errorf("%s: airlock passwd %q %v", c.name, pw, err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(s.Root, "layers"))
	if len(ents) != 3 { // two image layers and one airlock layer, shared by all five
		t.Errorf("layers stored: %d, want 3", len(ents))
	}
	shared := 0
	for _, l := range lines {
		if strings.Contains(l, "shared") {
			shared++
		}
	}
	if shared != 8 {
		t.Errorf("%d layer imports found the layer stored, want 8", shared)
	}
	if _, err := Import(context.Background(), s, "from-layout", lay, Options{}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("re-import of a name: %v", err)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// An index: linux/amd64 is chosen; an index or image of another
// architecture only is refused, and leaves nothing.
func TestImportPlatform(t *testing.T) {
	s := openStore(t)
	arm := imageOf(t, "arm64", layerOf(t, file{"arm.txt", "arm"}))
	amd := imageOf(t, "amd64", layerOf(t, file{"amd.txt", "amd"}))
	both := filepath.Join(t.TempDir(), "both")
	writeLayout(t, both, arm, amd)
	got, err := Import(context.Background(), s, "multi", both, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := amd.Digest(); got.Digest != d.String() {
		t.Errorf("picked %s, want the amd64 %s", got.Digest, d)
	}
	armOnly := filepath.Join(t.TempDir(), "arm")
	writeLayout(t, armOnly, arm)
	if _, err := Import(context.Background(), s, "arm", armOnly, Options{}); !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "linux/arm64") {
		t.Errorf("arm64 index: %v", err)
	}
	// a registry image (no index) whose config says arm64
	reg := serveRegistry(t)
	tag, _ := name.NewTag(reg + "/x/arm:1")
	if err := remote.Write(tag, arm); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(context.Background(), s, "arm2", tag.String(), Options{}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("arm64 image: %v", err)
	}
	if _, err := s.Image("arm"); err == nil {
		t.Error("an arm template exists")
	}
}

// Tampered content: a manifest, a config and a layer blob whose bytes no
// longer match their digests. Each import fails, no template, no layer.
func TestImportTampered(t *testing.T) {
	img := imageOf(t, "amd64", layerOf(t, file{"a.txt", "original content"}))
	m, _ := img.Manifest()
	dgst, _ := img.Digest()
	for _, c := range []struct{ what, digest, want string }{
		{"manifest", dgst.Hex, "not its digest"},
		{"config", m.Config.Digest.Hex, "not the manifest's"},
		{"layer blob", m.Layers[0].Digest.Hex, "not its digest"},
		{"layer content", m.Layers[0].Digest.Hex, "not its recorded diffID"},
	} {
		t.Run(c.what, func(t *testing.T) {
			s := openStore(t)
			lay := filepath.Join(t.TempDir(), "l")
			writeLayout(t, lay, img)
			blob := filepath.Join(lay, "blobs", "sha256", c.digest)
			b, err := os.ReadFile(blob)
			if err != nil {
				t.Fatal(err)
			}
			switch c.what {
			case "layer blob": // the same tar, gzipped anew: only the blob's digest tells
				b = regzip(t, b)
			case "layer content": // another valid tar
				b = gzipOf(t, rawTar(t, tarEnt{name: "a.txt", body: "evil content"}))
			default:
				b = bytes.Replace(b, []byte("{"), []byte("{ "), 1)
			}
			if err := os.WriteFile(blob, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Import(context.Background(), s, "tampered", lay, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("import: %v, want %q", err, c.want)
			}
			assertEmpty(t, s)
		})
	}
}

func gzipOf(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Comment = "re-packed"
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func regzip(t *testing.T, blob []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return gzipOf(t, raw)
}

// assertEmpty: no template, no layer, no partial unpack.
func assertEmpty(t *testing.T, s *template.Store) {
	t.Helper()
	if imgs, _ := s.Images(); len(imgs) != 0 {
		t.Errorf("templates left: %v", imgs)
	}
	ents, _ := os.ReadDir(filepath.Join(s.Root, "layers"))
	for _, e := range ents {
		t.Errorf("left in layers/: %s", e.Name())
	}
	ents, _ = os.ReadDir(s.Root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".unpack-") {
			t.Errorf("left: %s", e.Name())
		}
	}
}

// A malicious image (a layer that climbs out with .., through a symlink
// or by hard link) served by a registry: refused, nothing written
// outside, no template.
func TestImportMaliciousImage(t *testing.T) {
	reg := serveRegistry(t)
	for i, ents := range [][]tarEnt{
		{{name: "../../../../tmp/airlock-oci-pwned", body: "x"}},
		{{name: "l", link: "/tmp", typ: tar.TypeSymlink}, {name: "l/airlock-oci-pwned", body: "x"}},
		{{name: "h", link: "../../../../etc/passwd", typ: tar.TypeLink}},
		{{name: "dev/sda", typ: tar.TypeBlock}},
	} {
		s := openStore(t)
		img := imageOf(t, "amd64", rawLayer(t, ents...))
		tag, _ := name.NewTag(reg + "/evil/img:" + string(rune('a'+i)))
		if err := remote.Write(tag, img); err != nil {
			t.Fatal(err)
		}
		if _, err := Import(context.Background(), s, "evil", tag.String(), Options{}); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("case %d: %v", i, err)
		}
		if _, err := os.Lstat("/tmp/airlock-oci-pwned"); err == nil {
			t.Fatalf("case %d wrote outside the store", i)
		}
		assertEmpty(t, s)
	}
}

type tarEnt struct {
	name, link, body string
	typ              byte
}

func rawLayer(t *testing.T, ents ...tarEnt) v1.Layer {
	data := rawTar(t, ents...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func rawTar(t *testing.T, ents ...tarEnt) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range ents {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		tw.WriteHeader(&tar.Header{Name: e.name, Linkname: e.link, Typeflag: typ, Mode: 0o644, Size: int64(len(e.body))})
		io.WriteString(tw, e.body)
	}
	tw.Close()
	return b.Bytes()
}

// A registry that answers too slowly (the caller's deadline ends the
// pull) or with garbage: an error, nothing left.
func TestImportBadRegistry(t *testing.T) {
	s := openStore(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer slow.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := Import(ctx, s, "slow", strings.TrimPrefix(slow.URL, "http://")+"/a/b:1", Options{})
	if err == nil || time.Since(t0) > 5*time.Second {
		t.Errorf("slow registry: %v after %s", err, time.Since(t0))
	}
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") {
			w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
			w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("0", 64))
		}
		io.WriteString(w, "\x00\xffnot json{{{")
	}))
	defer garbage.Close()
	if _, err := Import(context.Background(), s, "garbage", strings.TrimPrefix(garbage.URL, "http://")+"/a/b:1", Options{}); err == nil {
		t.Error("garbage registry: no error")
	}
	assertEmpty(t, s)
}

// An OCI archive that carries anything but a layout's files (a path that
// climbs out, a symlink, an odd blob name) is refused, leaving nothing.
func TestImportOCIArchiveRefused(t *testing.T) {
	for _, ents := range [][]tarEnt{
		{{name: "oci-layout", body: `{"imageLayoutVersion":"1.0.0"}`}, {name: "../../escape", body: "x"}},
		{{name: "oci-layout", body: `{"imageLayoutVersion":"1.0.0"}`}, {name: "index.json", link: "/etc/passwd", typ: tar.TypeSymlink}},
		{{name: "oci-layout", body: `{"imageLayoutVersion":"1.0.0"}`}, {name: "blobs/sha256/../../x", body: "x"}},
	} {
		s := openStore(t)
		p := filepath.Join(t.TempDir(), "a.tar")
		if err := os.WriteFile(p, rawTar(t, ents...), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Import(context.Background(), s, "arch", p, Options{}); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%v: %v", ents[1].name, err)
		}
		assertEmpty(t, s)
	}
}
