package agent

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The socket's inode comes from sock_diag, the same as /proc/net names,
// for TCP and UDP, and the process holding it is found.
func TestSocketOwner(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cc, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	peer := sc.RemoteAddr().(*net.TCPAddr).Port
	server := ln.Addr().(*net.TCPAddr).Port
	in, err := diagInode("tcp", peer, server)
	if err != nil {
		t.Fatalf("sock_diag tcp: %v", err)
	}
	if want := tableInode("tcp", peer); in == 0 || in != want {
		t.Errorf("sock_diag tcp inode %d, /proc/net/tcp says %d", in, want)
	}

	us, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer us.Close()
	uc, err := net.Dial("udp4", us.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	uport := uc.LocalAddr().(*net.UDPAddr).Port
	uin, err := diagInode("udp", uport, us.LocalAddr().(*net.UDPAddr).Port)
	if err != nil {
		t.Fatalf("sock_diag udp: %v", err)
	}
	if want := tableInode("udp", uport); uin == 0 || uin != want {
		t.Errorf("sock_diag udp inode %d, /proc/net/udp says %d", uin, want)
	}
	if in, err := diagInode("tcp", 1, server); err != nil || in != 0 {
		t.Errorf("no such socket: inode %d, %v; want 0, nil", in, err)
	}

	// A child holding the client end is its owner (the agent never is).
	f, err := cc.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	cc.Close() // now only the child holds it
	var got int
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if got = socketOwner("tcp", sc.RemoteAddr(), sc.LocalAddr()); got == cmd.Process.Pid {
			break
		}
	}
	if got != cmd.Process.Pid {
		t.Errorf("socketOwner = %d, want the child %d", got, cmd.Process.Pid)
	}
}

// Relays never take the descriptors the agent keeps for itself: with a
// small RLIMIT_NOFILE the relay cap shrinks to what is left.
func TestRelayBudget(t *testing.T) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	for _, tt := range []struct{ soft, cap, want int }{
		{4096, 256, 256},
		{agentFDReserve + 100, 256, 50},
		{agentFDReserve, 256, 1},
	} {
		lim := unix.Rlimit{Cur: uint64(tt.soft), Max: old.Max}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
		if got := relayBudget(tt.cap); got != tt.want {
			t.Errorf("nofile %d, cap %d: relay budget %d, want %d", tt.soft, tt.cap, got, tt.want)
		}
	}
}

// A kernel without tcp_diag (the cgroup v2 test VM's: its modules are not
// there to load) answers ENOENT for every socket, as for a closed one:
// the owner is still found, through /proc/net/tcp, and from then on the
// table is asked first.
func TestSocketOwnerWithoutDiagModules(t *testing.T) {
	defer func(f func(string, int, int) (uint32, error)) { diagLookup = f; noDiagTCP.Store(false) }(diagLookup)
	asked := 0
	diagLookup = func(string, int, int) (uint32, error) { asked++; return 0, nil }
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for i := range 2 {
		cc, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		// a child holds the client end (the agent is never the owner)
		f, err := cc.(*net.TCPConn).File()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sleep", "30")
		cmd.ExtraFiles = []*os.File{f}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		cc.Close()
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		if pid := socketOwner("tcp", sc.RemoteAddr(), sc.LocalAddr()); pid != cmd.Process.Pid {
			t.Errorf("connection %d: owner %d, want the child %d", i, pid, cmd.Process.Pid)
		}
	}
	if asked != 1 || !noDiagTCP.Load() {
		t.Errorf("sock_diag asked %d times (want once, then the table), off: %v", asked, noDiagTCP.Load())
	}
}
