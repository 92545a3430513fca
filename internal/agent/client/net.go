package client

import (
	"context"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/agent"
)

// serveNet handles the agent's network requests (agent.OpNetConn,
// agent.OpDNS) without blocking the read loop: the agent is inside the
// boundary, and nothing it sends may stall the host's side of the channel.
func (c *Client) serveNet(m *agent.Message, files []*os.File) {
	nw := c.opt.Network
	if nw == nil {
		for _, f := range files {
			f.Close()
		}
		_ = c.conn.Send(&agent.Message{Op: agent.OpError, ID: m.ID, Code: "unsupported", Error: "this sandbox has no network"})
		return
	}
	pid := m.PID
	switch m.Op {
	case agent.OpNetConn:
		if len(files) == 1 && !c.opt.RelayNet {
			// The agent passed the accepted connection itself.
			conn, err := net.FileConn(files[0])
			files[0].Close()
			if err != nil {
				return
			}
			go nw.ProxyConn(conn, pid)
			return
		}
		for _, f := range files {
			f.Close()
		}
		if !c.opt.RelayNet {
			return // a connection request without its connection
		}
		// Relay: give the agent one end of a stream socket, serve the other.
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			_ = c.conn.Send(&agent.Message{Op: agent.OpError, ID: m.ID, Code: "internal", Error: err.Error()})
			return
		}
		mine, theirs := os.NewFile(uintptr(fds[0]), "net-host"), os.NewFile(uintptr(fds[1]), "net-agent")
		err = c.conn.Send(&agent.Message{Op: agent.OpNetConn, ID: m.ID}, theirs)
		theirs.Close()
		if err != nil {
			mine.Close()
			return
		}
		conn, err := net.FileConn(mine)
		mine.Close()
		if err != nil {
			return
		}
		go nw.ProxyConn(conn, pid)
	case agent.OpDNS:
		for _, f := range files {
			f.Close()
		}
		q := m.Data
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, err := nw.DNS(ctx, q, pid)
			if err != nil {
				_ = c.conn.Send(&agent.Message{Op: agent.OpError, ID: m.ID, Code: "internal", Error: err.Error()})
				return
			}
			_ = c.conn.Send(&agent.Message{Op: agent.OpDNS, ID: m.ID, Data: a})
		}()
	}
}
