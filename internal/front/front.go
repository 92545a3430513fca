// Package front is what the airlock binary users run does first: answer
// the verbs it links itself (the policy check, which must start as fast
// as a small Go program), and hand every other verb to the core, the full
// airlock program embedded in it.
//
// Invariants:
//   - The core runs only from a regular file owned by this user, mode
//     0555, in a directory owned by this user that nobody else can write,
//     under a name derived from its SHA-256: what is executed is what was
//     embedded, and no other user can swap it.
//   - A file is put in place whole (written, synced, renamed), so a
//     concurrent start never executes a partial core.
//   - A front built without a core says so and runs nothing else.
package front

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Core is the full airlock program the front carries.
type Core struct {
	Data string // the binary; "" in a front built without it
	Sum  string // the hex SHA-256 of Data, computed when it was built
}

// DirEnv names the directory the core is written to.
const DirEnv = "AIRLOCK_CORE_DIR"

// PathEnv names a core binary to run, for a front built without one
// (development builds: 'go build ./cmd/airlock-front').
const PathEnv = "AIRLOCK_CORE"

// ErrNoCore is the error of a front built without its core.
var ErrNoCore = errors.New("this airlock binary was built without its core (build it with 'make build' or scripts/build.sh), and " + PathEnv + " names none")

// Dir is where the core is written: $AIRLOCK_CORE_DIR, else
// /var/lib/airlock/bin for root, else the user's cache directory.
func Dir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/lib/airlock/bin", nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no directory for the airlock core: set %s: %w", DirEnv, err)
	}
	return filepath.Join(c, "airlock", "bin"), nil
}

// Name is the core's file name: content-addressed.
func (c Core) Name() string { return "airlock-core-" + c.Sum[:min(len(c.Sum), 20)] }

// Exec replaces this process with the core running args (argv[0] is this
// process's own).
func (c Core) Exec(args []string) error {
	path, err := c.Path()
	if err != nil {
		return err
	}
	argv := append([]string{os.Args[0]}, args...)
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("run the airlock core %s: %w", path, err)
	}
	return nil
}

// Path is the core's file, written first when it is not in place.
func (c Core) Path() (string, error) {
	if c.Data == "" {
		if p := os.Getenv(PathEnv); p != "" {
			return p, nil
		}
		return "", ErrNoCore
	}
	if len(c.Sum) != 64 {
		return "", fmt.Errorf("the embedded core has no valid checksum (%q): rebuild airlock", c.Sum)
	}
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, c.Name())
	if fi, err := os.Lstat(dst); err == nil && trustedFile(fi, int64(len(c.Data))) {
		if err := checkDir(dir); err != nil {
			return "", err
		}
		return dst, nil
	}
	if err := c.write(dir, dst); err != nil {
		return "", err
	}
	prune(dir, c.Name())
	return dst, nil
}

// trustedFile: a regular file of this user, 0555, of the core's size.
func trustedFile(fi fs.FileInfo, size int64) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && fi.Mode().Perm() == 0o555 &&
		int(st.Uid) == os.Geteuid() && fi.Size() == size
}

// checkDir refuses a directory another user could write to or own.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("airlock core directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("airlock core directory %s is not a directory (a symlink?); set %s", dir, DirEnv)
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("airlock core directory %s is owned by uid %d, not by you; set %s", dir, st.Uid, DirEnv)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("airlock core directory %s is writable by others (%v); set %s or chmod go-w", dir, fi.Mode().Perm(), DirEnv)
	}
	return nil
}

// write puts the core in place at dst through a synced temporary file,
// checking its content against the sum it was built with.
func (c Core) write(dir, dst string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("airlock core directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(c.Data))
	if hex.EncodeToString(sum[:]) != c.Sum {
		return fmt.Errorf("the embedded core does not match its checksum: the airlock binary is damaged")
	}
	tmp, err := os.CreateTemp(dir, ".tmp-airlock-core-")
	if err != nil {
		return fmt.Errorf("write the airlock core: %w", err)
	}
	_, err = tmp.WriteString(c.Data)
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
		return fmt.Errorf("write the airlock core to %s: %w", dir, err)
	}
	return nil
}

// prune removes other versions' cores (and leftover temporary files)
// older than a day that no process runs: a daemon of the old version
// still finds its own binary (its backends start sandboxes from it).
func prune(dir, keep string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	running := runningExes()
	for _, e := range ents {
		n := e.Name()
		if n == keep || !strings.HasPrefix(n, "airlock-core-") && !strings.HasPrefix(n, ".tmp-airlock-core-") {
			continue
		}
		if running[filepath.Join(dir, n)] {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.Remove(filepath.Join(dir, n))
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
