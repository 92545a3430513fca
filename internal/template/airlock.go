package template

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	passwd, err := lookupFile(roots, "etc/passwd")
	if err != nil {
		return "", err
	}
	group, err := lookupFile(roots, "etc/group")
	if err != nil {
		return "", err
	}
	caBundle, err := lookupFile(roots, "etc/ssl/certs/ca-certificates.crt")
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
		{"etc/passwd", withLine(passwd, "root:x:0:0:root:/root:/bin/sh", "root", "0") + sandboxLine(passwd, sandboxPasswd)},
		{"etc/group", withLine(group, "root:x:0:", "root", "0") + sandboxLine(group, sandboxGroup)},
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

// sandboxLine is the sandbox user's (or group's) line, unless the image
// already has an entry of that name or of uid/gid 1000 (commands then run
// as that image user's uid 1000: the same uid).
func sandboxLine(file []byte, line string) string {
	if hasEntry(file, "sandbox", "1000") {
		return ""
	}
	return line + "\n"
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

// lookupFile reads rel as the stacked layers (top first) show it: the
// topmost layer that has it, whites it out or hides it below an opaque
// directory decides. Only a regular file is read (bounded); a symlink or
// anything else counts as absent (it is the image's to keep, airlock's
// layer then puts a file of its own there).
func lookupFile(roots []string, rel string) ([]byte, error) {
	for _, r := range roots {
		var st unix.Stat_t
		err := unix.Lstat(filepath.Join(r, rel), &st)
		if err == nil {
			if st.Mode&unix.S_IFMT != unix.S_IFREG {
				return nil, nil // whiteout (0/0 char device), symlink, dir
			}
			return readBounded(filepath.Join(r, rel))
		}
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			return nil, err
		}
		if opaqueOnPath(r, rel) {
			return nil, nil
		}
	}
	return nil, nil
}

// opaqueOnPath: a directory above rel in this layer is opaque (hides the
// layers below) or a whiteout.
func opaqueOnPath(root, rel string) bool {
	buf := make([]byte, 2)
	for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
		if n, err := unix.Lgetxattr(filepath.Join(root, d), "trusted.overlay.opaque", buf); err == nil && string(buf[:n]) == "y" {
			return true
		}
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(root, d), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR {
			return true
		}
	}
	return false
}

func readBounded(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEtcFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxEtcFile {
		return nil, fmt.Errorf("%s is over %d bytes: %w", p, maxEtcFile, ErrInvalid)
	}
	return data, nil
}
