package template

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/template/layertar"
	"golang.org/x/sys/unix"
)

// What a sandbox needs from airlock in an image's root is added as one
// thin layer of its own on top, never by editing the image's layers: the
// sandbox user in passwd and group (the image's entries kept), airlock's
// resolv.conf and hosts, a CA bundle file for the sandbox network to bind
// its roots over, and the mount points the backends use. It is stored
// like any layer (content-addressed), so images with the same needs share
// one.

// sandboxUser is the passwd line of the user every command runs as.
const (
	sandboxPasswd = "sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh"
	sandboxGroup  = "sandbox:x:1000:"
	maxEtcFile    = 1 << 20
)

// AirlockLayer makes (or finds) the airlock layer for an image of the
// given layers (diffIDs, bottom first, all stored) and returns its diffID.
func (s *Store) AirlockLayer(layers []string) (string, error) {
	var roots []string // top first
	for i := len(layers) - 1; i >= 0; i-- {
		r, err := s.LayerRoot(layers[i])
		if err != nil {
			return "", err
		}
		roots = append(roots, r)
	}
	passwd, err := lookupFile(roots, "etc/passwd", maxEtcFile)
	if err != nil {
		return "", err
	}
	group, err := lookupFile(roots, "etc/group", maxEtcFile)
	if err != nil {
		return "", err
	}
	caBundle, err := lookupFile(roots, "etc/ssl/certs/ca-certificates.crt", maxEtcFile)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	mt := time.Unix(0, 0)
	for _, d := range []struct {
		name string
		mode int64
	}{{"dev", 0o755}, {"proc", 0o555}, {"sys", 0o555}, {"tmp", 0o1777}, {"etc", 0o755}, {"etc/ssl", 0o755}, {"etc/ssl/certs", 0o755}, {"home", 0o755}, {"workspace", 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Name: d.name + "/", Typeflag: tar.TypeDir, Mode: d.mode, ModTime: mt}); err != nil {
			return "", err
		}
	}
	files := []struct{ name, data string }{
		{"etc/passwd", withSandbox(withLine(passwd, "root:x:0:0:root:/root:/bin/sh", "root", "0"), sandboxPasswd)},
		{"etc/group", withSandbox(withLine(group, "root:x:0:", "root", "0"), sandboxGroup)},
	}
	for _, e := range generatedEtc {
		if e.name == "resolv.conf" || e.name == "hosts" || e.name == "hostname" {
			files = append(files, struct{ name, data string }{"etc/" + e.name, e.data})
		}
	}
	if caBundle == nil {
		files = append(files, struct{ name, data string }{"etc/ssl/certs/ca-certificates.crt", ""})
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.data)), ModTime: mt}); err != nil {
			return "", err
		}
		if _, err := io.WriteString(tw, f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return s.UnpackLayer("", &b, layertar.Limits{}, nil)
}

// withLine is an image's passwd or group, with a root line when it has
// no entry named root or with that id.
func withLine(file []byte, line, name, id string) string {
	s := string(file)
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	if hasEntry(file, name, id) {
		return s
	}
	return line + "\n" + s
}

// withSandbox is an image's passwd or group (as withLine made it) with
// the sandbox user's (or group's) line, unless the image already has an
// entry of uid/gid 1000 (commands then run as that image user's uid
// 1000: the same uid). An image entry named sandbox of another id (uid
// 0, say) is dropped: commands run as uid 1000 whatever it says, and the
// name must say so too.
func withSandbox(file, line string) string {
	var b strings.Builder
	have := false
	for _, l := range strings.SplitAfter(file, "\n") {
		f := strings.Split(strings.TrimSuffix(l, "\n"), ":")
		if len(f) >= 3 && f[0] == "sandbox" && f[2] != "1000" {
			continue
		}
		if len(f) >= 3 && f[2] == "1000" {
			have = true
		}
		b.WriteString(l)
	}
	if !have {
		b.WriteString(line + "\n")
	}
	return b.String()
}

func hasEntry(file []byte, name, id string) bool {
	sc := bufio.NewScanner(bytes.NewReader(file))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) >= 3 && (f[0] == name || f[2] == id) {
			return true
		}
	}
	return false
}

// ReadLayerFile reads rel as the stacked layers (diffIDs, bottom first, as
// in an Image) show it, at most max bytes; (nil, nil) when it is absent
// or no regular file. See lookupFile.
func (s *Store) ReadLayerFile(layers []string, rel string, max int64) ([]byte, error) {
	var roots []string
	for i := len(layers) - 1; i >= 0; i-- {
		r, err := s.LayerRoot(layers[i])
		if err != nil {
			return nil, err
		}
		roots = append(roots, r)
	}
	return lookupFile(roots, rel, max)
}

// lookupFile reads rel as the stacked layers (top first) show it, as
// overlayfs would merge them: the topmost layer that has it, whites it
// out, hides it below an opaque directory or puts a non-directory on its
// way decides. Only a regular file is read (at most max bytes); a
// symlink or anything else, on the way or at rel, counts as absent (it
// is the image's to keep, airlock's layer then puts a file of its own
// there). Each layer is walked from its own root with openat2 that
// follows no symlink and never leaves the layer: an image's "etc ->
// /etc" names the host's files only when followed on the host, and is
// never followed here.
func lookupFile(roots []string, rel string, max int64) ([]byte, error) {
	comps := strings.Split(rel, "/")
	for _, r := range roots {
		data, found, err := lookupInLayer(r, comps, max)
		if err != nil || found {
			return data, err
		}
	}
	return nil, nil
}

// lookupInLayer looks for comps in the layer root. found: this layer
// decides (data nil: hidden or no regular file); not found: the layers
// below decide.
func lookupInLayer(root string, comps []string, max int64) (data []byte, found bool, err error) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV}
	dir, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, fmt.Errorf("layer %s: %w", root, err)
	}
	defer func() { unix.Close(dir) }()
	opaque := false // a directory walked in this layer hides the layers below
	for i, c := range comps {
		var st unix.Stat_t
		err := unix.Fstatat(dir, c, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			return nil, opaque, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("layer %s: %s: %w", root, c, err)
		}
		last := i == len(comps)-1
		switch {
		case last && st.Mode&unix.S_IFMT == unix.S_IFREG:
			data, err := readAt(dir, c, max)
			return data, true, err
		case last || st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return nil, true, nil // whiteout (0/0 char device), symlink, dir, file on the way
		}
		next, err := unix.Openat2(dir, c, how)
		if err != nil {
			return nil, false, fmt.Errorf("layer %s: %s: %w", root, c, err)
		}
		unix.Close(dir)
		dir = next
		buf := make([]byte, 2)
		if n, err := unix.Fgetxattr(dir, "trusted.overlay.opaque", buf); err == nil && string(buf[:n]) == "y" {
			opaque = true
		}
	}
	return nil, true, nil
}

// readAt reads the regular file name of dir, at most max bytes.
func readAt(dir int, name string, max int64) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over %d bytes: %w", name, max, ErrInvalid)
	}
	return data, nil
}
