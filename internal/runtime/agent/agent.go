// Package agent is airlock's in-sandbox agent, PID 1 of every sandbox; the
// small versioned protocol the host speaks to it is package agent/proto.
// The agent is not
// trusted for evidence and holds no secrets: the host creates each
// command's stdio and reads it itself. The agent starts commands with every
// capability dropped, no_new_privs, Landlock and the seccomp filter applied
// on one dedicated, permanently hardened OS thread, reaps all orphans,
// enforces per-command timeouts, and reports what each command did to the
// files of the watched directories (inotify, package agent/watch). Its
// file API runs in package agent/fileops. Only the runtime backends import
// it.
package agent
