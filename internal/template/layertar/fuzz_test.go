package layertar

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/internal/testroot"
)

// FuzzUnpack: whatever the tar stream, accepted or refused, nothing is
// written outside the layer directory, and what the layer keeps is
// inert: no setuid or setgid file, no device but a 0/0 whiteout, all
// owned by root. The seeds are the attack layers of this package's
// tests. (go test -fuzz FuzzUnpack ./internal/template/layertar/, as
// root.)
func FuzzUnpack(f *testing.F) {
	seeds := [][]ent{
		{{name: "../outside/victim", body: "pwned"}},
		{{name: "esc", typ: tar.TypeSymlink, link: "../../outside"}, {name: "esc/victim", body: "pwned"}},
		{{name: "h", typ: tar.TypeLink, link: "../outside/victim"}},
		{{name: "s", typ: tar.TypeSymlink, link: "../../outside"}, {name: "h", typ: tar.TypeLink, link: "s/victim"}},
		{{name: "dev/kmem", typ: tar.TypeChar, mode: 0o666}},
		{{name: "a/.wh..."}, {name: "a/.wh..wh..opq"}, {name: ".wh..wh..opq"}},
		{{name: "usr/bin/tool", body: "x", mode: 0o6755}, {name: "usr/bin/alias", typ: tar.TypeLink, link: "usr/bin/tool"}},
		{{name: "d", typ: tar.TypeSymlink, link: "/etc"}, {name: "d/", typ: tar.TypeDir, mode: 0o755}},
	}
	for _, s := range seeds {
		f.Add(mkTar(f, s...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		testroot.Need(t, "chown to root, mknod of whiteouts")
		layer, check := sandbox(t)
		_, _ = Unpack(layer, bytes.NewReader(data), Limits{MaxBytes: 1 << 20, MaxEntries: 1000})
		check()
		if _, err := os.Lstat("/tmp/airlock-layertar-pwned"); err == nil {
			t.Error("wrote an absolute path on the host")
		}
		filepath.WalkDir(layer, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			st := fi.Sys().(*syscall.Stat_t)
			if st.Uid != 0 || st.Gid != 0 {
				t.Errorf("%s owned by %d:%d", p, st.Uid, st.Gid)
			}
			if fi.Mode().IsRegular() && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Errorf("%s kept setuid/setgid", p)
			}
			if fi.Mode()&fs.ModeDevice != 0 && (fi.Mode()&fs.ModeCharDevice == 0 || st.Rdev != 0) {
				t.Errorf("%s is a device node", p)
			}
			return nil
		})
	})
}
