// Package thawguard keeps a paused sandbox mortal on cgroup v1, for both
// backends (native and gVisor), which pause a sandbox with its cgroup's
// freezer.
//
// A sandbox of a daemon must die with it, even when the daemon is
// SIGKILLed: its first process has a parent-death SIGKILL (the native
// init, gVisor's runsc). But cgroup v1's freezer holds back even SIGKILL:
// in a paused sandbox that signal stays pending while the group is
// frozen, so the sandbox would stay frozen for good (Reap only runs at the
// next start). So a pause (Freezer.Freeze) first starts a thaw guard: the
// airlock binary again, as "airlock-thaw-guard FREEZER-STATE-FILE",
// outside the sandbox, which blocks reading a pipe whose write end only
// the daemon holds. When the daemon dies the pipe reads end of file, the
// guard thaws the group, and the pending SIGKILL ends the sandbox. Resume
// and Destroy thaw the group themselves, then write a byte to the pipe and
// close it: a guard that reads a byte exits without thawing, so an old
// guard can never undo a later pause, and nobody waits for it. The guard
// ignores SIGTERM, SIGINT and SIGHUP (a stop of the whole service signals
// every process of it, and the guard must not go before the daemon).
// cgroup v2's freezer lets fatal signals through, so on v2 there is no
// guard.
//
// The binary's main (through native.MaybeInit and gvisor.MaybeInit, which
// call MaybeRun) turns a process started as a guard into one.
package thawguard
