// Package native is airlock's default isolation backend: Linux namespaces
// (user, mount, pid, net, ipc, uts, cgroup), an overlayfs root over a
// read-only template, cgroup v1 or v2 limits, and per-command seccomp,
// Landlock, dropped capabilities and no_new_privs applied by the in-sandbox
// agent. Sandbox root maps to a host uid range of its own (one slot of
// 65536 uids per sandbox); commands run as uid 1000 inside.
//
// Invariants: every sandbox's state dir and owner lock exist before its
// cgroup, so Reap never removes a sandbox that is being created; mounts
// live only in the sandbox's mount namespace and vanish with its last
// process; killing init (PID 1 of the pid namespace) kills every process.
// A paused sandbox on cgroup v1 has a thaw guard (package thawguard, shared
// with the gVisor backend), so that it still dies with its owner.
package native
