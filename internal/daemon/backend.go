package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/gvisor"
	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// DiskDir is where a backend keeps its sandboxes' disk images: in the
// data dir, on a disk (the state dir is often a tmpfs, whose files would
// take memory that no sandbox's limit counts).
func DiskDir(dataDir, backend string) string { return filepath.Join(dataDir, "disks", backend) }

// DefaultStateDir is the state dir of an airlock started without
// --state-dir; its cgroup parents keep their plain names.
const DefaultStateDir = "/run/airlock"

// CgroupParents names the cgroup parents of the native and the gVisor
// backend of stateDir. A start reaps every cgroup under its parents that
// its own state dir does not know, so two state dirs must never share
// one: the default state dir has "airlock" and "airlock-oci", any other
// the same names with a short hash of its cleaned absolute path appended.
// AIRLOCK_CGROUP_PARENT overrides both (gVisor's gets "-gvisor").
func CgroupParents(stateDir string) (native, gvisor string) {
	if p := os.Getenv("AIRLOCK_CGROUP_PARENT"); p != "" {
		return p, p + "-gvisor"
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		abs = stateDir
	}
	abs = filepath.Clean(abs)
	if abs == DefaultStateDir {
		return "airlock", "airlock-oci"
	}
	sum := sha256.Sum256([]byte(abs))
	h := hex.EncodeToString(sum[:6])
	return "airlock-" + h, "airlock-oci-" + h
}

// OpenNative opens the native backend with its state under stateDir and
// its disks under dataDir.
func OpenNative(stateDir, dataDir string, dieWithOwner bool, logf func(string, ...any)) (*native.Backend, error) {
	parent, _ := CgroupParents(stateDir)
	return native.New(native.Config{StateDir: stateDir, DiskDir: DiskDir(dataDir, "native"), CgroupParent: parent, DieWithOwner: dieWithOwner, Logf: logf})
}

// OpenGVisor opens the gVisor backend of stateDir with the runsc binary
// and platform given (platform "": runsc's own). A backend that cannot
// run here is an error that says how to fix it, never a fallback.
func OpenGVisor(stateDir, dataDir, runsc, platform string, dieWithOwner bool, logf func(string, ...any)) (runtime.Backend, error) {
	_, parent := CgroupParents(stateDir)
	return gvisor.New(gvisor.Config{StateDir: filepath.Join(stateDir, "gvisor"), DiskDir: DiskDir(dataDir, "gvisor"), CgroupParent: parent, Runsc: runsc,
		Platform: platform, DieWithOwner: dieWithOwner, Logf: logf})
}
