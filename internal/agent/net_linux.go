package agent

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The sandbox's network: its namespace has only loopback, and the agent
// listens on it for the host. Programs reach the outside only through the
// HTTP proxy at ProxyAddr and the DNS server at DNSAddr; the agent hands
// each proxy connection and DNS query to the host, whose egress service
// decides. A program that ignores the proxy has no route at all.
//
// A proxy connection goes to the host as the accepted socket itself
// (OpNetConn with its descriptor), or, where the channel cannot carry a
// descriptor from the sandbox to the host (relay), the host answers
// OpNetConn with one end of a stream socket and the agent copies between
// the two. A DNS query goes as data (OpDNS) and comes back as data.
// Each carries the pid of the command (as the host knows it) whose
// process tree made it, when the agent can tell.

// The in-sandbox addresses of the proxy and the DNS server (the same as
// runtime.ProxyAddr and runtime.DNSAddr).
const (
	ProxyAddr = "127.0.0.1:3128"
	DNSAddr   = "127.0.0.1:53"
)

// Network ops (agent -> host, and the host's answers).
const (
	// OpNetConn (agent -> host): a connection to the proxy, with its
	// descriptor, or (relay) without one and an ID the host answers with
	// OpNetConn carrying a stream socket's end.
	OpNetConn = "net_conn"
	// OpDNS (agent -> host): a DNS query in Data, ID set; the host answers
	// OpDNS with the reply in Data, or OpError.
	OpDNS = "dns"
)

// netState is the agent's side of the network forwarding.
type netState struct {
	relay bool
	next  atomic.Uint64
	mu    sync.Mutex
	wait  map[uint64]chan *Message
}

// StartNetwork starts the proxy and DNS listeners on the sandbox's
// loopback. relay: the channel cannot carry descriptors to the host.
func (s *Server) StartNetwork(relay bool) error {
	ns := &netState{relay: relay, wait: map[uint64]chan *Message{}}
	ns.next.Store(1 << 62) // apart from the host's request ids
	proxy, err := net.Listen("tcp4", ProxyAddr)
	if err != nil {
		return fmt.Errorf("proxy listener: %w", err)
	}
	udp, err := net.ListenPacket("udp4", DNSAddr)
	if err != nil {
		proxy.Close()
		return fmt.Errorf("dns listener: %w", err)
	}
	tcp, err := net.Listen("tcp4", DNSAddr)
	if err != nil {
		proxy.Close()
		udp.Close()
		return fmt.Errorf("dns listener: %w", err)
	}
	s.net = ns
	go s.acceptProxy(proxy)
	go s.serveDNSPackets(udp)
	go s.acceptDNSStreams(tcp)
	return nil
}

// netAnswer delivers a host answer to an agent request; false if none
// waits for it.
func (s *Server) netAnswer(m *Message, files []*os.File) bool {
	if s.net == nil {
		return false
	}
	s.net.mu.Lock()
	ch := s.net.wait[m.ID]
	delete(s.net.wait, m.ID)
	s.net.mu.Unlock()
	if ch == nil {
		return false
	}
	m.Passed = files
	ch <- m
	return true
}

// ask sends an agent request and waits for the host's answer.
func (s *Server) ask(m *Message, timeout time.Duration) (*Message, error) {
	id := s.net.next.Add(1)
	m.ID = id
	ch := make(chan *Message, 1)
	s.net.mu.Lock()
	s.net.wait[id] = ch
	s.net.mu.Unlock()
	if err := s.conn.Send(m); err != nil {
		s.net.mu.Lock()
		delete(s.net.wait, id)
		s.net.mu.Unlock()
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-ch:
		if a.Op == OpError {
			closeAll(a.Passed)
			return nil, errors.New(a.Error)
		}
		return a, nil
	case <-t.C:
		s.net.mu.Lock()
		delete(s.net.wait, id)
		s.net.mu.Unlock()
		return nil, fmt.Errorf("the host did not answer within %s", timeout)
	}
}

func (s *Server) acceptProxy(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go s.forwardConn(c.(*net.TCPConn))
	}
}

func (s *Server) forwardConn(c *net.TCPConn) {
	defer c.Close()
	pid := s.commandOf(socketOwner("tcp", c.RemoteAddr()))
	if !s.net.relay {
		f, err := c.File()
		if err != nil {
			return
		}
		defer f.Close()
		_ = s.conn.Send(&Message{Op: OpNetConn, PID: pid}, f)
		return
	}
	a, err := s.ask(&Message{Op: OpNetConn, PID: pid}, 30*time.Second)
	if err != nil || len(a.Passed) != 1 {
		if a != nil {
			closeAll(a.Passed)
		}
		return
	}
	hc, err := net.FileConn(a.Passed[0])
	a.Passed[0].Close()
	if err != nil {
		return
	}
	defer hc.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(hc, c)
		if cw, ok := hc.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	_, _ = io.Copy(c, hc)
	_ = c.CloseWrite()
	<-done
}

// dnsQuery asks the host to answer one DNS message.
func (s *Server) dnsQuery(q []byte, pid int) ([]byte, error) {
	a, err := s.ask(&Message{Op: OpDNS, PID: pid, Data: q}, 15*time.Second)
	if err != nil {
		return nil, err
	}
	closeAll(a.Passed)
	return a.Data, nil
}

func (s *Server) serveDNSPackets(pc net.PacketConn) {
	buf := make([]byte, 4096)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		q := append([]byte(nil), buf[:n]...)
		go func() {
			pid := s.commandOf(socketOwner("udp", addr))
			if a, err := s.dnsQuery(q, pid); err == nil {
				_, _ = pc.WriteTo(a, addr)
			}
		}()
	}
}

func (s *Server) acceptDNSStreams(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go func() {
			defer c.Close()
			pid := s.commandOf(socketOwner("tcp", c.RemoteAddr()))
			r := bufio.NewReader(c)
			for {
				_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
				var l [2]byte
				if _, err := io.ReadFull(r, l[:]); err != nil {
					return
				}
				q := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(r, q); err != nil {
					return
				}
				a, err := s.dnsQuery(q, pid)
				if err != nil || len(a) > 0xffff {
					return
				}
				binary.BigEndian.PutUint16(l[:], uint16(len(a)))
				if _, err := c.Write(append(l[:], a...)); err != nil {
					return
				}
			}
		}()
	}
}

// commandOf returns the pid of the command whose process tree holds pid
// (0 when none does or pid is 0).
func (s *Server) commandOf(pid int) int {
	live := func(p int) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		_, ok := s.procs[p]
		return ok
	}
	orig := pid
	for i := 0; pid > 1 && i < 64; i++ {
		if live(pid) {
			return pid
		}
		pid, _ = parentAndSession(pid)
	}
	// A process that left the tree (a double fork: its parent is now the
	// agent) but not its command's session still names the command, whose
	// leader's pid is the session's id (commands start in sessions of
	// their own).
	if _, sid := parentAndSession(orig); sid > 1 && live(sid) {
		return sid
	}
	return 0
}

// parentAndSession reads a process's parent and session ids (0, 0 when
// it is gone).
func parentAndSession(pid int) (ppid, sid int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// pid (comm) state ppid pgrp session ...: comm may hold spaces and
	// parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	sid, _ = strconv.Atoi(f[3])
	return ppid, sid
}

// socketOwner finds the process that holds the client end of a loopback
// connection whose client address is peer: the socket's inode from
// /proc/net/{tcp,udp}, then the process with that socket open. 0 when it
// cannot tell.
func socketOwner(proto string, peer net.Addr) int {
	// /proc/net/* is read in pieces while connections come and go, and a
	// line can be missed: look again before giving up.
	for try := 0; try < 4; try++ {
		if pid := socketOwnerOnce(proto, peer); pid > 0 {
			return pid
		}
		time.Sleep(time.Duration(try+1) * time.Millisecond)
	}
	return 0
}

func socketOwnerOnce(proto string, peer net.Addr) int {
	var port int
	switch a := peer.(type) {
	case *net.TCPAddr:
		port = a.Port
	case *net.UDPAddr:
		port = a.Port
	default:
		return 0
	}
	table, err := os.ReadFile("/proc/net/" + proto)
	if err != nil {
		return 0
	}
	want := fmt.Sprintf(":%04X", port)
	inode := ""
	for _, line := range strings.Split(string(table), "\n") {
		fs := strings.Fields(line)
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(fs) >= 10 && strings.HasSuffix(fs[1], want) && strings.HasPrefix(fs[1], "0100007F") {
			inode = fs[9]
			break
		}
	}
	if inode == "" || inode == "0" {
		return 0
	}
	target := "socket:[" + inode + "]"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == 1 {
			continue
		}
		fds, err := os.ReadDir("/proc/" + p.Name() + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name()); err == nil && l == target {
				return pid
			}
		}
	}
	return 0
}
