package native

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Who owns a sandbox's user namespace matters beyond the sandbox: the
// kernel charges every per-user count made inside it (inotify instances
// and watches, queued signals, mqueue bytes, locked shm, namespaces) also
// to (parent namespace, owner), and the owner is the creator's effective
// uid. Created by host root, every sandbox would draw on host root's own
// budgets; owned by the sandbox's own host uid, each sandbox has budgets
// of its own at the host level, bounded by the host's per-user limits.
//
// So the init is cloned from an OS thread whose effective uid and gid
// alone are the sandbox's for that moment. Its real and saved ids stay 0
// (no sandbox process may signal or trace it meanwhile, and its permitted
// capabilities stay), its effective capabilities are raised again from
// the permitted set (the parent writes the id maps, which takes
// CAP_SETUID and CAP_SETGID on the host), and it is put back exactly as
// it was before any other goroutine may run on it.

// startOwned runs start, which must clone the sandbox's init with
// CLONE_NEWUSER from the calling thread (exec.Cmd.Start does), with
// uid:gid as the thread's effective ids, so that the new user namespace
// is owned by uid. The thread is restored and checked after start; when
// that fails, startOwned returns an error even if start succeeded, so
// the caller must then kill what start started.
//
// Every start runs on one spawner thread, locked for good and never
// handed back to the Go runtime: the init's Pdeathsig is tied by the
// kernel to the thread that forked it, not to the daemon, and Go ends a
// thread whenever a goroutine exits locked to it (the gVisor backend's
// launch does, when its runsc exits). A pool thread that started an init
// could be taken by such a goroutine, and that sandbox would die with it.
// A spawner left changed (restore failed) is parked for good, still the
// parent of the inits it started, and a new one takes over.
func startOwned(uid, gid int, start func() error) error {
	spawnerOnce.Do(func() { go spawner(spawns) })
	r := spawnReq{uid: uid, gid: gid, start: start, errc: make(chan error, 1)}
	spawns <- r
	return <-r.errc
}

type spawnReq struct {
	uid, gid int
	start    func() error
	errc     chan error
}

var (
	spawnerOnce sync.Once
	// spawns: one at a time (the dumpable flag is the process's, and
	// each switch saves and restores it).
	spawns = make(chan spawnReq)
)

// spawner serves startOwned on a thread of its own, locked until the
// process ends.
func spawner(reqs chan spawnReq) {
	goruntime.LockOSThread() // never unlocked: see startOwned
	for r := range reqs {
		err, clean := runOwned(r.uid, r.gid, r.start)
		if !clean {
			// (a locked thread makes new threads through Go's
			// template thread, not as a copy of itself)
			go spawner(reqs)
			r.errc <- err
			select {} // parked: changed, and a parent of inits
		}
		r.errc <- err
	}
}

// runOwned is startOwned on the locked thread; clean reports that the
// thread is as it was.
func runOwned(uid, gid int, start func() error) (err error, clean bool) {
	before, err := threadCreds()
	if err != nil {
		return fmt.Errorf("sandbox owner: %w", err), true
	}
	caps, err := getCaps()
	if err != nil {
		return fmt.Errorf("sandbox owner: %w", err), true
	}
	dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("sandbox owner: dumpable: %w", err), true
	}
	err = becomeOwner(uid, gid, caps)
	if err == nil {
		err = start()
	}
	if rerr := restoreCreds(caps, dumpable, before); rerr != nil {
		return fmt.Errorf("sandbox owner: cannot restore the creating thread: %w", rerr), false
	}
	return err, true
}

// becomeOwner sets the thread's effective gid and uid, then raises its
// effective capabilities again (the uid change cleared them).
func becomeOwner(uid, gid int, caps capSet) error {
	if err := setresid(sysSetresgid, -1, gid, -1); err != nil {
		return fmt.Errorf("sandbox owner: setresgid: %w", err)
	}
	if err := setresid(sysSetresuid, -1, uid, -1); err != nil {
		return fmt.Errorf("sandbox owner: setresuid: %w", err)
	}
	if err := setCaps(caps); err != nil {
		return fmt.Errorf("sandbox owner: capset: %w", err)
	}
	return nil
}

// restoreCreds puts the thread back: euid 0 first (which brings back the
// effective capabilities), then egid and the saved capabilities, then the
// process's dumpable flag (changing the euid reset it for the whole
// process), and checks the result against want.
func restoreCreds(caps capSet, dumpable int, want []byte) error {
	if err := setresid(sysSetresuid, -1, 0, -1); err != nil {
		return fmt.Errorf("setresuid: %w", err)
	}
	if err := setresid(sysSetresgid, -1, 0, -1); err != nil {
		return fmt.Errorf("setresgid: %w", err)
	}
	if err := setCaps(caps); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	// (2, suid_dumpable's "root only", cannot be set with prctl.)
	if dumpable == 0 || dumpable == 1 {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(dumpable), 0, 0, 0); err != nil {
			return fmt.Errorf("dumpable: %w", err)
		}
	}
	got, err := threadCreds()
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("credentials differ: %q, want %q", got, want)
	}
	return nil
}

// setresid calls setresuid or setresgid (nr) for this thread only: the
// Go wrappers change every thread of the process.
func setresid(nr uintptr, r, e, s int) error {
	if _, _, errno := unix.RawSyscall(nr, uintptr(r), uintptr(e), uintptr(s)); errno != 0 {
		return errno
	}
	return nil
}

// threadCreds is what this thread's status says of its ids and
// capabilities, and of the process's dumpable-dependent state.
func threadCreds() ([]byte, error) {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		for _, k := range []string{"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:"} {
			if bytes.HasPrefix(l, []byte(k)) {
				out = append(append(out, l...), '\n')
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no credentials in /proc/thread-self/status")
	}
	return out, nil
}

// capSet is a thread's capability sets (capget/capset version 3).
type capSet [2]unix.CapUserData

func getCaps() (capSet, error) {
	var c capSet
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	err := unix.Capget(&hdr, &c[0])
	return c, err
}

// setCaps sets this thread's capabilities (capset acts on the calling
// thread alone).
func setCaps(c capSet) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	return unix.Capset(&hdr, &c[0])
}

// nsGetOwnerUID is NS_GET_OWNER_UID (_IO(0xb7, 0x4)): the owner of a user
// namespace.
const nsGetOwnerUID = 0xb704

// checkOwner fails unless pid's user namespace is owned by uid.
func checkOwner(pid, uid int) error {
	o, err := nsOwner(pid)
	if err != nil {
		return fmt.Errorf("sandbox owner: %w", err)
	}
	if o != uid {
		return fmt.Errorf("sandbox owner: the user namespace is owned by uid %d, want %d", o, uid)
	}
	return nil
}

// nsOwner returns the host uid that owns the user namespace of pid.
func nsOwner(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var uid uint32
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), nsGetOwnerUID, uintptr(unsafe.Pointer(&uid))); errno != 0 {
		return 0, fmt.Errorf("NS_GET_OWNER_UID: %w", errno)
	}
	return int(uid), nil
}
