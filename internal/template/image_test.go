package template

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"github.com/airlock-dev/airlock/internal/testroot"
)

func layerTar(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for n, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	tw.Close()
	return b.Bytes()
}

func imageStore(t *testing.T) *Store {
	t.Helper()
	testroot.Need(t, "layers are unpacked as host root")
	s, err := Open(filepath.Join(t.TempDir(), "templates"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func putImage(t *testing.T, s *Store, name string, layers ...[]byte) *Image {
	t.Helper()
	img := &Image{Name: name, Kind: "image", Source: "test", Digest: "sha256:" + strings.Repeat("a", 64), Platform: "linux/amd64"}
	var ids []string
	for _, l := range layers {
		id, err := s.UnpackLayer("", bytes.NewReader(l), layertar.Limits{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		img.Layers = append(img.Layers, ImageLayer{DiffID: id})
		ids = append(ids, id)
	}
	var err error
	if img.AirlockLayer, err = s.AirlockLayer(ids); err != nil {
		t.Fatal(err)
	}
	if err := s.PutImage(img); err != nil {
		t.Fatal(err)
	}
	return img
}

// Two templates sharing a base: removing one and collecting keeps the
// shared layers, a layer a running sandbox holds survives GC until its
// hold ends, and the template store refuses a second import of a name.
func TestImageGC(t *testing.T) {
	s := imageStore(t)
	base := layerTar(t, map[string]string{"etc/os-release": "ID=test\n", "bin/sh": "sh"})
	a := putImage(t, s, "app-a", base, layerTar(t, map[string]string{"a": "a"}))
	b := putImage(t, s, "app-b", base, layerTar(t, map[string]string{"b": "b"}))
	if a.Layers[0].DiffID != b.Layers[0].DiffID {
		t.Fatal("base not shared")
	}
	if err := s.PutImage(&Image{Name: "app-a", AirlockLayer: a.AirlockLayer}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("second put of a name: %v", err)
	}
	ta, err := s.Get("app-a")
	if err != nil {
		t.Fatal(err)
	}
	release, err := s.Hold(ta)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveImage("app-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("app-a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removed template: %v", err)
	}
	res, err := s.GC()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 0 || len(res.Held) != 1 || res.Held[0] != a.Layers[1].DiffID {
		t.Errorf("GC with a hold: %+v", res)
	}
	for _, d := range append([]string{ta.Dir}, ta.Lowers...) {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("held layer gone: %v", err)
		}
	}
	release()
	// a snapshot that starts from app-a's layers keeps them
	if res, err = s.GC(ta.Lowers[0]); err != nil || len(res.Removed) != 0 {
		t.Errorf("GC with a snapshot's reference: %+v %v", res, err)
	}
	if res, err = s.GC(); err != nil || len(res.Removed) != 1 || res.Removed[0] != a.Layers[1].DiffID {
		t.Errorf("GC after release: %+v %v", res, err)
	}
	tb, err := s.Get("app-b")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append([]string{tb.Dir}, tb.Lowers...) {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("app-b's layer gone: %v", err)
		}
	}
}

// The interrupted unpack: a process killed (SIGKILL) in the middle of a
// layer leaves a partial directory under its flock; the next unpack (or
// GC) removes it, and no layer and no template exist.
func TestUnpackKilled(t *testing.T) {
	if os.Getenv("AIRLOCK_TEST_UNPACK_CHILD") != "" {
		unpackForever(os.Getenv("AIRLOCK_TEST_UNPACK_CHILD"))
		return
	}
	s := imageStore(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnpackKilled$")
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_UNPACK_CHILD="+s.Root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	partial := ""
	for deadline := time.Now().Add(20 * time.Second); partial == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m, _ := filepath.Glob(filepath.Join(s.Root, "layers", ".unpack-*", "root", "f1"))
		if len(m) == 1 {
			partial = filepath.Dir(filepath.Dir(m[0]))
		}
	}
	if partial == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child never got to unpacking")
	}
	// while it lives, a GC leaves its unpack alone
	if res, err := s.GC(); err != nil || res.Partial != 0 {
		t.Fatalf("GC during the unpack: %+v %v", res, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(partial); err != nil {
		t.Fatalf("no partial unpack after the kill: %v", err)
	}
	s2, err := Open(s.Root) // the next start
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("partial unpack still there after the next start: %v", err)
	}
	if _, err := s2.UnpackLayer("", bytes.NewReader(layerTar(t, map[string]string{"x": "y"})), layertar.Limits{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("partial unpack still there: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(s.Root, "layers"))
	if len(ents) != 1 {
		t.Errorf("layers: %v", ents)
	}
	if imgs, _ := s2.Images(); len(imgs) != 0 {
		t.Errorf("templates: %v", imgs)
	}
}

// unpackForever unpacks a layer whose stream never ends.
func unpackForever(root string) {
	s, err := Open(root)
	if err != nil {
		os.Exit(3)
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		tw.WriteHeader(&tar.Header{Name: "f1", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		tw.Write([]byte("1"))
		tw.Flush()
		select {} // and then nothing, until the kill
	}()
	s.UnpackLayer("", pr, layertar.Limits{}, nil)
	os.Exit(4)
}

// The airlock layer keeps the image's users and adds the sandbox user,
// and a whiteout of /etc/passwd in a later layer hides the base's.
func TestAirlockLayer(t *testing.T) {
	s := imageStore(t)
	img := putImage(t, s, "users", layerTar(t, map[string]string{"etc/passwd": "root:x:0:0::/root:/bin/sh\nweb:x:33:33::/var/www:/bin/sh\n"}))
	tp, err := s.Get("users")
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := os.ReadFile(filepath.Join(tp.Dir, "etc/passwd"))
	if string(pw) != "root:x:0:0::/root:/bin/sh\nweb:x:33:33::/var/www:/bin/sh\n"+sandboxPasswd+"\n" {
		t.Errorf("passwd: %q", pw)
	}
	for _, f := range []string{"etc/resolv.conf", "etc/ssl/certs/ca-certificates.crt", "proc", "dev", "tmp"} {
		if _, err := os.Stat(filepath.Join(tp.Dir, f)); err != nil {
			t.Errorf("airlock layer: %v", err)
		}
	}
	wh := putImage(t, s, "whiteout", layerTar(t, map[string]string{"etc/passwd": "web:x:33:33::/:/bin/sh\n"}), layerTar(t, map[string]string{"etc/.wh.passwd": ""}))
	tw, _ := s.Get("whiteout")
	pw, _ = os.ReadFile(filepath.Join(tw.Dir, "etc/passwd"))
	if strings.Contains(string(pw), "web:") || !strings.Contains(string(pw), "sandbox:x:1000") {
		t.Errorf("passwd below a whiteout: %q", pw)
	}
	if img.AirlockLayer == wh.AirlockLayer {
		t.Error("same airlock layer for different users")
	}
}
