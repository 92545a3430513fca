// Package hostside is the host-side skeleton that both isolation backends
// (native and gVisor) share: what a sandbox holds on the host besides the
// isolation itself, how a Create takes it step by step, and the one order
// in which it is given back.
//
// # What a sandbox holds on the host
//
//   - A state dir (Layout.StateDir/sandboxes/ID) and its owner lock, an
//     flock held for the sandbox's life (StateDir). They exist before
//     anything else of the sandbox, so that Reap, which takes a sandbox
//     whose lock it can take for orphaned, never sees a sandbox that is
//     being created as abandoned. info.json (Info) says what a reaper
//     needs; a sandbox being created has none yet, and one being removed
//     is renamed .dead-ID while its owner still holds the lock.
//   - A uid slot (Slot), for a backend whose sandbox root is a host uid
//     range of its own (native): an flock in one host-wide directory, so
//     no two sandboxes ever share host uids, whatever their state dirs.
//   - A cgroup under the layout's parent (one parent per state dir: Reap
//     treats every group under it as its own).
//   - A disk of its own (package diskimg), made in the background while
//     the Create goes on (PendingDisk), unlinked once its loop device
//     holds it and mounted detached: nothing of it is left for a reaper
//     but an image a crash left between its copy and its attach.
//   - The agent's channel, a lifetime timer, the cgroup freezer (package
//     thawguard) and the done channel (Base).
//
// # Create
//
// A backend's Create is a list of named, short steps (Step, RunSteps)
// with a Rollback: the sandbox's own teardown (Base.Destroy, safe on a
// partly made sandbox) is pushed first, and a step that takes what Base
// does not hold (a disk still being made) pushes its own undo on top. On
// failure the stack is undone last-pushed first, and every undo error is
// returned with the Create's; on success it is released, and what the
// sandbox holds is given back by its Destroy.
//
// # Teardown order
//
// Base.Teardown gives everything back in one order, the same for both
// backends and for a failed Create: (1) stop the lifetime timer; (2)
// thaw the cgroup and end a thaw guard; (3) the backend ends every
// process of the sandbox and waits for them; (4) close the agent's
// channel; (5) destroy the cgroup (which kills anything left); (6)
// rename the state dir .dead-ID and remove it, the lock still held; (7)
// release the uid slot; (8) release the owner lock; (9) hand what the
// host kept of the sandbox so that its last close is not in the exit of
// the sandbox's last process to a background close (closeLater): the
// disk's mount (KeepMount; its unmount syncs the disk through the loop
// device and releases the device), then the disk's image (unlinked),
// whose blocks go back to the host's filesystem (on one mounted with
// discard, a wait for the host's disk), and the agent's inotify instance
// (Base.KeepWatch), whose release waits for an RCU grace period; (10)
// close Done. So a
// uid slot is free only once no process can run as its uids, and the lock
// goes last: a reaper never mistakes a half-removed sandbox for a crashed
// one.
package hostside
