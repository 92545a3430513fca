package main

// Cases that use up per-user kernel budgets (inotify, queued signals):
// each takes what it can, bounded by its arguments, prints how much, and
// holds it for the hold argument's seconds (the test kills it sooner).

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// holdFor is how long main keeps the process (and what it took) after
// printing the result.
var holdFor time.Duration

func intArg(args []string, i int, def int) int {
	n, err := strconv.Atoi(arg(args, i, strconv.Itoa(def)))
	if err != nil {
		panic(err)
	}
	return n
}

func setHold(args []string, i int) {
	holdFor = time.Duration(intArg(args, i, 0)) * time.Second
}

func init() {
	// inotify-instances MAX HOLD: inotify instances until the first error.
	cases["inotify-instances"] = func(args []string) result {
		max := intArg(args, 0, 4096)
		setHold(args, 1)
		n, err := 0, error(nil)
		for ; n < max; n++ {
			if _, err = unix.InotifyInit1(unix.IN_CLOEXEC); err != nil {
				break
			}
		}
		r := errResult(err, "")
		r.N = int64(n)
		return r
	}
	// inotify-watches DIRS INSTANCES HOLD: DIRS directories, each watched
	// by each of INSTANCES instances, until the first error.
	cases["inotify-watches"] = func(args []string) result {
		dirs, insts := intArg(args, 0, 1000), intArg(args, 1, 1)
		setHold(args, 2)
		base := filepath.Join(os.TempDir(), "probe-watches")
		for i := range dirs {
			if err := os.MkdirAll(filepath.Join(base, strconv.Itoa(i)), 0o755); err != nil {
				return errResult(err, "mkdir")
			}
		}
		n, err := 0, error(nil)
		for range insts {
			fd, ierr := unix.InotifyInit1(unix.IN_CLOEXEC)
			if ierr != nil {
				err = ierr
				break
			}
			for i := 0; i < dirs && err == nil; i++ {
				if _, err = unix.InotifyAddWatch(fd, filepath.Join(base, strconv.Itoa(i)), unix.IN_CREATE); err == nil {
					n++
				}
			}
			if err != nil {
				break
			}
		}
		r := errResult(err, fmt.Sprintf("%d dirs x %d instances", dirs, insts))
		r.N = int64(n)
		return r
	}
	// mqueue-fill MAX HOLD: POSIX message queues of the default size until
	// the first error (EMFILE: RLIMIT_MSGQUEUE's bytes).
	cases["mqueue-fill"] = func(args []string) result {
		max := intArg(args, 0, 256)
		setHold(args, 1)
		n, err := 0, error(nil)
		for ; n < max; n++ {
			name := cstr("probe-mq-" + strconv.Itoa(n)) // the call's name has no leading slash
			fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600, 0, 0, 0)
			if e != 0 {
				err = e
				break
			}
			_ = fd // kept open (and the queue kept) while the process holds
		}
		var lim unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_MSGQUEUE, &lim)
		r := errResult(err, fmt.Sprintf("rlimit msgqueue cur=%d", lim.Cur))
		r.N = int64(n)
		return r
	}
	// sigqueue-rt MAX HOLD: queues a blocked real-time signal to this
	// thread until the first error (EAGAIN: RLIMIT_SIGPENDING).
	cases["sigqueue-rt"] = func(args []string) result {
		max := intArg(args, 0, 1<<17)
		setHold(args, 1)
		const sig = 42 // SIGRTMIN+8: no handler of Go's
		var set unix.Sigset_t
		w := 8 * unsafe.Sizeof(set.Val[0])
		set.Val[(sig-1)/w] |= 1 << ((sig - 1) % w)
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
			return errResult(err, "block")
		}
		var info [128]byte // siginfo: signo, errno, code (SI_QUEUE)
		*(*int32)(unsafe.Pointer(&info[0])) = sig
		*(*int32)(unsafe.Pointer(&info[8])) = -1
		pid, tid := unix.Getpid(), unix.Gettid()
		n, err := 0, error(nil)
		for ; n < max; n++ {
			if _, _, e := unix.RawSyscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(pid), uintptr(tid), sig, uintptr(unsafe.Pointer(&info[0])), 0, 0); e != 0 {
				err = e
				break
			}
		}
		var lim unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_SIGPENDING, &lim)
		r := errResult(err, fmt.Sprintf("rlimit sigpending cur=%d max=%d", lim.Cur, lim.Max))
		r.N = int64(n)
		return r
	}
}
