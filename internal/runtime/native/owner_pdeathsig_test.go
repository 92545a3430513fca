package native

import (
	"os"
	"os/exec"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox's init is started with Pdeathsig, which the kernel ties to the
// thread that forked it, not to the daemon: the init is killed when that
// thread ends. Go ends a thread whenever a goroutine exits while locked to
// it (the gVisor backend's launch does so by design, when its runsc exits),
// so the thread that started an init must never be handed back to the Go
// runtime, where any such goroutine may take it: else a gVisor sandbox
// ending (an attacker inside can end its own) kills native sandboxes of
// other users that happen to have been started from that thread.
func TestStartOwnedInitOutlivesOtherLockedThreads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	// Keep the main thread (which Go never ends) out of the way.
	if release, ok := holdMainThread(); ok {
		defer close(release)
	}
	cmd := exec.Command(sleep, "60")
	// (ids set in the child as Create's are, so that the exec keeps
	// Pdeathsig: a real uid other than the effective one would clear it)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: &syscall.Credential{Uid: 0, Gid: 0}}
	var tid int
	if err := startOwned(UIDRangeStart, UIDRangeStart, func() error {
		tid = unix.Gettid()
		return cmd.Start()
	}); err != nil {
		t.Fatal(err)
	}
	exited, waited := make(chan error, 1), make(chan struct{})
	go func() { exited <- cmd.Wait(); close(waited) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-waited
	}()
	if tid == os.Getpid() {
		t.Skip("started from the main thread, which Go never ends")
	}

	// Other goroutines lock threads; one that lands on the starting
	// thread ends its goroutine locked (as oci's launch does), the others
	// hold theirs so that the next try gets another thread.
	var held []chan struct{}
	defer func() {
		for _, h := range held {
			close(h)
		}
	}()
	landed := false
	for i := 0; i < 64 && !landed; i++ {
		got, release := make(chan bool), make(chan struct{})
		go func() {
			goruntime.LockOSThread()
			if unix.Gettid() == tid {
				got <- true
				return // locked: Go ends the thread
			}
			got <- false
			<-release
			goruntime.UnlockOSThread()
		}()
		landed = <-got
		held = append(held, release)
	}
	if landed {
		t.Logf("a locked goroutine ran on the thread that started the init, and ended")
	}
	select {
	case err := <-exited:
		t.Fatalf("the init died (%v) when another goroutine's locked thread ended: its Pdeathsig parent thread was handed back to the Go runtime", err)
	case <-time.After(300 * time.Millisecond):
	}
}

// holdMainThread locks a goroutine to the process's main thread, if one
// lands there within a few tries, until release is closed.
func holdMainThread() (release chan struct{}, ok bool) {
	release = make(chan struct{})
	var others []chan struct{}
	defer func() {
		for _, o := range others {
			close(o)
		}
	}()
	for i := 0; i < 64; i++ {
		got, rel := make(chan bool), make(chan struct{})
		go func() {
			goruntime.LockOSThread()
			main := unix.Gettid() == os.Getpid()
			got <- main
			if main {
				<-release
			} else {
				<-rel
			}
			goruntime.UnlockOSThread()
		}()
		if <-got {
			close(rel)
			return release, true
		}
		others = append(others, rel)
	}
	return release, false
}
