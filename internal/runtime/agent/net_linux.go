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

	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"golang.org/x/sys/unix"
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
//
// What a command can make the agent hold is bounded, whatever it opens:
// at most maxHandoffs connections are being looked up and handed off at
// once (the rest wait in the listener's backlog, and one that finds no
// slot within handoffWait is refused), at most maxHandoffs DNS queries
// wait for the host (more are dropped: clients retry), and, relaying, at
// most the sandbox's proxy connection cap are relayed (beyond it they are
// refused), each with two small copy buffers, of which at most
// maxBigRelayBufs grow for bulk (copyPlain). A refused connection gets
// an HTTP 503 that says why, and the host is told (OpNetConn with Code
// "refused") so that it is recorded.

// The in-sandbox addresses of the proxy and the DNS server (the same as
// runtime.ProxyAddr and runtime.DNSAddr).
const (
	ProxyAddr = "127.0.0.1:3128"
	DNSAddr   = "127.0.0.1:53"
)

// Bounds of the agent's network forwarding (see above).
const (
	maxHandoffs   = 32
	maxDNSStreams = 64
	handoffWait   = 2 * time.Second
	// DefaultMaxProxyConns is a sandbox's cap on open proxy connections
	// when InitConfig.MaxProxyConns is 0.
	DefaultMaxProxyConns = 256
)

// agentFDReserve is the part of its descriptor table the agent keeps
// for everything but relays (hand-offs, DNS streams, commands' stdio, the
// file API): relays never take it, so that a command holding proxy
// connections cannot make exec or the file API fail with EMFILE.
const agentFDReserve = 2*maxHandoffs + maxDNSStreams + 128

// relayBudget lowers a relay cap to what the agent's RLIMIT_NOFILE
// leaves beside agentFDReserve (each relay holds two descriptors).
func relayBudget(maxConns int) int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return maxConns
	}
	return max(1, min(maxConns, (int(rl.Cur)-agentFDReserve)/2))
}

// netState is the agent's side of the network forwarding.
type netState struct {
	relay bool
	// slots bounds hand-offs and DNS queries in flight; relays counts
	// the proxy connections being relayed, at most maxConns.
	slots    chan struct{}
	dnsSlots chan struct{}
	relays   atomic.Int64
	maxConns int64
	// dnsStreams counts DNS-over-TCP connections, at most maxDNSStreams.
	dnsStreams atomic.Int64
	next       atomic.Uint64
	mu         sync.Mutex
	wait       map[uint64]chan *proto.Message
}

// StartNetwork starts the proxy and DNS listeners on the sandbox's
// loopback. relay: the channel cannot carry descriptors to the host.
// maxConns caps the proxy connections relayed at once (0: the default).
func (s *Server) StartNetwork(relay bool, maxConns int) error {
	if maxConns <= 0 {
		maxConns = DefaultMaxProxyConns
	}
	if relay {
		maxConns = relayBudget(maxConns)
	}
	ns := &netState{relay: relay, wait: map[uint64]chan *proto.Message{}, maxConns: int64(maxConns),
		slots: make(chan struct{}, maxHandoffs), dnsSlots: make(chan struct{}, maxHandoffs)}
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
func (s *Server) netAnswer(m *proto.Message, files []*os.File) bool {
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
func (s *Server) ask(m *proto.Message, timeout time.Duration) (*proto.Message, error) {
	id := s.net.next.Add(1)
	m.ID = id
	ch := make(chan *proto.Message, 1)
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
		if a.Op == proto.OpError {
			closeAll(a.Passed)
			return nil, &hostError{code: a.Code, msg: a.Error}
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
		// Wait here, not in a goroutine per connection: what waits
		// beyond the slots stays in the kernel's backlog.
		t := time.NewTimer(handoffWait)
		select {
		case s.net.slots <- struct{}{}:
			t.Stop()
			go s.forwardConn(c.(*net.TCPConn))
		case <-t.C:
			s.refuseConn(c, fmt.Sprintf("the sandbox's proxy is busy: %d connections were being handed off for %s", maxHandoffs, handoffWait))
		}
	}
}

// hostError is an OpError answer of the host.
type hostError struct{ code, msg string }

func (e *hostError) Error() string { return e.msg }

// refuseConn answers a proxy connection with a 503 saying why, closes
// it and tells the host, which records it.
func (s *Server) refuseConn(c net.Conn, reason string) {
	s.refuseConnQuietly(c, reason)
	_ = s.conn.Send(&proto.Message{Op: proto.OpNetConn, Code: proto.CodeRefused, Error: reason})
}

// refuseConnQuietly is refuseConn without telling the host.
func (s *Server) refuseConnQuietly(c net.Conn, reason string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	body := "airlock: connection refused: " + reason + "\n"
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	c.Close()
}

// forwardConn hands c off; it holds a slot, which it frees once the
// host has the connection.
func (s *Server) forwardConn(c *net.TCPConn) {
	held := true
	release := func() {
		if held {
			held = false
			<-s.net.slots
		}
	}
	defer release()
	pid := s.commandOf(socketOwner("tcp", c.RemoteAddr(), c.LocalAddr()))
	if !s.net.relay {
		defer c.Close()
		f, err := c.File()
		if err != nil {
			return
		}
		defer f.Close()
		_ = s.conn.Send(&proto.Message{Op: proto.OpNetConn, PID: pid}, f)
		return
	}
	if n := s.net.relays.Add(1); n > s.net.maxConns {
		s.net.relays.Add(-1)
		release()
		s.refuseConn(c, fmt.Sprintf("the sandbox holds %d open proxy connections, the most it may", s.net.maxConns))
		return
	}
	defer s.net.relays.Add(-1)
	a, err := s.ask(&proto.Message{Op: proto.OpNetConn, PID: pid}, 30*time.Second)
	release()
	if err != nil || len(a.Passed) != 1 {
		if a != nil {
			closeAll(a.Passed)
		}
		var he *hostError
		if errors.As(err, &he) && he.code == proto.CodeRefused {
			// the host refused it (its cap) and recorded it: say why
			s.refuseConnQuietly(c, he.msg)
			return
		}
		c.Close()
		return
	}
	hc, err := net.FileConn(a.Passed[0])
	a.Passed[0].Close()
	if err != nil {
		c.Close()
		return
	}
	relay(c, hc)
}

// relay copies between the sandbox's connection and the host's until
// both directions end. Once the host's side has ended, the sandbox's
// gets a short while to finish its own: an idle client must not hold
// the relay (and a slot under the cap) after the host is done.
//
// The copies are plain reads and writes (copyPlain), never splice(2):
// relaying runs inside gVisor, whose splice from the host's socket into
// a pipe corrupted the stream (see copyPlain).
func relay(c *net.TCPConn, hc net.Conn) {
	defer c.Close()
	defer hc.Close()
	done := make(chan struct{}, 1)
	go func() {
		_ = copyPlain(hc, c)
		if cw, ok := hc.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	_ = copyPlain(c, hc)
	_ = c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(relayLinger))
	<-done
}

// copyPlain copies src to dst until src ends, with read(2) and write(2)
// through a buffer of its own. io.Copy from the host's *net.UnixConn to
// the sandbox's *net.TCPConn would take TCPConn.ReadFrom, which
// splice(2)s through a pipe that Go enlarges to 1 MiB (F_SETPIPE_SZ). In
// gVisor (runsc 20221219, the relay's only user) one splice of more than
// 64 KiB from such a pipe into its TCP socket sends the pipe's first
// 64 KiB again in place of every later 64 KiB: the right length, the
// wrong bytes (pip's hash check failed; TLS: bad record MAC). Each
// splice alone, and splices of at most 64 KiB, are intact; plain copies
// avoid the path in both directions.
//
// In gVisor every read and write traps into the sentry, and a read that
// finds nothing costs three (EAGAIN, the netpoller's wait, the read
// again): a bulk transfer's CPU is its number of copies. A copy starts
// with a small buffer; once a read fills it, the connection is carrying
// bulk and takes a large one from bigBufs while there is one to take
// (measured on ptrace: a 64 MiB download through the relay cost about a
// third less of the sandbox's CPU with 256 KiB than with 32 KiB, see
// gvisor.BenchmarkProxyDownload).
func copyPlain(dst io.Writer, src io.Reader) error {
	buf := make([]byte, relayBuf)
	var big []byte
	defer func() { bigBufs.put(big) }()
	for {
		n, err := src.Read(buf)
		if n > 0 {
			w, werr := dst.Write(buf[:n])
			if werr == nil && w != n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if n == len(buf) && big == nil {
			if big = bigBufs.get(); big != nil {
				buf = big
			}
		}
	}
}

// relayBuf is a relay direction's first copy buffer, io.Copy's own
// size: a sandbox may hold hundreds of relays, each with two, in its
// memory.
const relayBuf = 32 << 10

// bigRelayBuf is the copy buffer of a relay direction carrying bulk, and
// maxBigRelayBufs how many exist at most (4 MiB of the sandbox's memory):
// beyond them a relay goes on with its small buffer.
const (
	bigRelayBuf     = 256 << 10
	maxBigRelayBufs = 16
)

var bigBufs = newBufPool(bigRelayBuf, maxBigRelayBufs)

// bufPool hands out at most max buffers of size bytes at once. A buffer
// given back is left to the garbage collector, not kept: an idle
// sandbox should not hold what its last download needed.
type bufPool struct {
	size   int
	tokens chan struct{}
}

func newBufPool(size, max int) *bufPool {
	return &bufPool{size: size, tokens: make(chan struct{}, max)}
}

// get returns a buffer, or nil when max are out.
func (p *bufPool) get() []byte {
	select {
	case p.tokens <- struct{}{}:
		return make([]byte, p.size)
	default:
		return nil
	}
}

// put gives back a buffer that get returned (nil: none).
func (p *bufPool) put(b []byte) {
	if b != nil {
		<-p.tokens
	}
}

// relayLinger is how long a relay waits for the sandbox's side to end
// after the host's has.
const relayLinger = 10 * time.Second

// dnsQuery asks the host to answer one DNS message.
func (s *Server) dnsQuery(q []byte, pid int) ([]byte, error) {
	a, err := s.ask(&proto.Message{Op: proto.OpDNS, PID: pid, Data: q}, 15*time.Second)
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
		select {
		case s.net.dnsSlots <- struct{}{}:
		default:
			continue // too many queries in flight: drop it, clients retry
		}
		go func() {
			defer func() { <-s.net.dnsSlots }()
			pid := s.commandOf(socketOwner("udp", addr, pc.LocalAddr()))
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
		if s.net.dnsStreams.Add(1) > maxDNSStreams {
			s.net.dnsStreams.Add(-1)
			c.Close() // a resolver falls back or retries
			continue
		}
		go func() {
			defer s.net.dnsStreams.Add(-1)
			defer c.Close()
			s.net.dnsSlots <- struct{}{}
			pid := s.commandOf(socketOwner("tcp", c.RemoteAddr(), c.LocalAddr()))
			<-s.net.dnsSlots
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
