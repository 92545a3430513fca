package run

import (
	"flag"
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/daemon"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// backendOpts choose and configure an isolation backend.
type backendOpts struct {
	name     string // "native" or "gvisor"
	runsc    string
	platform string
}

func (o *backendOpts) flags(fs *flag.FlagSet, what string) {
	fs.StringVar(&o.name, "backend", cli.EnvOr("AIRLOCK_BACKEND", "native"), what+": native (namespaces + seccomp + Landlock) or gvisor (gVisor's user-space kernel, needs runsc) (env AIRLOCK_BACKEND)")
	fs.StringVar(&o.runsc, "runsc", cli.EnvOr("AIRLOCK_RUNSC", "runsc"), "gVisor's runsc binary, for --backend gvisor (env AIRLOCK_RUNSC)")
	fs.StringVar(&o.platform, "gvisor-platform", os.Getenv("AIRLOCK_GVISOR_PLATFORM"), "runsc platform: systrap or ptrace (default: runsc's own; kvm is refused) (env AIRLOCK_GVISOR_PLATFORM)")
}

func (o *backendOpts) validate() error {
	if o.name != "native" && o.name != "gvisor" {
		return fmt.Errorf("--backend %q: use native or gvisor", o.name)
	}
	return nil
}

// openBackend opens the named backend with its state under stateDir and
// its disks under dataDir. A backend that cannot run here is an error
// that says how to fix it, never a fallback to another boundary.
func openBackend(o backendOpts, name, stateDir, dataDir string, dieWithOwner bool, logf func(string, ...any)) (runtime.Backend, error) {
	switch name {
	case "native":
		b, err := openNative(stateDir, dataDir, dieWithOwner, logf)
		if err != nil {
			return nil, err
		}
		return b, nil
	case "gvisor":
		return daemon.OpenGVisor(stateDir, dataDir, o.runsc, o.platform, dieWithOwner, logf)
	}
	return nil, fmt.Errorf("backend %q: use native or gvisor", name)
}

// openNative opens the native backend of stateDir, as openBackend does.
func openNative(stateDir, dataDir string, dieWithOwner bool, logf func(string, ...any)) (*native.Backend, error) {
	return daemon.OpenNative(stateDir, dataDir, dieWithOwner, logf)
}
