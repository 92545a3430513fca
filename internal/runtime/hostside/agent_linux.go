package hostside

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// Channel makes the agent's channel: a SOCK_SEQPACKET socketpair with the
// protocol's buffer sizes. The host keeps conn; child is the end to hand
// to the sandbox's process, which the caller closes once it is started.
// The host's end is non-blocking, so that its always-pending Recv waits
// in Go's poller rather than holding a daemon thread per sandbox; the
// child's end is blocking, as a process handed a descriptor expects.
func Channel() (conn *proto.Conn, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("agent channel: %w", err)
	}
	for i, fd := range fds {
		err := proto.SetBuffers(fd)
		if err == nil && i == 1 {
			err = unix.SetNonblock(fd, false)
		}
		if err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return nil, nil, fmt.Errorf("agent channel: %w", err)
		}
	}
	return proto.NewConn(os.NewFile(uintptr(fds[0]), "agent-host")), os.NewFile(uintptr(fds[1]), "agent-child"), nil
}

// AwaitReady reads the agent's first message (its ready, or why not)
// before the client's read loop runs. exited is closed when the
// sandbox's process (named proc in the error) has exited; a message it
// sent first is still read. The descriptors a ready came with are in its
// Passed, for the caller (Base.KeepWatch); any others are closed.
func AwaitReady(ctx context.Context, conn *proto.Conn, exited <-chan struct{}, proc string, timeout time.Duration) (*proto.Message, error) {
	type res struct {
		m   *proto.Message
		err error
	}
	ch := make(chan res, 1)
	go func() {
		m, files, err := conn.Recv()
		if err == nil && m.Op == proto.OpReady {
			m.Passed = files
		} else {
			closeFiles(files)
		}
		ch <- res{m, err}
	}()
	// a ready that comes after the wait ends is nobody's: its
	// descriptors are closed
	abandon := func() {
		go func() {
			if r := <-ch; r.m != nil {
				closeFiles(r.m.Passed)
			}
		}()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-exited:
		// the message may still be queued
		select {
		case r := <-ch:
			return r.m, r.err
		case <-time.After(100 * time.Millisecond):
		}
		abandon()
		return nil, errors.New(proc + " exited")
	case <-ctx.Done():
		abandon()
		return nil, ctx.Err()
	case <-t.C:
		abandon()
		return nil, errors.New("timed out")
	}
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// KeepWatch keeps, of the descriptors the agent's ready came with (see
// agent.Server.WatchFile), its inotify instance, and closes the rest:
// the teardown closes it after the sandbox's processes are gone, off the
// path a Destroy waits for (closeLater). Anything but an inotify
// instance is closed at once: the sandbox chose what it sent, and the
// host keeps nothing else of its making.
func (b *Base) KeepWatch(ready *proto.Message) {
	for _, f := range ready.Passed {
		if b.watch == nil && isInotify(f) {
			b.watch = f
			continue
		}
		f.Close()
	}
	ready.Passed = nil
}

// isInotify says whether f is an inotify instance.
func isInotify(f *os.File) bool {
	t, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	return err == nil && t == "anon_inode:inotify"
}

// Timings turns the agent's ready timings ("phase@unixnano ...", on the
// host's clock) into offsets from start.
func Timings(start time.Time, timings string) string {
	rel := timings
	for _, f := range strings.Fields(timings) {
		if k, v, ok := strings.Cut(f, "@"); ok {
			if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
				rel = strings.Replace(rel, f, fmt.Sprintf("%s@+%.3fms", k, float64(ns-start.UnixNano())/1e6), 1)
			}
		}
	}
	return rel
}

// CgroupMode is "v1" or "v2", for runtime.Isolation.
func CgroupMode(h *cgroups.Hierarchy) string {
	if h.Mode() == cgroups.V2 {
		return "v2"
	}
	return "v1"
}
