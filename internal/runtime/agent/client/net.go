package client

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// serveNet handles the agent's network requests (proto.OpNetConn,
// proto.OpDNS) without blocking the read loop: the agent is inside the
// boundary, and nothing it sends may stall the host's side of the channel.
func (c *Client) serveNet(m *proto.Message, files []*os.File) {
	nw := c.opt.Network
	if nw == nil {
		for _, f := range files {
			f.Close()
		}
		_ = c.conn.Send(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "unsupported", Error: "this sandbox has no network"})
		return
	}
	pid := m.PID
	switch m.Op {
	case proto.OpNetConn:
		if m.Code == proto.CodeRefused {
			// the agent refused a connection (too busy): record it
			closeFiles(files)
			c.proxyRefused(0, m.Error)
			return
		}
		if len(files) == 1 && !c.opt.RelayNet {
			// The agent passed the accepted connection itself.
			conn, err := net.FileConn(files[0])
			files[0].Close()
			if err != nil {
				return
			}
			if reason, ok := c.takeProxySlot(); !ok {
				go c.refuseProxyConn(conn, pid, reason)
				return
			}
			go c.serveProxyConn(nw, conn, pid)
			return
		}
		closeFiles(files)
		if !c.opt.RelayNet {
			return // a connection request without its connection
		}
		if reason, ok := c.takeProxySlot(); !ok {
			c.proxyRefused(pid, reason)
			_ = c.conn.Send(&proto.Message{Op: proto.OpError, ID: m.ID, Code: proto.CodeRefused, Error: reason})
			return
		}
		// Relay: give the agent one end of a stream socket, serve the other.
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			c.proxyConns.Add(-1) // the slot taken above
			_ = c.conn.Send(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "internal", Error: err.Error()})
			return
		}
		mine, theirs := os.NewFile(uintptr(fds[0]), "net-host"), os.NewFile(uintptr(fds[1]), "net-agent")
		err = c.conn.Send(&proto.Message{Op: proto.OpNetConn, ID: m.ID}, theirs)
		theirs.Close()
		if err != nil {
			mine.Close()
			c.proxyConns.Add(-1)
			return
		}
		conn, err := net.FileConn(mine)
		mine.Close()
		if err != nil {
			c.proxyConns.Add(-1)
			return
		}
		go c.serveProxyConn(nw, conn, pid)
	case proto.OpDNS:
		closeFiles(files)
		q := m.Data
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, err := nw.DNS(ctx, q, pid)
			if err != nil {
				_ = c.conn.Send(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "internal", Error: err.Error()})
				return
			}
			_ = c.conn.Send(&proto.Message{Op: proto.OpDNS, ID: m.ID, Data: a})
		}()
	}
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// takeProxySlot counts one more open proxy connection, or says why the
// sandbox may not open one.
func (c *Client) takeProxySlot() (reason string, ok bool) {
	if n := c.proxyConns.Add(1); n > int64(c.opt.MaxProxyConns) {
		c.proxyConns.Add(-1)
		return fmt.Sprintf("the sandbox holds %d open proxy connections, the most it may", c.opt.MaxProxyConns), false
	}
	return "", true
}

// serveProxyConn serves a connection that holds a slot.
func (c *Client) serveProxyConn(nw runtime.Network, conn net.Conn, pid int) {
	defer c.proxyConns.Add(-1)
	nw.ProxyConn(conn, pid)
}

// refuseProxyConn answers a connection beyond the cap with a 503 that
// says why, and records it.
func (c *Client) refuseProxyConn(conn net.Conn, pid int, reason string) {
	c.proxyRefused(pid, reason)
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	body := "airlock: connection refused: " + reason + "\n"
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	conn.Close()
}

func (c *Client) proxyRefused(pid int, reason string) {
	if r, ok := c.opt.Network.(runtime.ProxyRefusals); ok {
		r.ProxyRefused(pid, reason)
	}
}
