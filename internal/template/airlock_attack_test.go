package template

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/template/layertar"
)

func symlinkLayer(t *testing.T, name, target string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Linkname: target, Typeflag: tar.TypeSymlink, Mode: 0o777}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An image whose etc (or etc/ssl/certs) is a symlink out of its layer,
// absolute or climbing: the airlock layer is made from what the image's
// own tree holds, never from the host files the link names when it is
// followed on the host.
func TestAttackAirlockLayerReadsNoHostFile(t *testing.T) {
	s := imageStore(t)
	host := t.TempDir()
	marker := "HOST-SECRET-" + strings.Repeat("x", 8)
	for _, d := range []string{"etc", "certs"} {
		if err := os.MkdirAll(filepath.Join(host, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"etc/passwd", "etc/group", "certs/ca-certificates.crt"} {
		if err := os.WriteFile(filepath.Join(host, f), []byte("root:x:0:0:"+marker+":/:/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	climb := strings.Repeat("../", 40) + strings.TrimPrefix(host, "/")
	for _, c := range []struct{ name, link string }{
		{"etc", filepath.Join(host, "etc")},
		{"etc", climb + "/etc"},
		{"etc/ssl/certs", filepath.Join(host, "certs")},
	} {
		t.Run(c.name+" -> "+c.link, func(t *testing.T) {
			id, err := s.UnpackLayer("", bytes.NewReader(symlinkLayer(t, c.name, c.link)), layertar.Limits{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			al, err := s.AirlockLayer([]string{id})
			if err != nil {
				t.Fatalf("airlock layer: %v", err)
			}
			root, _ := s.LayerRoot(al)
			filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					if b, _ := os.ReadFile(p); strings.Contains(string(b), marker) {
						t.Errorf("ESCAPE: the airlock layer's %s holds a host file's content", p)
					}
				}
				return nil
			})
			pw, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
			if !strings.Contains(string(pw), "sandbox:x:1000:1000") {
				t.Errorf("airlock passwd %q has no sandbox user", pw)
			}
		})
	}
}

// The walk that replaced the host-following one still merges as overlayfs
// does: a lower layer's file shows through an upper layer's directory, an
// opaque directory or a whiteout of a parent hides it.
func TestLookupFileMerges(t *testing.T) {
	s := imageStore(t)
	lower := layerTar(t, map[string]string{"etc/passwd": "lower:x:7:7::/:/bin/sh\n"})
	other := layerTar(t, map[string]string{"etc/hostname": "x\n"})
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "etc/.wh..wh..opq", Typeflag: tar.TypeReg, Mode: 0o644})
	tw.WriteHeader(&tar.Header{Name: "etc/hostname", Typeflag: tar.TypeReg, Mode: 0o644})
	tw.Close()
	opaque := b.Bytes()
	b = bytes.Buffer{}
	tw = tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: ".wh.etc", Typeflag: tar.TypeReg, Mode: 0o644})
	tw.Close()
	whiteout := b.Bytes()
	var ids []string
	for _, l := range [][]byte{lower, other, opaque, whiteout} {
		id, err := s.UnpackLayer("", bytes.NewReader(l), layertar.Limits{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, c := range []struct {
		layers []string
		want   string
	}{
		{ids[:1], "lower:x:7:7::/:/bin/sh\n"},
		{ids[:2], "lower:x:7:7::/:/bin/sh\n"},
		{ids[:3], ""},
		{[]string{ids[0], ids[3]}, ""},
	} {
		got, err := s.ReadLayerFile(c.layers, "etc/passwd", 1<<20)
		if err != nil || string(got) != c.want {
			t.Errorf("%d layers: %q %v, want %q", len(c.layers), got, err, c.want)
		}
	}
	if _, err := s.ReadLayerFile(ids[:1], "etc/passwd", 4); err == nil {
		t.Error("a file over the cap was read")
	}
}

// An image whose passwd names the sandbox user with uid 0 (and group 0):
// the airlock layer drops that line for its own uid-1000 one, so the name
// says what the kernel does (commands run as uid 1000 anyway).
func TestAttackSandboxUserClaimsRoot(t *testing.T) {
	s := imageStore(t)
	img := putImage(t, s, "claims-root", layerTar(t, map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nsandbox:x:0:0:sandbox:/root:/bin/sh\n",
		"etc/group":  "root:x:0:sandbox\nsandbox:x:0:\n",
	}))
	root, _ := s.LayerRoot(img.AirlockLayer)
	pw, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
	gr, _ := os.ReadFile(filepath.Join(root, "etc/group"))
	if strings.Contains(string(pw), "sandbox:x:0:") || !strings.Contains(string(pw), "\nsandbox:x:1000:1000:") {
		t.Errorf("passwd %q", pw)
	}
	if strings.Contains(string(gr), "sandbox:x:0:") || !strings.Contains(string(gr), "\nsandbox:x:1000:") {
		t.Errorf("group %q", gr)
	}
}
