package agent

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Egress attribution: which process holds the client end of a loopback
// connection to the proxy or DNS server. Its cost must not grow with the
// connections a sandbox holds (a command that holds thousands must not
// make every lookup, and so the agent, slow and big):
//   - the socket's inode comes from one exact sock_diag query (netlink)
//     by the connection's addresses and ports, not from reading all of
//     /proc/net/tcp; only a kernel without sock_diag (gVisor) reads that
//     table, streamed line by line;
//   - the process comes from its /proc/PID/fd links, read in chunks; the
//     process that owned the last socket found is looked at first, from
//     the descriptor after the last one found, so a flood from one
//     process costs a few readlinks per connection.
//
// Memory per lookup is a few chunks of names, whatever the counts.

// ownerChunk is how many directory names one lookup holds at a time.
const ownerChunk = 128

// lastOwner remembers where the last socket was found (pid<<32 | fd).
var lastOwner atomic.Uint64

// socketOwner returns the pid of the process that holds the client end
// of a loopback connection (proto "tcp" or "udp") whose client address
// is peer and whose server address is local; 0 when it cannot tell.
func socketOwner(proto string, peer, local net.Addr) int {
	pport, lport := addrPort(peer), addrPort(local)
	if pport == 0 {
		return 0
	}
	inode, err := uint32(0), errNoDiag
	if !diagOff(proto).Load() {
		inode, err = diagLookup(proto, pport, lport)
	}
	if err != nil || inode == 0 {
		inode = tableInode(proto, pport)
		// ENOENT is both "no such socket" and "no diag module for the
		// protocol" (a kernel without tcp_diag/udp_diag loaded): a socket
		// the table has and sock_diag did not find means the latter, so
		// the table is used from then on.
		if inode != 0 && err == nil {
			diagOff(proto).Store(true)
		}
	}
	if inode == 0 {
		return 0
	}
	return inodeOwner(inode)
}

// noDiagTCP and noDiagUDP mark the protocols whose sockets sock_diag
// does not know here.
var noDiagTCP, noDiagUDP atomic.Bool

func diagOff(proto string) *atomic.Bool {
	if proto == "udp" {
		return &noDiagUDP
	}
	return &noDiagTCP
}

// diagLookup is diagInode; tests stand in a kernel without diag modules.
var diagLookup = diagInode

var errNoDiag = errors.New("sock_diag: not answering for this protocol")

func addrPort(a net.Addr) int {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.Port
	case *net.UDPAddr:
		return a.Port
	}
	return 0
}

// inetDiagReq is struct inet_diag_req_v2 (linux/inet_diag.h): family,
// protocol, extensions, pad, states, then struct inet_diag_sockid:
// sport, dport (big-endian), src[4], dst[4], interface, cookie[2].
const inetDiagReqLen = 56

// diagInode asks the kernel (sock_diag, an exact lookup, not a dump) for
// the inode of the loopback socket bound to 127.0.0.1:port and connected
// to 127.0.0.1:server (TCP), or the UDP socket that a datagram from the
// server at 127.0.0.1:server to port would reach.
func diagInode(proto string, port, server int) (uint32, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	req := make([]byte, unix.NLMSG_HDRLEN+inetDiagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // seq
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = unix.AF_INET
	// The kernel looks a TCP socket up from its own side (local = src)
	// and a UDP socket as a datagram's receiver (src is the sender).
	sport, dport := port, server
	r[1] = unix.IPPROTO_TCP
	if proto == "udp" {
		r[1] = unix.IPPROTO_UDP
		sport, dport = server, port
	}
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(sport))
	binary.BigEndian.PutUint16(id[2:], uint16(dport))
	copy(id[4:], net.IPv4(127, 0, 0, 1).To4())
	copy(id[20:], net.IPv4(127, 0, 0, 1).To4())
	ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], ^uint32(0))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 1024)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 {
		return 0, fmt.Errorf("sock_diag: unreadable answer: %v", err)
	}
	m := msgs[0]
	switch m.Header.Type {
	case unix.NLMSG_ERROR:
		if len(m.Data) >= 4 {
			if e := int32(ne.Uint32(m.Data)); e != 0 {
				if unix.Errno(-e) == unix.ENOENT {
					return 0, nil // no such socket (it closed): no owner
				}
				return 0, unix.Errno(-e)
			}
		}
		return 0, fmt.Errorf("sock_diag: empty answer")
	case unix.SOCK_DIAG_BY_FAMILY:
		// struct inet_diag_msg: 4 bytes, the sockid (48), expires,
		// rqueue, wqueue, uid, inode.
		if len(m.Data) < 72 {
			return 0, fmt.Errorf("sock_diag: short answer")
		}
		return ne.Uint32(m.Data[68:]), nil
	}
	return 0, fmt.Errorf("sock_diag: answer of type %d", m.Header.Type)
}

// tableInode finds the socket in /proc/net/{tcp,udp}, read a line at a
// time: the fallback where sock_diag is missing.
func tableInode(proto string, port int) uint32 {
	f, err := os.Open("/proc/net/" + proto)
	if err != nil {
		return 0
	}
	defer f.Close()
	want := fmt.Sprintf("0100007F:%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) >= 10 && fs[1] == want {
			n, _ := strconv.ParseUint(fs[9], 10, 32)
			return uint32(n)
		}
	}
	return 0
}

// inodeOwner finds the process (not the agent) with the socket open.
func inodeOwner(inode uint32) int {
	target := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	last := lastOwner.Load()
	lastPID, lastFD := int(last>>32), int(uint32(last))
	if lastPID > 1 {
		// A flood's connections come in descriptor order, a few handled
		// at once: the one sought is most likely near the last found.
		for d := 1; d <= guessFDs; d++ {
			for _, fd := range [2]int{lastFD + d, lastFD - d + 1} {
				if fd >= 0 && fdIs(lastPID, fd, target) {
					remember(lastPID, fd)
					return lastPID
				}
			}
		}
		if fd := scanFDs(lastPID, target); fd >= 0 {
			remember(lastPID, fd)
			return lastPID
		}
	}
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	self := os.Getpid()
	for {
		names, err := d.Readdirnames(ownerChunk)
		for _, name := range names {
			pid, err := strconv.Atoi(name)
			if err != nil || pid <= 1 || pid == self || pid == lastPID {
				continue
			}
			if fd := scanFDs(pid, target); fd >= 0 {
				remember(pid, fd)
				return pid
			}
		}
		if err != nil {
			return 0
		}
	}
}

// guessFDs is how far from the last descriptor found inodeOwner looks
// first, each way.
const guessFDs = 48

// maxScanFDs bounds the descriptor numbers one scan holds (4 bytes
// each); a process with more is scanned in directory order.
const maxScanFDs = 1 << 16

func remember(pid, fd int) { lastOwner.Store(uint64(pid)<<32 | uint64(uint32(fd))) }

func fdIs(pid, fd int, target string) bool {
	l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd))
	return err == nil && l == target
}

// scanFDs returns the descriptor of pid that is target, or -1. It looks
// from the highest descriptor down: a new connection's usually is.
func scanFDs(pid int, target string) int {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return -1
	}
	defer d.Close()
	var fds []int32
	more := true
	for more && len(fds) < maxScanFDs {
		names, err := d.Readdirnames(ownerChunk)
		for _, name := range names {
			if fd, err := strconv.Atoi(name); err == nil {
				fds = append(fds, int32(fd))
			}
		}
		more = err == nil
	}
	slices.Sort(fds)
	for i := len(fds) - 1; i >= 0; i-- {
		if fdIs(pid, int(fds[i]), target) {
			return int(fds[i])
		}
	}
	for more {
		names, err := d.Readdirnames(ownerChunk)
		for _, name := range names {
			if l, lerr := os.Readlink(dir + name); lerr == nil && l == target {
				fd, _ := strconv.Atoi(name)
				return fd
			}
		}
		more = err == nil
	}
	return -1
}
