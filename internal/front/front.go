// Package front is what the airlock binary users run does first: answer
// the verbs it links itself (the policy check, which must start as fast
// as a small Go program), and hand every other verb to the core, the full
// airlock program embedded in it.
//
// Invariants:
//   - The core runs only from a file package exefile trusts (this user's,
//     0555, whole, in a directory nobody else can write), under a name
//     derived from its SHA-256: what is executed is what was embedded,
//     and no other user can swap it.
//   - A front built without a core says so and runs nothing else.
package front

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/airlock-dev/airlock/internal/exefile"
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
	if err := c.verify(dir); err != nil {
		return "", err
	}
	p, written, err := exefile.Put(dir, c.Name(), c.Data)
	if err != nil {
		return "", fmt.Errorf("airlock core: %w; set %s to another directory", err, DirEnv)
	}
	if written {
		exefile.Prune(dir, "airlock-core-", c.Name())
	}
	return p, nil
}

// verify checks the embedded core against its checksum before it is
// first written (not at every start: that would read it all).
func (c Core) verify(dir string) error {
	if fi, err := os.Lstat(filepath.Join(dir, c.Name())); err == nil && exefile.Trusted(fi, int64(len(c.Data))) {
		return nil
	}
	sum := sha256.Sum256([]byte(c.Data))
	if hex.EncodeToString(sum[:]) != c.Sum {
		return fmt.Errorf("the embedded core does not match its checksum: the airlock binary is damaged")
	}
	return nil
}
