package conformance

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Host-side checks for the escape suites' budget attacks: a sandbox that
// used up every per-user kernel budget it can reach must leave the
// caller's (host root's) own budgets usable.

// HostInotify makes an inotify instance and a watch of dir as the
// calling process; it fails as the kernel refuses either.
func HostInotify(dir string) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("inotify_init1: %w", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE); err != nil {
		return fmt.Errorf("inotify_add_watch: %w", err)
	}
	return nil
}

// HostSignals queues a real-time signal to the calling thread (blocked,
// then taken back) and makes a POSIX timer: both are charged to the
// caller's RLIMIT_SIGPENDING.
func HostSignals() error {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	const sig = 42 // SIGRTMIN+8: no handler of Go's
	var set, old unix.Sigset_t
	w := 8 * unsafe.Sizeof(set.Val[0])
	set.Val[(sig-1)/w] |= 1 << ((sig - 1) % w)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		return err
	}
	defer func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }()
	var info [128]byte // siginfo: signo, errno, code (SI_QUEUE)
	*(*int32)(unsafe.Pointer(&info[0])) = sig
	*(*int32)(unsafe.Pointer(&info[8])) = -1
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(unix.Getpid()), uintptr(unix.Gettid()), sig, uintptr(unsafe.Pointer(&info[0])), 0, 0); e != 0 {
		return fmt.Errorf("sigqueue: %w", e)
	}
	var ts unix.Timespec // take it back without waiting
	if _, _, e := unix.Syscall6(unix.SYS_RT_SIGTIMEDWAIT, uintptr(unsafe.Pointer(&set)), 0, uintptr(unsafe.Pointer(&ts)), unsafe.Sizeof(uint64(0)), 0, 0); e != 0 {
		return fmt.Errorf("sigtimedwait: %w", e)
	}
	var ev [64]byte // sigevent: value, signo, notify (SIGEV_NONE)
	*(*int32)(unsafe.Pointer(&ev[12])) = 1
	var id int32
	if _, _, e := unix.Syscall(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ev[0])), uintptr(unsafe.Pointer(&id))); e != 0 {
		return fmt.Errorf("timer_create: %w", e)
	}
	if _, _, e := unix.Syscall(unix.SYS_TIMER_DELETE, uintptr(id), 0, 0); e != 0 {
		return fmt.Errorf("timer_delete: %w", e)
	}
	return nil
}

// HostMqueue makes a POSIX message queue of the default size (charged to
// the caller's RLIMIT_MSGQUEUE) and removes it.
func HostMqueue() error {
	name, err := unix.BytePtrFromString(fmt.Sprintf("airlock-test-%d", unix.Gettid()))
	if err != nil {
		return err
	}
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600, 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("mq_open: %w", e)
	}
	unix.Close(int(fd))
	if _, _, e := unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(name)), 0, 0); e != 0 {
		return fmt.Errorf("mq_unlink: %w", e)
	}
	return nil
}

// HostSigQ is the SigQ line of the caller's status: signals queued for
// its real uid, and its limit.
func HostSigQ() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigQ:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
