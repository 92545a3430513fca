package build

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// A COPY reads only below the context directory, through an os.Root: no
// name, ".." or symlink of the context can lead the read out of it (a
// symlink that would is refused). A symlink to a file inside is copied
// as that file; one to a directory, and anything but files and
// directories, are refused. The layer tar is written in name order with
// fixed times and root ownership, so its sha256, the step's content
// hash, changes only when what is copied does. Every file is made
// readable by all (see readable).

var epoch = time.Unix(0, 0)

// copyLayer writes the layer tar of a COPY to a temporary file and
// returns it with its sha256.
func copyLayer(root *os.Root, srcs []string, dest string) (*os.File, string, error) {
	f, err := os.CreateTemp("", "airlock-copy-*.tar")
	if err != nil {
		return nil, "", err
	}
	h := sha256.New()
	c := &copier{root: root, tw: tar.NewWriter(io.MultiWriter(f, h)), dirs: map[string]bool{}}
	err = c.all(srcs, dest)
	if err == nil {
		err = c.tw.Close()
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, "", err
	}
	return f, "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

type copier struct {
	root *os.Root
	tw   *tar.Writer
	dirs map[string]bool // dirs already in the tar (names without "/")
}

func (c *copier) all(srcs []string, dest string) error {
	into := strings.HasSuffix(dest, "/")
	dest = path.Clean(dest)
	for _, src := range srcs {
		fi, err := c.stat(src)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := c.parents(dest); err != nil {
				return err
			}
			err = c.tree(src, dest)
		case into:
			if err := c.parents(dest); err != nil {
				return err
			}
			err = c.file(src, path.Join(dest, path.Base(src)), fi)
		default:
			if err := c.parents(path.Dir(dest)); err != nil {
				return err
			}
			err = c.file(src, dest, fi)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stat is what src is, following a symlink only while it stays inside.
func (c *copier) stat(src string) (fs.FileInfo, error) {
	li, err := c.root.Lstat(src)
	if err != nil {
		return nil, copyErr(src, err)
	}
	if li.Mode()&fs.ModeSymlink == 0 {
		return li, nil
	}
	fi, err := c.root.Stat(src)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "COPY %s: a symlink that leads out of the context directory (or nowhere): %v", src, err)
	}
	if fi.IsDir() {
		return nil, errdefs.Wrap(errdefs.ErrUnsupported, "COPY %s: a symlink to a directory", src)
	}
	return fi, nil
}

func copyErr(src string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errdefs.Wrap(errdefs.ErrNotFound, "COPY %s: not in the context directory", src)
	}
	// os.Root's refusal has no exported sentinel: its message is the one
	// way to tell it (any other error still fails the COPY)
	if strings.Contains(err.Error(), "path escapes from parent") {
		return errdefs.Wrap(errdefs.ErrInvalid, "COPY %s: a symlink on its path leads out of the context directory", src)
	}
	return errdefs.Wrap(errdefs.ErrInvalid, "COPY %s: %v", src, err)
}

// parents puts dir and the directories above it in the tar.
func (c *copier) parents(dir string) error {
	if dir == "/" || dir == "." {
		return nil
	}
	if err := c.parents(path.Dir(dir)); err != nil {
		return err
	}
	name := strings.TrimPrefix(dir, "/")
	if c.dirs[name] {
		return nil
	}
	c.dirs[name] = true
	return c.tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch})
}

func (c *copier) tree(src, dest string) error {
	d, err := c.root.Open(src)
	if err != nil {
		return copyErr(src, err)
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return copyErr(src, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		s, t := path.Join(src, e.Name()), path.Join(dest, e.Name())
		fi, err := c.stat(s)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			if err := c.parents(t); err != nil {
				return err
			}
			err = c.tree(s, t)
		} else {
			err = c.file(s, t, fi)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *copier) file(src, dest string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return errdefs.Wrap(errdefs.ErrInvalid, "COPY %s: not a regular file or directory", src)
	}
	f, err := c.root.Open(src) // follows an inside symlink, as stat checked
	if err != nil {
		return copyErr(src, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return copyErr(src, err)
	}
	h := &tar.Header{Name: strings.TrimPrefix(dest, "/"), Typeflag: tar.TypeReg, Mode: readable(int64(st.Mode().Perm()), false), Size: st.Size(), ModTime: epoch}
	if err := c.tw.WriteHeader(h); err != nil {
		return err
	}
	if n, err := io.CopyN(c.tw, f, st.Size()); err != nil {
		return fmt.Errorf("COPY %s: read %d of %d bytes: %w", src, n, st.Size(), err)
	}
	return nil
}

// dirsTar is the layer of a WORKDIR: the directory and those above it.
func dirsTar(dir string) io.Reader {
	var b bytes.Buffer
	c := &copier{tw: tar.NewWriter(&b), dirs: map[string]bool{}}
	_ = c.parents(path.Clean(dir)) // a bytes.Buffer takes every write
	_ = c.tw.Close()
	return &b
}
