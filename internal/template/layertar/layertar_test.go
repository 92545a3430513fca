package layertar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/testroot"
	"golang.org/x/sys/unix"
)

type ent struct {
	name, link string
	typ        byte
	mode       int64
	body       string
	size       int64 // when set: declared size, no body written
}

func mkTar(t testing.TB, ents ...ent) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, ModTime: time.Unix(1700000000, 0)}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if e.size > 0 {
			h.Size = e.size
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.size > 0 {
			tw.Flush()
			return b.Bytes() // a header promising more than follows
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sandbox makes a scratch dir with the layer dir and a sibling "outside"
// tree the attacks aim at; it reports anything that appeared outside.
func sandbox(t *testing.T) (layer string, check func()) {
	t.Helper()
	top := t.TempDir()
	layer = filepath.Join(top, "layers", "l")
	outside := filepath.Join(top, "outside")
	for _, d := range []string{layer, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("orig"), 0o644); err != nil {
		t.Fatal(err)
	}
	return layer, func() {
		t.Helper()
		ents, _ := os.ReadDir(outside)
		if len(ents) != 1 {
			t.Errorf("outside dir changed: %v", ents)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "orig" {
			t.Errorf("victim changed: %q", b)
		}
		top := filepath.Dir(filepath.Dir(layer))
		if ents, _ := os.ReadDir(top); len(ents) != 2 {
			t.Errorf("new entries next to the layers: %v", ents)
		}
		if ents, _ := os.ReadDir(filepath.Dir(layer)); len(ents) != 1 {
			t.Errorf("new entries next to the layer: %v", ents)
		}
	}
}

// Each attack is a crafted layer that tries to write outside its layer
// directory (or to bring something the host must not hold); each must be
// refused and leave nothing outside.
func TestAttackLayersRefused(t *testing.T) {
	testroot.Need(t, "chown to root, mknod of whiteouts")
	cases := []struct {
		name string
		ents []ent
		want string
	}{
		{"dotdot", []ent{{name: "../outside/victim", body: "pwned"}}, "climbs"},
		{"dotdot inside", []ent{{name: "a/../../outside/victim", body: "pwned"}}, "climbs"},
		{"absolute", []ent{{name: "/tmp/airlock-layertar-pwned", body: "x"}}, "absolute"},
		{"symlink then write through", []ent{{name: "esc", typ: tar.TypeSymlink, link: "../../outside"}, {name: "esc/victim", body: "pwned"}}, "not a directory"},
		{"absolute symlink then write through", []ent{{name: "esc", typ: tar.TypeSymlink, link: "/"}, {name: "esc/tmp/airlock-pwned", body: "x"}}, "not a directory"},
		{"symlink replaced then dir below", []ent{{name: "d", typ: tar.TypeSymlink, link: "/etc"}, {name: "d/", typ: tar.TypeDir, mode: 0o755}}, "directory over"},
		{"hardlink outside", []ent{{name: "h", typ: tar.TypeLink, link: "../outside/victim"}}, "not inside"},
		{"hardlink absolute", []ent{{name: "h", typ: tar.TypeLink, link: "/etc/shadow"}}, "not inside"},
		{"hardlink through symlink", []ent{{name: "s", typ: tar.TypeSymlink, link: "../../outside"}, {name: "h", typ: tar.TypeLink, link: "s/victim"}}, "no regular file"},
		{"hardlink to symlink", []ent{{name: "s", typ: tar.TypeSymlink, link: "/etc/shadow"}, {name: "h", typ: tar.TypeLink, link: "s"}}, "no regular file"},
		{"hardlink to lower layer", []ent{{name: "h", typ: tar.TypeLink, link: "usr/bin/sudo"}}, "no regular file"},
		{"char device", []ent{{name: "dev/kmem", typ: tar.TypeChar, mode: 0o666}}, "device"},
		{"block device", []ent{{name: "sda", typ: tar.TypeBlock, mode: 0o666}}, "device"},
		{"opaque at root", []ent{{name: ".wh..wh..opq"}}, "layer root"},
		{"unknown meta whiteout", []ent{{name: "a/.wh..wh..plnk"}}, "meta"},
		{"whiteout of dotdot", []ent{{name: "a/.wh..."}}, "no name"},
		{"whiteout of own file", []ent{{name: "a/f", body: "x"}, {name: "a/.wh.f"}}, "same layer made"},
		{"whiteout of own dir", []ent{{name: "a/d/f", body: "x"}, {name: "a/.wh.d"}}, "same layer"},
		{"write below whiteout", []ent{{name: "a/.wh.d"}, {name: "a/d/f", body: "x"}}, "whited out"},
		{"opaque in a file", []ent{{name: "f", body: "x"}, {name: "f/.wh..wh..opq"}}, "non-directory"},
		{"file over own dir", []ent{{name: "d/", typ: tar.TypeDir, mode: 0o755}, {name: "d", body: "x"}}, "replaces a directory"},
		{"root not a dir", []ent{{name: "./", typ: tar.TypeSymlink, link: "/"}}, "root"},
		{"unclean", []ent{{name: "a//b", body: "x"}}, "not clean"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			layer, check := sandbox(t)
			_, err := Unpack(layer, bytes.NewReader(mkTar(t, c.ents...)), Limits{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Unpack: %v, want an error with %q", err, c.want)
			}
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("not ErrInvalid: %v", err)
			}
			check()
			if _, err := os.Lstat("/tmp/airlock-layertar-pwned"); err == nil {
				t.Error("wrote an absolute path on the host")
			}
		})
	}
}

// A decompression bomb and an over-cap layer end with a limit error
// before the bytes are read, and so does a layer of too many entries.
func TestLimits(t *testing.T) {
	testroot.Need(t, "chown to root, mknod of whiteouts")
	layer, check := sandbox(t)
	_, err := Unpack(layer, bytes.NewReader(mkTar(t, ent{name: "bomb", size: 1 << 40})), Limits{MaxBytes: 1 << 20})
	if !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Fatalf("bomb: %v", err)
	}
	big := strings.Repeat("x", 600<<10)
	_, err = Unpack(t.TempDir(), bytes.NewReader(mkTar(t, ent{name: "a", body: big}, ent{name: "b", body: big})), Limits{MaxBytes: 1 << 20})
	if !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Fatalf("two files over the cap: %v", err)
	}
	var many []ent
	for i := 0; i < 20; i++ {
		many = append(many, ent{name: "f" + strings.Repeat("x", i)})
	}
	if _, err := Unpack(t.TempDir(), bytes.NewReader(mkTar(t, many...)), Limits{MaxEntries: 10}); !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Fatalf("entries: %v", err)
	}
	// long names, which the unpack keeps, are bounded too
	var long []ent
	for i := 0; i < 20; i++ {
		long = append(long, ent{name: strings.Repeat("d", 200) + "/" + strings.Repeat("f", i+1)})
	}
	if _, err := Unpack(t.TempDir(), bytes.NewReader(mkTar(t, long...)), Limits{MaxNameBytes: 2000}); !errors.Is(err, errdefs.ErrLimitExceeded) || !strings.Contains(err.Error(), "names") {
		t.Fatalf("names: %v", err)
	}
	check()
}

// A normal layer: files, dirs, symlinks (absolute targets kept, never
// followed), hard links, whiteouts and opaque dirs in overlayfs form,
// setuid dropped, everything owned by host root.
func TestUnpackLayer(t *testing.T) {
	testroot.Need(t, "chown to root, mknod of whiteouts")
	layer, check := sandbox(t)
	st, err := Unpack(layer, bytes.NewReader(mkTar(t,
		ent{name: "./", typ: tar.TypeDir, mode: 0o755},
		ent{name: "usr/bin/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "usr/bin/tool", body: "#!/bin/sh\n", mode: 0o4755},
		ent{name: "usr/bin/alias", typ: tar.TypeLink, link: "usr/bin/tool"},
		ent{name: "etc/alternatives/x", typ: tar.TypeSymlink, link: "/usr/bin/tool"},
		ent{name: "etc/.wh.old.conf"},
		ent{name: "var/cache/.wh..wh..opq"},
		ent{name: "var/cache/new", body: "n"},
		ent{name: "tmp/", typ: tar.TypeDir, mode: 0o1777},
		ent{name: "run/fifo", typ: tar.TypeFifo, mode: 0o600},
	)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	check()
	fi, err := os.Stat(filepath.Join(layer, "usr/bin/tool"))
	if err != nil || fi.Mode().Perm() != 0o755 || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("tool: %v %v", fi.Mode(), err)
	}
	if st.SetIDCount != 1 || st.Hardlinks != 1 || st.Whiteouts != 1 || st.Opaques != 1 || st.Symlinks != 1 {
		t.Errorf("stats: %+v", st)
	}
	var s unix.Stat_t
	if err := unix.Stat(filepath.Join(layer, "usr/bin/alias"), &s); err != nil || s.Nlink != 2 || s.Uid != 0 {
		t.Errorf("hard link: %+v %v", s, err)
	}
	if l, err := os.Readlink(filepath.Join(layer, "etc/alternatives/x")); err != nil || l != "/usr/bin/tool" {
		t.Errorf("symlink: %q %v", l, err)
	}
	if err := unix.Lstat(filepath.Join(layer, "etc/old.conf"), &s); err != nil || s.Mode&unix.S_IFMT != unix.S_IFCHR || s.Rdev != 0 {
		t.Errorf("whiteout: %+v %v", s, err)
	}
	for _, x := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		buf := make([]byte, 4)
		if n, err := unix.Getxattr(filepath.Join(layer, "var/cache"), x, buf); err != nil || string(buf[:n]) != "y" {
			t.Errorf("%s: %q %v", x, buf[:n], err)
		}
	}
	if fi, err := os.Stat(filepath.Join(layer, "tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("tmp: %v %v", fi.Mode(), err)
	}
}
