// Package hostileimage builds, for tests only, the container images of
// the import escape tests (issue 21): layers crafted to gain privilege in
// a sandbox or to reach the host, written by this program (never by a
// shell). Accepted is the image an import must take, everything hostile
// in it neutralised (the sandbox tests run it); Refused are the images an
// import must refuse with a clear error. It builds images only: the
// tests import them (package template/oci) and run them.
package hostileimage

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"
)

// Ent is one tar entry of a crafted layer.
type Ent struct {
	Name, Link string
	Type       byte
	Mode       int64
	UID, GID   int
	Body       []byte
	Xattrs     map[string]string // as PAX SCHILY.xattr records
	// SparseSize, when set, makes a GNU sparse (PAX 1.0) file of that
	// real size holding Body at offset 0: a few bytes in the archive.
	SparseSize int64
	Dev        int64 // device major and minor (char and block nodes)
}

// FullCaps is a security.capability xattr (vfs_cap_data revision 2)
// granting every capability, effective at exec.
func FullCaps() string {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], 0x02000000|0x1) // VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE
	binary.LittleEndian.PutUint32(b[4:], 0xffffffff)     // permitted, low 32
	binary.LittleEndian.PutUint32(b[12:], 0xffffffff)    // permitted, high 32
	return string(b)
}

// Tar writes ents as one layer tar.
func Tar(ents ...Ent) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	mt := time.Unix(1700000000, 0)
	for _, e := range ents {
		if e.SparseSize > 0 {
			if err := tw.Flush(); err != nil {
				return nil, err
			}
			if err := writeSparse(&b, e); err != nil {
				return nil, err
			}
			continue
		}
		h := &tar.Header{Name: e.Name, Linkname: e.Link, Typeflag: e.Type, Mode: e.Mode, Uid: e.UID, Gid: e.GID, ModTime: mt, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		if e.Type == tar.TypeChar || e.Type == tar.TypeBlock {
			h.Devmajor, h.Devminor = e.Dev>>8, e.Dev&0xff
		}
		if len(e.Xattrs) > 0 {
			h.PAXRecords = map[string]string{}
			for k, v := range e.Xattrs {
				h.PAXRecords["SCHILY.xattr."+k] = v
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name, err)
		}
		if _, err := tw.Write(e.Body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeSparse writes a GNU sparse file, format 1.0 (PAX records and a
// map at the start of the data), by hand: archive/tar reads the format
// but does not write it.
func writeSparse(w io.Writer, e Ent) error {
	recs := ""
	for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"}, {"GNU.sparse.name", e.Name},
		{"GNU.sparse.realsize", strconv.FormatInt(e.SparseSize, 10)}} {
		recs += paxRecord(kv[0], kv[1])
	}
	data := pad([]byte(fmt.Sprintf("1\n0\n%d\n", len(e.Body))))
	data = append(data, e.Body...)
	dir, file := filepath.Split(e.Name)
	for _, blk := range [][]byte{
		ustar("PaxHeaders/"+file, 'x', int64(len(recs)), 0o644), pad([]byte(recs)),
		ustar(dir+"GNUSparseFile.0/"+file, '0', int64(len(data)), 0o644), pad(data),
	} {
		if _, err := w.Write(blk); err != nil {
			return err
		}
	}
	return nil
}

// paxRecord is "LEN key=value\n", LEN counting itself.
func paxRecord(k, v string) string {
	n := len(k) + len(v) + 3
	for l := len(strconv.Itoa(n)); ; l++ {
		if m := n + l; len(strconv.Itoa(m)) == l {
			return fmt.Sprintf("%d %s=%s\n", m, k, v)
		}
	}
}

func pad(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}

// ustar is one ustar header block.
func ustar(name string, typ byte, size, mode int64) []byte {
	h := make([]byte, 512)
	copy(h[0:100], name)
	copy(h[100:108], fmt.Sprintf("%07o", mode))
	copy(h[108:116], "0000000")
	copy(h[116:124], "0000000")
	copy(h[124:136], fmt.Sprintf("%011o", size))
	copy(h[136:148], fmt.Sprintf("%011o", 1700000000))
	h[156] = typ
	copy(h[257:265], "ustar\x0000")
	copy(h[148:156], "        ")
	sum := 0
	for _, c := range h {
		sum += int(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return h
}

// Layer is a crafted tar as an uncompressed-then-gzipped image layer.
func Layer(ents ...Ent) (v1.Layer, error) {
	data, err := Tar(ents...)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// Image stacks layers (bottom first) into a linux/amd64 image whose
// config is cfg's.
func Image(cfg v1.Config, layers ...v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", "amd64", cfg
	return mutate.ConfigFile(img, cf)
}

// WriteLayout writes img as an OCI image layout in dir.
func WriteLayout(dir string, img v1.Image) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
}

// Bait is a host directory the hostile links aim at, with a file whose
// content (Marker) must never be seen in a sandbox nor changed.
type Bait struct {
	Dir, Marker string
}

// NewBait makes the bait directory (mode 0755: readable by anyone who
// could reach it) under parent.
func NewBait(parent, marker string) (*Bait, error) {
	d, err := os.MkdirTemp(parent, "bait-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(d, 0o755); err != nil {
		return nil, err
	}
	for _, f := range []string{"bait", "passwd", "group", "ca-certificates.crt"} {
		if err := os.WriteFile(filepath.Join(d, f), []byte(marker+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return &Bait{Dir: d, Marker: marker}, nil
}

// Intact reports what changed in the bait directory.
func (b *Bait) Intact() error {
	ents, err := os.ReadDir(b.Dir)
	if err != nil {
		return err
	}
	if len(ents) != 4 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return fmt.Errorf("bait dir holds %v, want its 4 files", names)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(b.Dir, e.Name()))
		if err != nil || string(data) != b.Marker+"\n" {
			return fmt.Errorf("bait %s changed: %q %v", e.Name(), data, err)
		}
	}
	return nil
}

// Climb is a relative symlink target from anywhere up to the host root
// and down to abs (more ".." than any layer path is deep).
func Climb(abs string) string {
	return strings.Repeat("../", 64) + strings.TrimPrefix(abs, "/")
}

// LdPreload is the image config's preload, a file of the image that is
// no library.
const LdPreload = "/lib/evil.so"

// Accepted is the hostile image an import takes, every hostile part of it
// neutralised: probe (a static binary) as a setuid and setgid root binary
// with every file capability, and a hard link to it; an /etc/passwd and
// group in which the sandbox user is uid and gid 0; symlinks, absolute
// and climbing, to the bait directory (also where airlock's own files
// go: etc, etc/ssl, the home, the workspace); overlay xattrs that would
// redirect a directory; whiteouts and an opaque directory of names
// airlock needs; a fifo; a sparse file; and a config whose user is root
// with an LD_PRELOAD. With etcLink a top layer makes etc itself a
// symlink to the bait (whose passwd and group airlock must not take for
// the image's).
//
// below are put at the bottom of the image (AgentLibs).
func Accepted(probe []byte, bait *Bait, etcLink bool, below ...v1.Layer) (v1.Image, error) {
	redirect := map[string]string{"user.overlay.redirect": bait.Dir, "trusted.overlay.redirect": bait.Dir,
		"trusted.overlay.origin": "x", "user.overlay.metacopy": ""}
	base, err := Layer(
		Ent{Name: "bin/", Type: tar.TypeDir, Mode: 0o755},
		Ent{Name: "bin/probe", Mode: 0o6755, Body: probe, Xattrs: map[string]string{"security.capability": FullCaps()}},
		Ent{Name: "bin/probe-hard", Type: tar.TypeLink, Link: "bin/probe"},
		Ent{Name: "etc/", Type: tar.TypeDir, Mode: 0o755},
		Ent{Name: "etc/passwd", Body: []byte("root:x:0:0:root:/root:/bin/sh\nsandbox:x:0:0:sandbox:/root:/bin/sh\n")},
		Ent{Name: "etc/group", Body: []byte("root:x:0:sandbox\nsandbox:x:0:\n")},
		Ent{Name: "lib/evil.so", Mode: 0o755, Body: []byte("\x7fELF not a library")},
		Ent{Name: "escape-abs", Type: tar.TypeSymlink, Link: bait.Dir},
		Ent{Name: "escape-rel", Type: tar.TypeSymlink, Link: Climb(bait.Dir)},
		Ent{Name: "escape-root", Type: tar.TypeSymlink, Link: "/"},
		Ent{Name: "redirected/", Type: tar.TypeDir, Mode: 0o755, Xattrs: redirect},
		Ent{Name: "run/fifo", Type: tar.TypeFifo, Mode: 0o666},
		Ent{Name: "sparse", Body: []byte("SPARSE-DATA"), SparseSize: 8 << 20},
	)
	if err != nil {
		return nil, err
	}
	over, err := Layer(
		Ent{Name: ".wh.tmp"}, Ent{Name: ".wh.proc"},
		Ent{Name: "var/.wh..wh..opq"},
		Ent{Name: "etc/ssl", Type: tar.TypeSymlink, Link: bait.Dir},
		Ent{Name: "home/sandbox", Type: tar.TypeSymlink, Link: Climb(bait.Dir)},
		Ent{Name: "workspace", Type: tar.TypeSymlink, Link: bait.Dir},
	)
	if err != nil {
		return nil, err
	}
	layers := append(below, base, over)
	if etcLink {
		top, err := Layer(Ent{Name: "etc", Type: tar.TypeSymlink, Link: bait.Dir})
		if err != nil {
			return nil, err
		}
		layers = append(layers, top)
	}
	return Image(v1.Config{User: "0:0", Env: []string{"PATH=/bin", "LD_PRELOAD=" + LdPreload}, WorkingDir: "/"}, layers...)
}

// Case is an image an import must refuse: its error holds Want.
type Case struct {
	Name  string
	Image v1.Image
	Want  string
}

// Refused are the images an import refuses, each for one hostile entry
// (bait: the host directory they aim at).
func Refused(bait *Bait) ([]Case, error) {
	victim := filepath.Join(bait.Dir, "bait")
	var out []Case
	for _, c := range []struct {
		name string
		ents []Ent
		want string
	}{
		{"dotdot name", []Ent{{Name: "../../../../" + strings.TrimPrefix(victim, "/"), Body: []byte("pwned")}}, "climbs"},
		{"absolute name", []Ent{{Name: victim, Body: []byte("pwned")}}, "absolute"},
		{"write through an absolute symlink", []Ent{{Name: "l", Type: tar.TypeSymlink, Link: bait.Dir}, {Name: "l/bait", Body: []byte("pwned")}}, "not a directory"},
		{"write through a climbing symlink", []Ent{{Name: "l", Type: tar.TypeSymlink, Link: Climb(bait.Dir)}, {Name: "l/new", Body: []byte("pwned")}}, "not a directory"},
		{"hardlink outside", []Ent{{Name: "h", Type: tar.TypeLink, Link: Climb(victim)}}, "not inside"},
		{"hardlink absolute", []Ent{{Name: "h", Type: tar.TypeLink, Link: victim}}, "not inside"},
		{"hardlink through a symlink", []Ent{{Name: "l", Type: tar.TypeSymlink, Link: bait.Dir}, {Name: "h", Type: tar.TypeLink, Link: "l/bait"}}, "no regular file"},
		{"char device", []Ent{{Name: "dev/mem", Type: tar.TypeChar, Mode: 0o666, Dev: 1<<8 | 1}}, "device"},
		{"block device", []Ent{{Name: "dev/sda", Type: tar.TypeBlock, Mode: 0o666, Dev: 8 << 8}}, "device"},
		{"whiteout climbing", []Ent{{Name: "../.wh." + filepath.Base(bait.Dir)}}, "climbs"},
		{"whiteout of dotdot", []Ent{{Name: "a/.wh..."}}, "no name"},
		{"whiteout absolute", []Ent{{Name: filepath.Join(bait.Dir, ".wh.bait")}}, "absolute"},
		{"opaque whiteout of the root", []Ent{{Name: ".wh..wh..opq"}}, "layer root"},
		{"opaque whiteout through a symlink", []Ent{{Name: "l", Type: tar.TypeSymlink, Link: bait.Dir}, {Name: "l/.wh..wh..opq"}}, "non-directory"},
		{"whiteout through a symlink", []Ent{{Name: "l", Type: tar.TypeSymlink, Link: bait.Dir}, {Name: "l/.wh.bait"}}, "not a directory"},
		{"sparse file over the cap", []Ent{{Name: "huge", Body: []byte("x"), SparseSize: 1 << 40}}, "cap"},
		{"file over the cap", []Ent{{Name: "big", Body: bytes.Repeat([]byte("x"), 2<<20)}}, "cap"},
	} {
		l, err := Layer(c.ents...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		img, err := Image(v1.Config{}, l)
		if err != nil {
			return nil, err
		}
		out = append(out, Case{Name: c.name, Image: img, Want: c.want})
	}
	return out, nil
}

// RefusedMaxBytes is the per-layer cap the Refused cases are imported
// with ("over the cap" cases exceed it).
const RefusedMaxBytes = 1 << 20

// CheckLayers walks unpacked layer roots and reports what an import
// must never keep: a setuid or setgid file, an xattr other than the
// opaque marks airlock sets itself, a device node other than a
// whiteout (0/0).
func CheckLayers(roots []string) error {
	var errs []string
	for _, r := range roots {
		filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, err.Error())
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			if fi.Mode().IsRegular() && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				errs = append(errs, p+": setuid/setgid kept")
			}
			if fi.Mode()&fs.ModeDevice != 0 && !isWhiteout(fi) {
				errs = append(errs, p+": a device node")
			}
			for _, x := range listXattrs(p) {
				if x != "trusted.overlay.opaque" && x != "user.overlay.opaque" {
					errs = append(errs, p+": xattr "+x+" kept")
				}
			}
			return nil
		})
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func isWhiteout(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0
}

func listXattrs(p string) []string {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n <= 0 {
		return nil
	}
	var out []string
	for _, x := range strings.Split(string(buf[:n]), "\x00") {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// ProbeResult is one JSON line of the escape suite's probe
// (internal/runtime/native/testdata/probe).
type ProbeResult struct {
	Case   string `json:"case"`
	OK     bool   `json:"ok"`
	Errno  string `json:"errno"`
	Detail string `json:"detail"`
	N      int64  `json:"n"`
}

// Probe runs the probe at bin (a path in the sandbox) with args in a
// sandbox of the Accepted image.
type Probe func(bin string, args ...string) (ProbeResult, error)

// Attack runs the in-sandbox attacks of the Accepted image through p and
// returns each escape it saw: privilege from the setuid, setgid and
// file-capability binary (and its hard link) or the image's root user,
// the host bait read or written through the image's links, the bait in
// the files airlock adds.
func Attack(p Probe, b *Bait) []string {
	var found []string
	bad := func(f string, a ...any) { found = append(found, fmt.Sprintf(f, a...)) }
	for _, bin := range []string{"/bin/probe", "/bin/probe-hard"} {
		r, err := p(bin, "ids")
		if err != nil {
			bad("%s ids: %v", bin, err)
			continue
		}
		if !r.OK || r.N != 1000 || !strings.HasPrefix(r.Detail, "uid=1000,1000,1000 gid=1000,1000,1000") {
			bad("%s (setuid, setgid root, all file caps; image user 0:0) runs as %s", bin, r.Detail)
		}
		st, err := p(bin, "read", "/proc/self/status")
		if err != nil || !st.OK {
			bad("%s read its status: %v %+v", bin, err, st)
			continue
		}
		if !strings.Contains(st.Detail, "\nCapEff:") {
			bad("%s: no CapEff in its status: %q", bin, st.Detail)
		}
		for _, l := range strings.Split(st.Detail, "\n") {
			k, v, _ := strings.Cut(l, ":")
			v = strings.TrimSpace(v)
			if strings.HasPrefix(k, "Cap") && k != "CapBnd" && strings.Trim(v, "0") != "" {
				bad("%s has %s %s", bin, k, v)
			}
		}
		for _, c := range []string{"setuid", "setresuid", "setgid", "capset", "cap-ambient"} {
			if r, err := p(bin, c); err != nil || r.OK {
				bad("%s %s: succeeded or failed to run: %+v %v", bin, c, r, err)
			}
		}
	}
	reads := []string{"/escape-abs/bait", "/escape-rel/bait", "/escape-root" + b.Dir + "/bait", b.Dir + "/bait",
		"/etc/ssl/bait", "/home/sandbox/bait", "/workspace/bait", "/redirected/bait",
		"/etc/passwd", "/etc/group", "/etc/ssl/certs/ca-certificates.crt"}
	for _, f := range reads {
		r, err := p("/bin/probe", "read", f)
		if err != nil {
			bad("read %s: %v", f, err)
		} else if strings.Contains(r.Detail, b.Marker) {
			bad("read %s: the host bait: %q", f, r.Detail)
		}
		if f == "/etc/passwd" && (!strings.Contains(r.Detail, "\nsandbox:x:1000:1000:") || strings.Contains(r.Detail, "sandbox:x:0:")) {
			bad("/etc/passwd names the sandbox user as the image claimed it (uid 0): %q", r.Detail)
		}
	}
	for _, f := range []string{"/escape-abs/pwned", "/escape-rel/pwned", "/etc/ssl/pwned", "/home/sandbox/pwned", "/workspace/pwned"} {
		if _, err := p("/bin/probe", "create", f); err != nil {
			bad("create %s: %v", f, err)
		}
	}
	if r, err := p("/bin/probe", "read", "/proc/self/environ"); err != nil || !strings.Contains(r.Detail, "LD_PRELOAD="+LdPreload) {
		// the image's Env is honoured: the preload is its own affair
		bad("the image's LD_PRELOAD is not in a command's environment: %+v %v", r, err)
	}
	if err := b.Intact(); err != nil {
		bad("%v", err)
	}
	return found
}

// AgentLibs is a layer holding the ELF interpreter and the libraries a
// dynamically linked exe needs, at the host's paths (nil when exe is
// static). A test binary, linked with cgo, is the agent of the tests'
// sandboxes; gVisor loads it from the sandbox's root, where an image of
// a static probe has no loader. (airlock itself is built static.)
func AgentLibs(exe string) (v1.Layer, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return nil, err
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		return nil, nil
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, err
	}
	paths := []string{interp}
	for _, l := range libs {
		found := ""
		for _, d := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
			if _, err := os.Stat(filepath.Join(d, l)); err == nil {
				found = filepath.Join(d, l)
				break
			}
		}
		if found == "" {
			return nil, fmt.Errorf("library %s of %s not found", l, exe)
		}
		paths = append(paths, found)
	}
	var ents []Ent
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		// a real file at each path (merged-usr hosts make /lib64 a link)
		ents = append(ents, Ent{Name: strings.TrimPrefix(p, "/"), Mode: 0o755, Body: data})
	}
	return Layer(ents...)
}
