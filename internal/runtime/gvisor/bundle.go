package gvisor

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent"
)

// agentPath is where the agent binary is bound, read-only, inside the
// sandbox; started there as PID 1 it is the sandbox's agent. Its name is
// the agent's comm, as the native backend names its agent (agent.Comm).
const agentPath = "/.airlock/" + agent.Comm

// The subset of the OCI runtime specification (config.json) airlock
// writes. Field names follow the specification, version 1.0.2.
type ociSpec struct {
	Version  string     `json:"ociVersion"`
	Process  ociProcess `json:"process"`
	Root     ociRoot    `json:"root"`
	Hostname string     `json:"hostname"`
	Mounts   []ociMount `json:"mounts"`
	Linux    ociLinux   `json:"linux"`
}

type ociProcess struct {
	Terminal        bool            `json:"terminal"`
	User            ociUser         `json:"user"`
	Args            []string        `json:"args"`
	Env             []string        `json:"env"`
	Cwd             string          `json:"cwd"`
	Capabilities    ociCapabilities `json:"capabilities"`
	Rlimits         []ociRlimit     `json:"rlimits"`
	NoNewPrivileges bool            `json:"noNewPrivileges"`
}

type ociUser struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

type ociCapabilities struct {
	Bounding    []string `json:"bounding"`
	Effective   []string `json:"effective"`
	Permitted   []string `json:"permitted"`
	Inheritable []string `json:"inheritable"`
	Ambient     []string `json:"ambient"`
}

type ociRlimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options,omitempty"`
}

type ociLinux struct {
	Namespaces    []ociNamespace `json:"namespaces"`
	MaskedPaths   []string       `json:"maskedPaths,omitempty"`
	ReadonlyPaths []string       `json:"readonlyPaths,omitempty"`
}

type ociNamespace struct {
	Type string `json:"type"`
}

// agentCaps are the agent's capabilities inside the sandbox (in gVisor's
// kernel, not the host's): what it needs to start commands as the command
// user, hand them their files and terminals, signal them, and drop every
// capability on its spawner thread. Commands get none.
var agentCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
}

// bundleSpec is the container of one sandbox: the agent as its process,
// the prepared root, gVisor's own /proc, /dev and /sys, the template's
// read-only binds and the agent binary, read-only too.
func bundleSpec(rootfs, hostname, agentBin string, binds []bindMount, rl rlimits) ociSpec {
	mounts := []ociMount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
	}
	for _, b := range binds {
		mounts = append(mounts, ociMount{Destination: b.target, Type: "bind", Source: b.source, Options: []string{"rbind", "ro", "nosuid", "nodev"}})
		mounts = append(mounts, b.masks...)
	}
	mounts = append(mounts, ociMount{Destination: agentPath, Type: "bind", Source: agentBin, Options: []string{"bind", "ro", "nosuid", "nodev"}})
	return ociSpec{
		Version: "1.0.2",
		Process: ociProcess{
			User: ociUser{UID: 0, GID: 0},
			Args: []string{agentPath},
			Env:  []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			Cwd:  "/",
			Capabilities: ociCapabilities{
				Bounding: agentCaps, Effective: agentCaps, Permitted: agentCaps,
				Inheritable: []string{}, Ambient: []string{},
			},
			Rlimits: []ociRlimit{
				{Type: "RLIMIT_CORE"},
				{Type: "RLIMIT_NOFILE", Hard: rl.nofile, Soft: rl.nofile},
				{Type: "RLIMIT_NPROC", Hard: rl.nproc, Soft: rl.nproc},
				{Type: "RLIMIT_FSIZE", Hard: rl.fsize, Soft: rl.fsize},
			},
			NoNewPrivileges: true,
		},
		Root:     ociRoot{Path: rootfs},
		Hostname: hostname,
		Mounts:   mounts,
		Linux: ociLinux{
			Namespaces: []ociNamespace{{Type: "pid"}, {Type: "network"}, {Type: "ipc"}, {Type: "uts"}, {Type: "mount"}},
			// gVisor's /proc and /sys show nothing of the host's kernel;
			// these stay masked anyway, as on any OCI runtime.
			MaskedPaths:   []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"},
		},
	}
}

// bindMount is a template bind; masks are the mounts that hide host
// configuration under it (runtime.UsrConfigPaths), after it in order.
type bindMount struct {
	source, target string
	masks          []ociMount
}

// usrMasks are the mounts that hide the host configuration under a host
// /usr bound from src at target: a directory under an empty read-only
// tmpfs, or a directory made in keep (of what runtime.UsrKept keeps of
// its files) bound read-only; a file behind empty, an empty read-only
// host file.
func usrMasks(src, target, empty, keep string) ([]ociMount, error) {
	var out []ociMount
	for i, m := range runtime.UsrMasks(src) {
		dst := path.Join(target, m.Rel)
		kept := map[string][]byte(nil)
		if m.Dir {
			kept = runtime.UsrKept(filepath.Join(src, m.Rel))
		}
		switch {
		case m.Dir && len(kept) > 0:
			d := filepath.Join(keep, strconv.Itoa(i))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
			for name, data := range kept {
				if err := os.WriteFile(filepath.Join(d, name), data, 0o444); err != nil {
					return nil, err
				}
			}
			out = append(out, ociMount{Destination: dst, Type: "bind", Source: d, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}})
		case m.Dir:
			out = append(out, ociMount{Destination: dst, Type: "tmpfs", Source: "airlock-mask", Options: []string{"ro", "nosuid", "nodev", "noexec", "mode=0555"}})
		default:
			out = append(out, ociMount{Destination: dst, Type: "bind", Source: empty, Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
		}
	}
	return out, nil
}

type rlimits struct{ nofile, nproc, fsize uint64 }

func writeBundle(dir string, spec ociSpec) error {
	b, err := json.MarshalIndent(spec, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
}
