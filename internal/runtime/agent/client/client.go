// Package client is the host's end of the agent protocol, shared by every
// backend whose sandboxes run airlock's agent as PID 1 (native, oci): the
// read loop that routes answers to requests, Exec with host-owned stdio
// and capped output, signals, terminals, the file operations, workspace
// import and write scopes. A backend opens the channel, configures the
// agent (OpInit .. OpReady) and then hands the channel to New; it keeps
// the sandbox's lifecycle and supplies the host-side counters that name a
// hit limit (Options.Meter). Only the runtime backends import it.
package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"github.com/airlock-dev/airlock/internal/tarball"
)

// ErrStopped is returned for operations on a sandbox that has stopped.
var ErrStopped = fmt.Errorf("sandbox stopped: %w", errdefs.ErrNotFound)

// Meter reads, when a command starts, the host-side counters that can
// name a limit it hits, and returns the check to run when it ends. The
// check gets the agent's report, or nil when the whole sandbox stopped
// while the command ran (a backend whose limit kills the sandbox says so
// by naming the limit then). It returns runtime.LimitNone when the
// counters show nothing; timeouts and a full disk are named by the Client.
type Meter func() func(ei *proto.ExitInfo) runtime.Limit

// Options configure a Client. The zero value works: no limits named
// beyond timeouts and the disk, terminals passed as descriptors.
type Options struct {
	// BaseEnv is the environment every command starts with ("K=V");
	// ExecRequest.Env is added to it.
	BaseEnv []string
	Meter   Meter
	// RelayTTY asks the agent to relay terminals over a socket instead of
	// passing the terminal's descriptor back (a channel that cannot carry
	// descriptors from the agent to the host: gVisor).
	RelayTTY bool
	// Trace, when set, gets the phases of each exec (AIRLOCK_TRACE).
	Trace func(start time.Time, what string)
	// Network gets the sandbox's proxy connections and DNS queries (the
	// agent was configured with InitConfig.Network); nil: the agent's
	// network requests are refused.
	Network runtime.Network
	// RelayNet: the agent asks for a stream socket for each proxy
	// connection instead of passing the connection (see proto.OpNetConn).
	RelayNet bool
	// MaxProxyConns caps the proxy connections served at once (0:
	// runtime.DefaultMaxProxyConns); beyond it they are refused with a
	// 503 that says why and reported to Network if it is a
	// runtime.ProxyRefusals.
	MaxProxyConns int
}

// Client talks to one sandbox's agent over its channel.
type Client struct {
	conn *proto.Conn
	opt  Options

	scopeMu sync.Mutex
	scope   *runtime.ScopeInfo // nil until RestrictWrites

	nextID  atomic.Uint64
	pmu     sync.Mutex
	pending map[uint64]chan *proto.Message

	closed chan struct{}

	wmu     sync.Mutex
	watches map[uint64]*hostWatch // directory watches by request id

	proxyConns atomic.Int64 // open proxy connections (serveNet)
}

// New starts serving the channel. The agent must be ready (OpReady
// received); the Client now owns conn's reading side.
func New(conn *proto.Conn, opt Options) *Client {
	if opt.Meter == nil {
		opt.Meter = func() func(*proto.ExitInfo) runtime.Limit {
			return func(*proto.ExitInfo) runtime.Limit { return runtime.LimitNone }
		}
	}
	if opt.MaxProxyConns <= 0 {
		opt.MaxProxyConns = runtime.DefaultMaxProxyConns
	}
	if opt.Trace == nil {
		opt.Trace = func(time.Time, string) {}
	}
	c := &Client{conn: conn, opt: opt, pending: map[uint64]chan *proto.Message{}, closed: make(chan struct{})}
	go c.readLoop()
	return c
}

// Done is closed when the channel is gone (the agent exited, or the
// backend closed the channel).
func (c *Client) Done() <-chan struct{} { return c.closed }

// SetBaseEnv replaces the environment commands start with.
func (c *Client) SetBaseEnv(env []string) { c.opt.BaseEnv = env }

func (c *Client) stopped() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// readLoop dispatches agent messages to the waiting requests.
func (c *Client) readLoop() {
	for {
		m, files, err := c.conn.Recv()
		if err != nil {
			break
		}
		// The agent's own requests: its network's connections and queries.
		if m.Op == proto.OpNetConn || m.Op == proto.OpDNS {
			c.serveNet(m, files)
			continue
		}
		if m.Op == proto.OpWatchEvents {
			closeAll(files)
			c.watchEvents(m)
			continue
		}
		// Only a started message may carry a descriptor (a terminal).
		if m.Op == proto.OpStarted && len(files) == 1 {
			m.Passed = files
		} else {
			for _, f := range files {
				f.Close()
			}
		}
		c.pmu.Lock()
		ch := c.pending[m.ID]
		c.pmu.Unlock()
		if ch == nil {
			closePassed(m)
			continue
		}
		// Never block on a waiter: the agent is inside the boundary, and a
		// flood of answers to one id must not wedge this loop. Acks (done)
		// beyond the buffer are dropped; the end of a command is not.
		select {
		case ch <- m:
		default:
			closePassed(m)
			if m.Op == proto.OpExited || m.Op == proto.OpError {
				go func(m *proto.Message) {
					select {
					case ch <- m:
					case <-time.After(time.Minute):
					}
				}(m)
			}
		}
	}
	close(c.closed)
	c.endWatches()
	c.pmu.Lock()
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.pmu.Unlock()
}

func closePassed(m *proto.Message) {
	for _, f := range m.Passed {
		f.Close()
	}
	m.Passed = nil
}

func (c *Client) register() (uint64, chan *proto.Message) {
	id := c.nextID.Add(1)
	ch := make(chan *proto.Message, 4)
	c.pmu.Lock()
	c.pending[id] = ch
	c.pmu.Unlock()
	return id, ch
}

func (c *Client) unregister(id uint64) {
	c.pmu.Lock()
	delete(c.pending, id)
	c.pmu.Unlock()
}

// call sends one request and waits for its single answer.
func (c *Client) call(ctx context.Context, m *proto.Message, files ...*os.File) (*proto.Message, error) {
	if c.stopped() {
		return nil, ErrStopped
	}
	id, ch := c.register()
	defer c.unregister(id)
	m.ID = id
	if err := c.conn.Send(m, files...); err != nil {
		return nil, ErrStopped
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, ErrStopped
		}
		closePassed(r)
		if r.Op == proto.OpError {
			return r, fmt.Errorf("%s", r.Error)
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Sweep ends every process of the sandbox but its agent (commands still
// running, and whatever they left behind) and returns how many there
// were, once they are gone.
func (c *Client) Sweep(ctx context.Context) (int, error) {
	r, err := c.call(ctx, &proto.Message{Op: proto.OpSweep})
	if err != nil {
		return 0, err
	}
	return r.PID, nil
}

// ImportDir streams a host directory into the sandbox as a tar; the agent
// unpacks it without following anything out of dst.
func (c *Client) ImportDir(ctx context.Context, src, dst string) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	werr := make(chan error, 1)
	go func() {
		err := tarball.WriteDir(pw, src)
		pw.Close()
		werr <- err
	}()
	_, cerr := c.call(ctx, &proto.Message{Op: proto.OpUntar, Path: dst}, pr)
	pr.Close()
	if cerr != nil {
		// The agent may still hold the read end without reading: do not
		// wait for the writer.
		pw.Close()
		select {
		case err := <-werr:
			if err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, os.ErrClosed) {
				return err
			}
		case <-time.After(100 * time.Millisecond):
		}
		return cerr
	}
	if err := <-werr; err != nil {
		return err
	}
	return nil
}

// ExecError is a command that could not be started.
type ExecError struct {
	Cmd  string
	Code string // "not_found", "not_executable", "bad_dir", ...
	Msg  string
}

func (e *ExecError) Error() string { return "exec " + e.Cmd + ": " + e.Msg }

// ExitCode is the conventional shell status for the failure.
func (e *ExecError) ExitCode() int {
	switch e.Code {
	case "not_found":
		return runtime.ExitNotFound
	case "not_executable":
		return runtime.ExitNotExecutable
	}
	return 1
}

func (e *ExecError) Unwrap() error {
	switch e.Code {
	case "not_found":
		return errdefs.ErrNotFound
	case "invalid", "bad_dir", "not_executable":
		return errdefs.ErrInvalid
	}
	return nil
}

func execError(cmd string, m *proto.Message) error {
	msg := m.Error
	switch m.Code {
	case "not_found":
		msg = "command not found"
	case "not_executable":
		msg = "permission denied or not an executable"
	case "bad_dir":
		msg = "working directory does not exist"
	}
	return &ExecError{Cmd: cmd, Code: m.Code, Msg: msg}
}

// AgentError turns the agent's error answer into an error of its kind.
func AgentError(what string, m *proto.Message) error {
	kind := errdefs.ErrInvalid
	switch m.Code {
	case "not_found":
		kind = errdefs.ErrNotFound
	case "denied":
		kind = errdefs.ErrDenied
	case "conflict":
		kind = errdefs.ErrConflict
	case "limit_exceeded":
		kind = errdefs.ErrLimitExceeded
	case "unsupported":
		kind = errdefs.ErrUnsupported
	case "internal":
		return fmt.Errorf("%s: %s", what, m.Error)
	}
	return fmt.Errorf("%s: %s: %w", what, m.Error, kind)
}
