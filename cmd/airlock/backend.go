package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/runtime/oci"
)

// backendOpts choose and configure an isolation backend.
type backendOpts struct {
	name     string // "native" or "gvisor"
	runsc    string
	platform string
}

func (o *backendOpts) flags(fs *flag.FlagSet, what string) {
	fs.StringVar(&o.name, "backend", envOr("AIRLOCK_BACKEND", "native"), what+": native (namespaces + seccomp + Landlock) or gvisor (gVisor's user-space kernel, needs runsc) (env AIRLOCK_BACKEND)")
	fs.StringVar(&o.runsc, "runsc", envOr("AIRLOCK_RUNSC", "runsc"), "gVisor's runsc binary, for --backend gvisor (env AIRLOCK_RUNSC)")
	fs.StringVar(&o.platform, "gvisor-platform", os.Getenv("AIRLOCK_GVISOR_PLATFORM"), "runsc platform: systrap or ptrace (default: runsc's own; kvm is refused) (env AIRLOCK_GVISOR_PLATFORM)")
}

func (o *backendOpts) validate() error {
	if o.name != "native" && o.name != "gvisor" {
		return fmt.Errorf("--backend %q: use native or gvisor", o.name)
	}
	return nil
}

// diskDir is where a backend keeps its sandboxes' disk images: in the
// data dir, on a disk (the state dir is often a tmpfs, whose files would
// take memory that no sandbox's limit counts).
func diskDir(dataDir, backend string) string { return filepath.Join(dataDir, "disks", backend) }

// defaultStateDir is the state dir of an airlock started without
// --state-dir; its cgroup parents keep their plain names.
const defaultStateDir = "/run/airlock"

// cgroupParents names the cgroup parents of the native and the gVisor
// backend of stateDir. A start reaps every cgroup under its parents that
// its own state dir does not know, so two state dirs must never share
// one: the default state dir has "airlock" and "airlock-oci", any other
// the same names with a short hash of its cleaned absolute path appended.
// AIRLOCK_CGROUP_PARENT overrides both (gVisor's gets "-gvisor").
func cgroupParents(stateDir string) (native, gvisor string) {
	if p := os.Getenv("AIRLOCK_CGROUP_PARENT"); p != "" {
		return p, p + "-gvisor"
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		abs = stateDir
	}
	abs = filepath.Clean(abs)
	if abs == defaultStateDir {
		return "airlock", "airlock-oci"
	}
	sum := sha256.Sum256([]byte(abs))
	h := hex.EncodeToString(sum[:6])
	return "airlock-" + h, "airlock-oci-" + h
}

// openBackend opens the named backend with its state under stateDir and
// its disks under dataDir. A backend that cannot run here is an error
// that says how to fix it, never a fallback to another boundary.
func openBackend(o backendOpts, name, stateDir, dataDir string, dieWithOwner bool, logf func(string, ...any)) (runtime.Backend, error) {
	_, gvisorParent := cgroupParents(stateDir)
	switch name {
	case "native":
		b, err := openNative(stateDir, dataDir, dieWithOwner, logf)
		if err != nil {
			return nil, err
		}
		return b, nil
	case "gvisor":
		return oci.New(oci.Config{StateDir: filepath.Join(stateDir, "gvisor"), DiskDir: diskDir(dataDir, "gvisor"), CgroupParent: gvisorParent, Runsc: o.runsc,
			Platform: o.platform, DieWithOwner: dieWithOwner, Logf: logf})
	}
	return nil, fmt.Errorf("backend %q: use native or gvisor", name)
}

// openNative opens the native backend of stateDir, as openBackend does.
func openNative(stateDir, dataDir string, dieWithOwner bool, logf func(string, ...any)) (*native.Backend, error) {
	parent, _ := cgroupParents(stateDir)
	return native.New(native.Config{StateDir: stateDir, DiskDir: diskDir(dataDir, "native"), CgroupParent: parent, DieWithOwner: dieWithOwner, Logf: logf})
}
