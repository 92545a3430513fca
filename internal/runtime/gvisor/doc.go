// Package gvisor is airlock's second isolation boundary, registered as
// "gvisor": every sandbox is an OCI container run by gVisor's runsc, so a
// command's syscalls are served by gVisor's user-space kernel (the
// sentry), which runs in host namespaces of its own under a host seccomp
// filter, instead of by the host kernel. Only the runtime wiring
// (cmd/airlock, the daemon) uses it.
//
// # The sandbox
//
// airlock prepares the root itself: the template, read-only, under an
// overlay whose upper layer is the sandbox's own ext4 disk (package
// diskimg: hard size and inode limits). Both are mounted in a mount
// namespace made for runsc alone, on a locked OS thread that forks runsc:
// the host's mount table never shows them, and they go away with the last
// runsc process. The OCI bundle (config.json) names that root, gVisor's
// own /proc, /dev and /sys, the template's read-only binds and the airlock
// binary, bound read-only at /.airlock/airlock-agent as the container's process.
// runsc runs with --network=none (loopback only, gVisor's own stack),
// --ignore-cgroups, and in a cgroup airlock makes (v1 or v2) that holds
// runsc, the gofer and the sentry: the memory limit (plus a 64 MiB reserve
// for gVisor itself) and the CPU quota apply to the whole sandbox, and a
// cap on host tasks bounds the host's cost. Destroy kills the group.
// Pause freezes the group (runsc's own pause is not used); on cgroup v1,
// whose freezer holds back even runsc's parent-death SIGKILL, a paused
// sandbox that dies with its owner has a thaw guard (package thawguard).
// RLIMIT_NOFILE, RLIMIT_NPROC (the process limit, counted by gVisor) and
// RLIMIT_FSIZE are set in the bundle; gVisor enforces them.
//
// # The channel
//
// The agent is airlock's agent, unchanged in what it does: PID 1, commands
// as uid 1000 with no capabilities, no_new_privs and the seccomp
// allowlist (inside gVisor), host-owned stdio, timeouts, reaping, file
// operations, file activity. Its channel is the same SOCK_SEQPACKET
// socketpair as on the native backend, handed to runsc as the container's
// stdin: gVisor imports a host socket given as stdio as a host-backed
// socket. An early experiment settled the design: descriptors sent by the
// host (SCM_RIGHTS) arrive inside gVisor as host-backed files, so the host
// still creates every command's stdin, stdout and stderr pipes and reads
// them itself, exactly as on the native backend; but gVisor refuses
// (EINVAL) descriptors sent from inside to the host. That direction was
// used once: the master side of a command's terminal. So the protocol
// gained, additively, a relayed terminal (proto.ExecSpec.Relay: the host
// sends a stream socket with the exec and the agent copies the terminal
// over it; proto.OpResize sets its size) and relayed network connections
// (the client's RelayNet); the native backend keeps passing descriptors.
// The host side of the protocol is package agent/client, shared with the
// native backend.
//
// # What differs from the native backend
//
// Each is declared to the conformance suite or checked by the escape
// tests, never skipped silently:
//   - No Landlock in gVisor: RestrictWrites is an ErrUnsupported error.
//   - /tmp is gVisor's own tmpfs (runsc mounts one), in the sandbox's
//     memory: a separate TmpBytes limit is refused (ErrUnsupported).
//   - Memory: the host can only OOM-kill the sentry, so a memory limit hit
//     ends the whole sandbox; the running command's Wait reports it
//     (SIGKILL, LimitMemory).
//   - Processes: RLIMIT_NPROC contains a fork bomb inside gVisor, but the
//     host has no counter to tell that the limit was hit: the status does
//     not name it (a shell prints "Cannot fork").
//   - A full disk is named from the host (statfs of the disk through
//     runsc's mount namespace): a current gVisor reports no real numbers
//     inside. DiskUsage (runtime.DiskMeter) is read there too.
//   - Page cache: the host counts gVisor's memory file (the commands'
//     memory and gVisor's cache of their files) and the gofer's cache of
//     the disk as the cgroup's page cache, neither of which is the
//     sandbox's; Usage's PageCacheBytes is UnknownBytes.
//   - gVisor before 2023 (Debian 12's runsc, ptrace platform only):
//     coreutils' ls and stat fail with EINVAL (its statx and fstatat
//     refuse AT_NO_AUTOMOUNT); a command can read the agent's
//     /proc/1/maps and /proc/1/environ (nothing secret) and make device
//     nodes (inside gVisor they name only gVisor's devices, and the disk
//     is nodev on the host). The agent copes with its missing openat2
//     (package pathwalk), setfsuid and ambient capabilities.
package gvisor
