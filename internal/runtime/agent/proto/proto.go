// Package proto is the wire of the host<->agent channel, spoken by the
// in-sandbox agent (internal/runtime/agent) and the host's end
// (agent/client): the versioned Message and its operations, the channel
// itself (Conn: one JSON datagram per message, descriptors alongside,
// bounded), and the frames a file upload crosses a pipe in. It is apart
// from the agent so that the host links no agent code to speak to one.
package proto

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ProtocolVersion is bumped on any incompatible change to Message.
const ProtocolVersion = 1

// Operations carried in Message.Op.
const (
	OpInit     = "init"     // host -> agent: InitConfig; agent answers OpReady
	OpReady    = "ready"    // agent -> host
	OpExec     = "exec"     // host -> agent, with 3 fds (stdin, stdout, stderr)
	OpStarted  = "started"  // agent -> host
	OpExited   = "exited"   // agent -> host
	OpSignal   = "signal"   // host -> agent
	OpUntar    = "untar"    // host -> agent, with 1 fd: a tar stream to unpack under Path
	OpDone     = "done"     // agent -> host: generic success answer
	OpError    = "error"    // agent -> host: generic failure answer
	OpShutdown = "shutdown" // host -> agent
	// OpRestrictWrites narrows where commands and file operations may
	// write (Scope.Paths); the answer is OpDone with the Scope in force.
	OpRestrictWrites = "restrict_writes" // host -> agent
	// OpResize sets the window size (Rows, Cols) of the terminal of the
	// relayed command ID (ExecSpec.Relay); answered like OpSignal.
	OpResize = "resize" // host -> agent
	// OpSweep ends every process of the sandbox but the agent, and answers
	// OpDone (PID: how many there were) once they are gone.
	OpSweep = "sweep" // host -> agent
	// OpWatch watches the directory File.Path (File.Recursive: its whole
	// tree), which must be beneath the agent's watched roots, for the
	// host: the answer is OpDone once it is in place, then OpWatchEvents
	// with the same ID as things change, until OpUnwatch with that ID
	// (answered OpDone).
	OpWatch       = "watch"        // host -> agent
	OpWatchEvents = "watch_events" // agent -> host: Events, Lost
	OpUnwatch     = "unwatch"      // host -> agent
)

// Message is one datagram on the channel. Fields are used per Op.
type Message struct {
	Op string `json:"op"`
	// Passed holds descriptors received with the message (not encoded);
	// whoever takes the message owns and closes them.
	Passed  []*os.File `json:"-"`
	ID      uint64     `json:"id,omitempty"` // request id, echoed in answers
	Version int        `json:"v,omitempty"`

	Init  *InitConfig `json:"init,omitempty"`
	Exec  *ExecSpec   `json:"exec,omitempty"`
	File  *FileOp     `json:"file,omitempty"`
	Scope *WriteScope `json:"scope,omitempty"`
	// OpDone of OpFile: stat and list answers, bytes read or written
	Files []FileInfo `json:"files,omitempty"`
	Size  int64      `json:"size,omitempty"`
	// OpDone of a statfs OpFile: the filesystem holding File.Path
	Disk *DiskStat `json:"disk,omitempty"`
	Exit *ExitInfo `json:"exit,omitempty"`

	PID int `json:"pid,omitempty"` // command pid; in OpReady the spawner thread's tid
	// OpDNS: the query (agent -> host) or the reply (host -> agent)
	Data   []byte `json:"data,omitempty"`
	Signal int    `json:"signal,omitempty"`
	Path   string `json:"path,omitempty"`
	// OpResize: the terminal's new size
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`

	// Ready
	LandlockABI int    `json:"landlock_abi,omitempty"`
	Seccomp     string `json:"seccomp,omitempty"`

	// Ready, when InitConfig.Trace: setup phase timings
	Timings string `json:"timings,omitempty"`

	// OpWatchEvents: what changed, oldest first; Lost: events were lost
	// before these (the watcher or the channel fell behind)
	Events []WatchEvent `json:"events,omitempty"`
	Lost   bool         `json:"lost,omitempty"`

	// Error
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"` // "not_found", "not_executable", "invalid", "denied", "unsupported", "internal", ...
}

// WriteScope is the request of OpRestrictWrites (Paths) and its answer:
// where writes are allowed now, after intersecting with earlier scopes.
type WriteScope struct {
	Paths       []string `json:"paths"`
	Scratch     []string `json:"scratch,omitempty"`      // answer: always writable
	LandlockABI int      `json:"landlock_abi,omitempty"` // answer
}

// ExecSpec is a command for the agent to start.
type ExecSpec struct {
	// TTY runs the command on a new pseudo-terminal of the sandbox (its
	// controlling terminal, size Rows x Cols); the exec then carries no
	// descriptors and the agent answers "started" with the terminal's
	// master side.
	TTY bool `json:"tty,omitempty"`
	// Relay (with TTY) is for channels that cannot carry a descriptor from
	// the agent to the host (gVisor's host sockets refuse it): the exec
	// carries one descriptor, a stream socket, and the agent relays the
	// terminal over it (output to the host, input typed in); the started
	// answer carries nothing, and OpResize sets the window size.
	Relay     bool     `json:"relay,omitempty"`
	Rows      uint16   `json:"rows,omitempty"`
	Cols      uint16   `json:"cols,omitempty"`
	Argv      []string `json:"argv"`
	Env       []string `json:"env"`
	Dir       string   `json:"dir"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
}

// ExitInfo reports how a command ended.
type ExitInfo struct {
	Code       int    `json:"code"`
	Signal     int    `json:"signal,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	DiskFull   bool   `json:"disk_full,omitempty"`
	UserUS     int64  `json:"user_us"`
	SysUS      int64  `json:"sys_us"`
	MaxRSSKiB  int64  `json:"max_rss_kib"`
	DurationUS int64  `json:"duration_us"`
	Note       string `json:"note,omitempty"`
	// Files is what the command did beneath the watched directories (see
	// agent.Server.WatchFiles); nil when the agent does not watch any.
	Files *FileActivity `json:"files,omitempty"`
}

// FileActivity is what one command did to the watched files: each path
// (absolute, sorted) is in at most one list, the one of the strongest
// thing the command did to it: deleted (when the last thing was a
// removal), written, chmod, read.
type FileActivity struct {
	Written    []string `json:"written,omitempty"` // created or modified
	Deleted    []string `json:"deleted,omitempty"` // removed or renamed away
	Chmod      []string `json:"chmod,omitempty"`   // attributes: mode, owner, xattrs, times, link count
	Read       []string `json:"read,omitempty"`    // opened and closed without writing
	Incomplete bool     `json:"incomplete,omitempty"`
	Shared     bool     `json:"shared,omitempty"`
}

// InitConfig is everything the native sandbox init needs before it serves.
type InitConfig struct {
	MountDir string `json:"mount_dir"` // host path of the sandbox's private disk
	// DiskMounted: the init message carries the disk as a detached mount
	// (one descriptor) to attach on MountDir, with upper, work and root
	// directories owned by the sandbox's root; otherwise init mounts a
	// tmpfs there.
	DiskMounted bool   `json:"disk_mounted"`
	Lower       string `json:"lower"` // template dir
	// Lowers are more layers below Lower, top first (an image's).
	Lowers     []string `json:"lowers,omitempty"`
	Binds      []Bind   `json:"binds"`
	DiskBytes  int64    `json:"disk_bytes"`
	Inodes     int64    `json:"inodes"`
	TmpBytes   int64    `json:"tmp_bytes"`
	Hostname   string   `json:"hostname"`
	NoFile     uint64   `json:"nofile"`
	NProc      uint64   `json:"nproc"`
	FSizeBytes uint64   `json:"fsize_bytes"`
	Ptys       int64    `json:"ptys"` // devpts max
	UID        int      `json:"uid"`
	GID        int      `json:"gid"`
	Home       string   `json:"home"`
	// UserName, when set, is what the command user is called: the init
	// writes /etc/passwd and /etc/group so (runtime.WriteUserFiles).
	// "": the template's files as they are.
	UserName string   `json:"user_name,omitempty"`
	Writable []string `json:"writable"` // paths the command user may write (Landlock)
	// Scratch are the Writable paths that stay writable under a write
	// scope; ScopeRoots the directories a scope's paths must lie in.
	Scratch     []string `json:"scratch"`
	ScopeRoots  []string `json:"scope_roots"`
	RequireLock bool     `json:"require_landlock"`
	// Network: serve the proxy and DNS listeners (agent.Server.StartNetwork).
	Network bool `json:"network,omitempty"`
	// MaxProxyConns caps the proxy connections the agent relays at once
	// (0: agent.DefaultMaxProxyConns); the host caps what it serves too.
	MaxProxyConns int `json:"max_proxy_conns,omitempty"`
	// NoFileActivity: do not watch files (agent.Server.WatchFiles).
	NoFileActivity bool `json:"no_file_activity,omitempty"`
	Trace          bool `json:"trace,omitempty"` // report setup timings in the ready message
}

// Bind is a read-only bind of a host path into the sandbox root.
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// maxMessage bounds one datagram; larger ones are a protocol error.
const maxMessage = 1 << 20

// Conn is one end of the host<->agent channel: a SOCK_SEQPACKET unix socket
// that carries one JSON Message per datagram, with file descriptors passed
// alongside. Send may be called concurrently; Recv must not be.
type Conn struct {
	f   *os.File
	rc  syscall.RawConn
	wmu sync.Mutex
	oob []byte
}

// recvBufs are Recv's buffers of maxMessage bytes, taken only once a
// message is there to read: a daemon holds a Conn per sandbox, each
// with a Recv always pending, and a buffer each would be a GiB of heap
// for a thousand idle sandboxes (counted live by the GC's pacing, so
// that garbage could grow as large before a collection).
var recvBufs = sync.Pool{New: func() any { b := make([]byte, maxMessage); return &b }}

// WarmCodec builds encoding/json's encoders and decoders for every message
// type (about 0.3 ms, paid by the first message a process sends): a
// process that will soon talk to an agent calls it in a goroutine of its
// own while it waits for something else, so that the first message does
// not pay for it.
func WarmCodec() {
	b, _ := json.Marshal(&Message{})
	_ = json.Unmarshal(b, &Message{})
}

// NewConn wraps a connected SOCK_SEQPACKET socket. The Conn owns f.
// When f was made of a non-blocking descriptor (os.NewFile then gives it
// to Go's poller), a Recv or Send that must wait parks its goroutine, not
// an OS thread: a daemon holds one channel per sandbox, each with a Recv
// always pending, and a thread each would be a thousand host tasks for
// a thousand sandboxes. A blocking f works as before.
func NewConn(f *os.File) *Conn {
	rc, err := f.SyscallConn()
	if err != nil {
		// only for a closed f; every use then fails as on a closed socket
		rc = closedRawConn{}
	}
	return &Conn{f: f, rc: rc, oob: make([]byte, unix.CmsgSpace(4*16))}
}

// closedRawConn is the RawConn of a file closed before NewConn.
type closedRawConn struct{}

func (closedRawConn) Control(func(uintptr)) error    { return os.ErrClosed }
func (closedRawConn) Read(func(uintptr) bool) error  { return os.ErrClosed }
func (closedRawConn) Write(func(uintptr) bool) error { return os.ErrClosed }

// Close closes the socket.
func (c *Conn) Close() error { return c.f.Close() }

// ErrTooLarge is a message over the channel's limit (Send).
var ErrTooLarge = errors.New("agent message too large")

// SetBuffers sizes a channel socket's buffers for the largest message
// (a datagram must fit in its sender's buffer; the default, about 208
// KiB, is less than maxMessage). Forced (root) where it may be, else as
// large as the system allows. The host calls it on both ends.
func SetBuffers(fd int) error {
	const size = 2*maxMessage + 64<<10
	for _, o := range [][2]int{{unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}, {unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], size); err != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[1], size); err != nil {
				return fmt.Errorf("agent channel buffers: %w", err)
			}
		}
	}
	return nil
}

// Send writes m with the given descriptors (which the caller still owns).
// A message over the limit is an error wrapping ErrTooLarge; nothing is
// sent then.
func (c *Conn) Send(m *Message, files ...*os.File) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(b) > maxMessage {
		return fmt.Errorf("%w (%d bytes, at most %d)", ErrTooLarge, len(b), maxMessage)
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if werr := c.rc.Write(func(fd uintptr) bool {
		for {
			err = unix.Sendmsg(int(fd), b, oob, nil, 0)
			if err != unix.EINTR {
				return err != unix.EAGAIN
			}
		}
	}); werr != nil {
		err = werr
	}
	if err == unix.EMSGSIZE {
		return fmt.Errorf("%w (%d bytes, more than the channel's buffer)", ErrTooLarge, len(b))
	}
	if err != nil {
		return fmt.Errorf("agent channel send: %w", err)
	}
	for _, f := range files {
		// keep f alive until the kernel has taken its own reference
		_ = f.Fd()
	}
	return nil
}

// Recv reads the next message and any descriptors sent with it (close-on-exec).
// It returns io.EOF-like errors when the peer is gone.
func (c *Conn) Recv() (*Message, []*os.File, error) {
	var n, oobn int
	var err error
	var bp *[]byte
	defer func() {
		if bp != nil {
			recvBufs.Put(bp)
		}
	}()
	var peek [1]byte
	if rerr := c.rc.Read(func(fd uintptr) bool {
		for {
			// a message is there (or the peer is gone) before a buffer
			// is taken: MSG_PEEK leaves it queued
			_, _, _, _, err = unix.Recvmsg(int(fd), peek[:], nil, unix.MSG_PEEK)
			if err == nil {
				if bp == nil {
					bp = recvBufs.Get().(*[]byte)
				}
				n, oobn, _, _, err = unix.Recvmsg(int(fd), *bp, c.oob, unix.MSG_CMSG_CLOEXEC)
			}
			if err != unix.EINTR {
				return err != unix.EAGAIN
			}
		}
	}); rerr != nil {
		err = rerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("agent channel receive: %w", err)
	}
	var files []*os.File
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(c.oob[:oobn])
		if perr != nil {
			return nil, nil, fmt.Errorf("agent channel: control message: %w", perr)
		}
		for _, cm := range msgs {
			fds, rerr := unix.ParseUnixRights(&cm)
			if rerr != nil {
				continue
			}
			for _, fd := range fds {
				files = append(files, os.NewFile(uintptr(fd), "passed"))
			}
		}
	}
	if n == 0 {
		for _, f := range files {
			f.Close()
		}
		return nil, nil, ErrClosed
	}
	m := new(Message)
	if err := json.Unmarshal((*bp)[:n], m); err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, nil, fmt.Errorf("agent channel: bad message: %w", err)
	}
	return m, files, nil
}

// ErrClosed is returned by Recv when the peer closed the channel.
var ErrClosed = fmt.Errorf("agent channel closed")

// FileInfo describes one file.
type FileInfo struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Type    string    `json:"type"` // "file", "dir", "symlink", "other"
	Size    int64     `json:"size"`
	Mode    uint32    `json:"mode"` // permission bits
	ModTime time.Time `json:"mtime"`
	UID     int       `json:"uid"`
	GID     int       `json:"gid"`
	Target  string    `json:"symlink_target,omitempty"`
}

// WatchEvent is one change of OpWatchEvents: Op is create, write,
// remove, rename (moved away) or chmod; Path is absolute.
type WatchEvent struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

// DiskStat is statfs(2) of a filesystem: counts of FragSize blocks and
// of inodes.
type DiskStat struct {
	FragSize    uint64 `json:"frag_size"`    // f_frsize
	Blocks      uint64 `json:"blocks"`       // f_blocks
	BlocksFree  uint64 `json:"blocks_free"`  // f_bfree
	BlocksAvail uint64 `json:"blocks_avail"` // f_bavail: free to unprivileged users
	Files       uint64 `json:"files"`
	FilesFree   uint64 `json:"files_free"`
}

// StatfsOf is st as a DiskStat.
func StatfsOf(st *unix.Statfs_t) DiskStat {
	fr := uint64(st.Frsize)
	if fr == 0 { // (kernels before 2.6 and some filesystems leave it 0)
		fr = uint64(st.Bsize)
	}
	return DiskStat{FragSize: fr, Blocks: st.Blocks, BlocksFree: st.Bfree, BlocksAvail: st.Bavail, Files: st.Files, FilesFree: st.Ffree}
}

// FileOp is the request of OpFile.
type FileOp struct {
	Kind string `json:"kind"` // stat, list, read, write, mkdir, remove, rename, tar, statfs
	Path string `json:"path"`
	// To is where rename moves Path (its missing parents are made).
	To        string `json:"to,omitempty"`
	Mode      uint32 `json:"mode,omitempty"`
	Parents   bool   `json:"parents,omitempty"`
	Recursive bool   `json:"recursive,omitempty"`
	MaxBytes  int64  `json:"max_bytes,omitempty"` // read: refuse larger files
}

// OpFile is a file operation; its answer is OpDone with Files (stat,
// list), Size (read, write) or Disk (statfs), or OpError.
const OpFile = "file"

// CodeRefused is the Code of an OpNetConn from the agent that reports a
// connection it refused (no descriptor; Error says why), and of the
// host's OpError answer that refuses one.
const CodeRefused = "refused"

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
