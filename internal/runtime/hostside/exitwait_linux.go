package hostside

import (
	"os"

	"golang.org/x/sys/unix"
)

// AwaitExit returns once the child pid has exited (it is a zombie, or
// already reaped), parking the goroutine in Go's poller on a pidfd of the
// child rather than an OS thread in wait: the daemon waits for every
// sandbox's init for the sandbox's whole life, and a thread each would
// be a thousand host tasks for a thousand idle sandboxes. The caller then
// reaps it (exec.Cmd.Wait), which no longer blocks. Where a pidfd cannot
// be had or polled it returns at once, and that Wait blocks a thread as
// before. The caller must not have reaped pid yet (its number could be
// another process's then).
func AwaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd") // non-blocking: Go polls it
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		// readable once the process has exited; a poll, not a waitid, so
		// that nothing is reaped here
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(p, 0)
			if err == unix.EINTR {
				continue
			}
			return err != nil || n > 0
		}
	})
}
