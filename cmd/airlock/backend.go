package main

import (
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

// openBackend opens the named backend with its state under stateDir and
// its disks under dataDir. A backend that cannot run here is an error
// that says how to fix it, never a fallback to another boundary.
func openBackend(o backendOpts, name, stateDir, dataDir string, dieWithOwner bool, logf func(string, ...any)) (runtime.Backend, error) {
	switch name {
	case "native":
		return native.New(native.Config{StateDir: stateDir, DiskDir: diskDir(dataDir, "native"), CgroupParent: os.Getenv("AIRLOCK_CGROUP_PARENT"), DieWithOwner: dieWithOwner, Logf: logf})
	case "gvisor":
		parent := ""
		if p := os.Getenv("AIRLOCK_CGROUP_PARENT"); p != "" {
			parent = p + "-gvisor"
		}
		return oci.New(oci.Config{StateDir: filepath.Join(stateDir, "gvisor"), DiskDir: diskDir(dataDir, "gvisor"), CgroupParent: parent, Runsc: o.runsc,
			Platform: o.platform, DieWithOwner: dieWithOwner, Logf: logf})
	}
	return nil, fmt.Errorf("backend %q: use native or gvisor", name)
}
