package native

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime/agentbin"
)

// sandboxExe returns a root-owned, read-only copy of this binary in
// dir, which the sandbox init can exec after it has become the sandbox's
// unprivileged root: the original may sit in a directory such a uid cannot
// traverse (/root/go/bin, a test's build dir). The copy is 0555 and owned
// by root, so no sandbox uid can change what /proc/1/exe points at; the
// agent is also non-dumpable, so sandbox processes cannot open it at all.
// Copies are made once per binary version (size, mtime, inode). A
// binary that carries the lean agent (agentbin) puts that there instead:
// it starts in a fraction of this binary's time.
func sandboxExe(dir string) (string, error) {
	if agentbin.Embedded() {
		if err := prepareExeDir(dir); err != nil {
			return "", err
		}
		return agentbin.Put(dir)
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	st, err := os.Stat(self)
	if err != nil {
		return "", fmt.Errorf("stat own binary: %w", err)
	}
	ino := uint64(0)
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = sys.Ino
	}
	name := fmt.Sprintf("airlock-%d-%d-%d", st.Size(), st.ModTime().UnixNano(), ino)
	dst := filepath.Join(dir, name)
	if fi, err := os.Stat(dst); err == nil && fi.Size() == st.Size() {
		return dst, nil
	}
	if err := prepareExeDir(dir); err != nil {
		return "", err
	}
	if err := copyExe(self, dir, dst); err != nil {
		return "", err
	}
	pruneExes(dir, name)
	return dst, nil
}

// prepareExeDir makes dir, traversable (not readable) by sandbox uids.
func prepareExeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	return os.Chmod(dir, 0o711)
}

// copyExe copies self to dst (0555) through a temporary file in dir,
// renamed into place: a starting sandbox never sees a partial copy.
func copyExe(self, dir, dst string) error {
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dir, ".tmp-airlock-")
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Chmod(0o555)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("copy own binary to %s: %w", dir, err)
	}
	return nil
}

// pruneExes removes the copies of other versions than name (and
// leftover temporary files) older than a day: nobody can still be
// starting from them.
func pruneExes(dir, name string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Name() == name || !strings.HasPrefix(e.Name(), "airlock-") && !strings.HasPrefix(e.Name(), ".tmp-airlock-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
