package egress

import (
	"net"

	"golang.org/x/sys/unix"
)

// tcpBytes is what the kernel counts of a TCP connection so far: bytes
// sent and acknowledged, and bytes received. It reads TCP_INFO, so a
// tunnel's bytes are known while it is open without the proxy touching
// them (the relay splices).
func tcpBytes(c *net.TCPConn) (sent, recv int64, ok bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		return 0, 0, false
	}
	return int64(info.Bytes_acked), int64(info.Bytes_received), true
}
