// Package exefile puts a program airlock carries (the core in the
// front, the lean agent in the core) on disk as an executable file that
// can be trusted to be what was embedded.
//
// Invariants:
//   - A file is put in place whole: written, made 0555, synced, then
//     renamed over its name, so a concurrent start never executes a
//     partial program.
//   - A file is re-used only if it is a regular file of this user, mode
//     0555, of the expected size, in a directory of this user that nobody
//     else can write; anything else at that name is replaced.
//   - Names are chosen by the callers from the content's hash, so a name
//     names one content.
package exefile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Put returns dir/name holding data, writing it first unless a trusted
// file of data's size is there already; written says whether it wrote
// (the moment to Prune: not at every start, which only reads).
func Put(dir, name, data string) (path string, written bool, err error) {
	dst := filepath.Join(dir, name)
	if fi, err := os.Lstat(dst); err == nil && Trusted(fi, int64(len(data))) {
		if err := CheckDir(dir); err != nil {
			return "", false, err
		}
		return dst, false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("directory for %s: %w", name, err)
	}
	if err := CheckDir(dir); err != nil {
		return "", false, err
	}
	if err := write(dir, dst, data); err != nil {
		return "", false, err
	}
	return dst, true, nil
}

// Trusted reports whether fi is a regular file of this user, 0555, of
// the given size.
func Trusted(fi fs.FileInfo, size int64) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && fi.Mode().Perm() == 0o555 &&
		int(st.Uid) == os.Geteuid() && fi.Size() == size
}

// CheckDir refuses a directory that is a symlink, is another user's, or
// that others can write to.
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory (a symlink?)", dir)
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s is owned by uid %d, not by this user", dir, st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (%v)", dir, fi.Mode().Perm())
	}
	return nil
}

func write(dir, dst, data string) error {
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(dst)+"-")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(data)
	if err == nil {
		err = tmp.Chmod(0o555)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return nil
}

// Prune removes the files of dir whose names start with prefix (and
// leftover temporary files of such names) other than keep, last written
// over a day ago, that no process we can see runs: an older daemon still
// finds its own binary.
func Prune(dir, prefix, keep string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	running := runningExes()
	for _, e := range ents {
		n := e.Name()
		if n == keep || !strings.HasPrefix(n, prefix) && !strings.HasPrefix(n, ".tmp-"+prefix) {
			continue
		}
		p := filepath.Join(dir, n)
		if running[p] {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.Remove(p)
		}
	}
}

// runningExes is the set of binaries the processes we can see run.
func runningExes() map[string]bool {
	m := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		if t, err := os.Readlink(p); err == nil {
			m[t] = true
		}
	}
	return m
}
