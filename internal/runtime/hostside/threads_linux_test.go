package hostside

import (
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// waiters is how many children or channels each test waits on at once:
// enough that a thread each would stand out of the runtime's own few.
const waiters = 64

// blockedIn counts this process's threads now blocked in one of the
// system calls nrs (/proc/self/task/*/syscall): the Go runtime keeps the
// threads an earlier test made, so a plain thread count would not tell.
func blockedIn(t *testing.T, nrs ...uintptr) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/syscall")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		nr, err := strconv.ParseUint(f[0], 10, 64)
		if err == nil && slices.Contains(nrs, uintptr(nr)) {
			n++
		}
	}
	return n
}

// settle lets the Go runtime start what threads it would for the
// goroutines just started.
func settle() { time.Sleep(300 * time.Millisecond) }

// Waiting for many children at once (a daemon waits for every
// sandbox's init all its life) takes no thread per child, and each wait
// ends when its child exits, which is then reaped by Wait.
func TestAwaitExitHoldsNoThreadPerChild(t *testing.T) {
	var cmds []*exec.Cmd
	done := make(chan int, waiters)
	for i := range waiters {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		go func() {
			AwaitExit(c.Process.Pid)
			_ = c.Wait()
			done <- i
		}()
	}
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
	}()
	settle()
	if n := blockedIn(t, unix.SYS_WAITID, unix.SYS_WAIT4); n >= waiters/2 {
		t.Errorf("%d threads blocked in wait for %d children: a thread per wait", n, waiters)
	}
	select {
	case i := <-done:
		t.Fatalf("the wait for child %d ended while it runs", i)
	default:
	}
	for _, c := range cmds {
		_ = c.Process.Kill()
	}
	for range waiters {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a wait did not end after its child was killed")
		}
	}
	for _, c := range cmds {
		if c.ProcessState == nil || c.ProcessState.Exited() {
			t.Errorf("child %d: state %v, want killed and reaped", c.Process.Pid, c.ProcessState)
		}
	}
}

// A Recv pending on every channel (the daemon's read loop of each
// sandbox's agent) takes no thread and no message buffer per channel,
// and each still gets its message and the descriptor sent with it.
func TestChannelRecvHoldsNoThreadOrBufferPerChannel(t *testing.T) {
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc
	type pair struct {
		host  *proto.Conn
		child *os.File
	}
	var ps []pair
	got := make(chan error, waiters)
	for range waiters {
		host, child, err := Channel()
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, pair{host, child})
		go func() {
			m, files, err := host.Recv()
			if err == nil && (m.Op != "ready" || len(files) != 1) {
				t.Errorf("got %q with %d descriptors, want ready with one", m.Op, len(files))
			}
			for _, f := range files {
				f.Close()
			}
			got <- err
		}()
	}
	defer func() {
		for _, p := range ps {
			p.host.Close()
			p.child.Close()
		}
	}()
	settle()
	if n := blockedIn(t, unix.SYS_RECVMSG); n >= waiters/2 {
		t.Errorf("%d threads blocked in recvmsg for %d channels: a thread per Recv", n, waiters)
	}
	goruntime.ReadMemStats(&ms)
	if grown := int64(ms.HeapAlloc) - int64(heap0); grown > waiters<<20/2 {
		t.Errorf("the heap grew by %d bytes for %d pending Recvs: a message buffer each", grown, waiters)
	}
	for _, p := range ps {
		// the child's end is blocking, as the agent is handed it
		if err := proto.NewConn(p.child).Send(&proto.Message{Op: "ready"}, os.Stdin); err != nil {
			t.Fatal(err)
		}
	}
	for range waiters {
		select {
		case err := <-got:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a Recv did not get its message")
		}
	}
}
