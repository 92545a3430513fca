// Package runtime defines what an isolation backend must provide: create a
// sandbox from a Spec, run commands in it with host-owned stdio, and tear it
// down so that nothing survives. Backends do no policy and write no audit
// record; the sandbox manager above them does. Every backend must pass the
// suite in package runtime/conformance.
package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"os"
	"time"
)

// Backend creates sandboxes. Implementations are registered by name
// ("native", "gvisor", ...) by the code that wires airlock together.
type Backend interface {
	// Name is the backend's registered name.
	Name() string
	// Capabilities says which optional abilities this backend has.
	Capabilities() Capabilities
	// Create starts a sandbox and returns once it is ready for Exec. On error
	// nothing the call created is left behind.
	Create(ctx context.Context, spec Spec) (Sandbox, error)
}

// Sandbox is one running, isolated workspace.
type Sandbox interface {
	ID() string
	// Info describes the sandbox and the isolation actually applied.
	Info() Info
	// Exec starts a command. Output is copied by the host into req.Stdout
	// and req.Stderr; the sandbox never holds the host's descriptors.
	Exec(ctx context.Context, req ExecRequest) (Process, error)
	// Destroy kills every process of the sandbox and removes its state. It
	// is idempotent.
	Destroy(ctx context.Context) error
	// Done is closed when the sandbox has stopped for any reason (destroy,
	// lifetime limit, its init exiting).
	Done() <-chan struct{}
}

// Meter is a sandbox that reports what it uses now, as its cgroup
// counts it (every process of the sandbox, and for a backend with a
// kernel of its own, that kernel too).
type Meter interface {
	Usage() (Usage, error)
}

// Usage is what a sandbox uses: CPU time since it was made, memory and
// tasks now.
type Usage struct {
	CPUTime     time.Duration
	MemoryBytes int64
	// PageCacheBytes is the part of MemoryBytes that holds files'
	// contents (the page cache, tmpfs included), or UnknownBytes when
	// the backend cannot tell it apart (its doc says why).
	PageCacheBytes int64
	Pids           int64
}

// UnknownBytes is a figure the backend cannot read.
const UnknownBytes = -1

// DiskMeter is a sandbox that reports the use of its disk: the
// filesystem holding /workspace and the command user's home, as
// statfs(2) counts it (what a command there would see, unless the
// backend's doc says otherwise). A backend that cannot read it does not
// implement DiskMeter or answers an ErrUnsupported error, never made-up
// figures.
type DiskMeter interface {
	DiskUsage(ctx context.Context) (DiskUsage, error)
}

// DiskUsage is a filesystem's use, in bytes and inodes.
type DiskUsage struct {
	TotalBytes int64 // its size (statfs f_blocks; ext4 leaves its own structures out)
	// UsedBytes is its size less its free blocks (f_bfree): what files
	// and directories take.
	UsedBytes int64
	// AvailBytes is what commands may still write (f_bavail: the blocks
	// reserved for root are not theirs).
	AvailBytes int64
	Inodes     int64
	InodesFree int64
}

// DirWatcher is a sandbox whose directories can be watched for changes.
type DirWatcher interface {
	// WatchDir reports the changes of dir's entries (recursive: of its
	// whole tree) from its return on, in order, until ctx ends or the
	// sandbox stops, when the channel closes. A directory the backend
	// cannot watch is an ErrUnsupported error.
	WatchDir(ctx context.Context, dir string, recursive bool) (<-chan WatchBatch, error)
}

// WatchBatch is changes of a watched directory, oldest first; Lost says
// changes were lost before them (the watch fell behind).
type WatchBatch struct {
	Events []WatchEvent
	Lost   bool
}

// WatchEvent is one change: Op is create, write, remove, rename (the
// name moved away; where it went is a create) or chmod; Path is
// absolute.
type WatchEvent struct {
	Op   string
	Path string
}

// Process is a command started by Exec.
type Process interface {
	// PID is the command's pid inside the sandbox.
	PID() int
	// Signal sends sig to the command's process group.
	Signal(sig os.Signal) error
	// Wait blocks until the command exits and its output is copied.
	Wait(ctx context.Context) (ExitStatus, error)
}

// Capabilities lists optional abilities. Asking a backend for one it lacks
// is an ErrUnsupported error, never a silent downgrade.
type Capabilities struct {
	Pause    bool `json:"pause"`
	Snapshot bool `json:"snapshot"`
}

// Limits are the hard resource limits of one sandbox. Zero means the
// backend default, documented by the backend.
type Limits struct {
	MemoryBytes int64         `json:"memory_bytes,omitempty"`
	Pids        int64         `json:"pids,omitempty"`
	CPUs        float64       `json:"cpus,omitempty"`
	DiskBytes   int64         `json:"disk_bytes,omitempty"` // writable root layer, /workspace, home
	TmpBytes    int64         `json:"tmp_bytes,omitempty"`  // /tmp
	Inodes      int64         `json:"inodes,omitempty"`     // files on the writable layer
	NoFile      uint64        `json:"nofile,omitempty"`
	Lifetime    time.Duration `json:"lifetime,omitempty"` // the sandbox is destroyed after this
	// Ptys: pseudo-terminals open at once in the sandbox, the agent's
	// terminal sessions included (the host's are one pool for all).
	Ptys int64 `json:"ptys,omitempty"`
}

// Spec describes a sandbox to create.
type Spec struct {
	// ID names the sandbox; empty means the backend picks one.
	ID string
	// RootFS is the read-only lower layer (a template directory).
	RootFS string
	// Lowers are more read-only layers below RootFS, top first (an
	// imported image's layers); each is checked as RootFS is.
	Lowers []string
	// Binds are read-only host paths mounted into the sandbox.
	Binds []Bind
	// Workspace, when set, is a host directory whose contents are copied
	// into /workspace. The host directory is never changed.
	Workspace string
	// Env is the base environment of every command ("K=V").
	Env    []string
	Limits Limits
	// Hostname inside the sandbox; default "airlock".
	Hostname string
	// User is what the command user is called: its passwd and group
	// name, its home (HOME, USER, LOGNAME of every command, the home of
	// the write scope and of file activity); its uid stays the backend's
	// unprivileged one. Zero: DefaultUser. A backend that cannot present
	// it fails Create (unsupported); an invalid one is ErrInvalid.
	User User
	// Network, when set, is the host side of the sandbox's network: the
	// backend runs an HTTP proxy on 127.0.0.1:3128 and a DNS server on
	// 127.0.0.1:53 inside the sandbox and hands it every connection and
	// query they get. nil: the sandbox has no network at all (loopback
	// only). A backend that cannot do this fails Create (unsupported).
	Network Network
	// NoFileActivity: commands' exits do not report what they did to the
	// files (Process results carry no file activity). It spares a one-shot
	// run the watch's set-up and its teardown (an RCU grace period when
	// the sandbox ends).
	NoFileActivity bool
	// MaxProxyConns caps the sandbox's open proxy connections (with a
	// Network): connections beyond it are refused with an HTTP 503 that
	// says why, and reported to the Network if it is a ProxyRefusals.
	// 0: DefaultMaxProxyConns.
	MaxProxyConns int
}

// DefaultMaxProxyConns is Spec.MaxProxyConns when it is 0.
const DefaultMaxProxyConns = 256

// The in-sandbox addresses of the proxy and DNS server of a sandbox with
// a Network.
const (
	ProxyAddr = "127.0.0.1:3128"
	DNSAddr   = "127.0.0.1:53"
)

// Network is the host side of a sandbox's network. pid is the sandbox pid
// of the command (as Process.PID) whose process tree made the connection
// or query, 0 when it is not known.
type Network interface {
	// ProxyConn serves one connection to the in-sandbox proxy; it owns
	// and closes c.
	ProxyConn(c net.Conn, pid int)
	// DNS answers one DNS query message (no TCP length prefix).
	DNS(ctx context.Context, query []byte, pid int) ([]byte, error)
}

// ProxyRefusals is what a Network implements to be told of the proxy
// connections the backend refused (the sandbox's cap, or its agent too
// busy to hand them off), so that they are recorded. ProxyRefused is
// called once per refused connection, on the path of the refusal: it
// must be quick and must bound what it keeps.
type ProxyRefusals interface {
	ProxyRefused(pid int, reason string)
}

// NewID makes a sandbox id: 12 random hex digits.
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidID says whether id may name a sandbox: 1 to 64 of a-z, 0-9 and
// '-' (it becomes a path, a cgroup name and an OCI container id).
func ValidID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Bind is a read-only bind mount of a host path.
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// Info describes a running sandbox.
type Info struct {
	ID        string    `json:"id"`
	Backend   string    `json:"backend"`
	Created   time.Time `json:"created"`
	Isolation Isolation `json:"isolation"`
	Limits    Limits    `json:"limits"`
	// User is the command user's name and home (Spec.User resolved).
	User User `json:"user"`
}

// Isolation reports what the backend actually applied, so that nobody has
// to assume it.
type Isolation struct {
	Boundary    string   `json:"boundary"` // e.g. "linux namespaces + seccomp + landlock"
	Namespaces  []string `json:"namespaces"`
	UIDBase     int      `json:"uid_base"` // host uid of sandbox uid 0
	Seccomp     string   `json:"seccomp"`
	LandlockABI int      `json:"landlock_abi"` // 0: not applied
	Cgroup      string   `json:"cgroup"`       // "v1" or "v2"
	// WriteScope is the write scope enforced since RestrictWrites; nil:
	// none, commands may write wherever the sandbox lets them.
	WriteScope *ScopeInfo `json:"write_scope,omitempty"`
}

// ExecRequest describes one command.
type ExecRequest struct {
	Argv []string
	Env  []string // added to the sandbox's base environment
	Dir  string   // working directory inside the sandbox; default /workspace
	// Timeout kills the command's process group after this long; 0: none.
	Timeout time.Duration
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// OutputLimit caps each of stdout and stderr; the rest is dropped and
	// the status says so. 0 means DefaultOutputLimit.
	OutputLimit int64
	// TTY runs the command on a pseudo-terminal of the sandbox (Rows x
	// Cols; 0: 24x80): its output, both streams, comes to Stdout; Stdin is
	// typed into it; the Process is also a Resizer.
	TTY        bool
	Rows, Cols uint16
}

// Resizer is a command on a terminal whose window can be resized.
type Resizer interface {
	Resize(rows, cols uint16) error
}

// Relimiter is a sandbox whose memory, CPU quota and lifetime can be set
// after its create, before it ran any command (a warm pool's sandbox, at
// its claim): Relimit makes lim its limits. Every other field of lim must
// equal what the sandbox was created with; a field it cannot change is an
// ErrUnsupported and leaves the sandbox as it was. The lifetime counts
// from the call.
type Relimiter interface {
	Relimit(ctx context.Context, lim Limits) error
}

// DefaultOutputLimit is the per-stream output cap when none is given.
const DefaultOutputLimit = 16 << 20

// Limit names the limit that ended or hampered a command.
type Limit string

// The limits a command can hit.
const (
	LimitNone    Limit = ""
	LimitTimeout Limit = "timeout"
	LimitMemory  Limit = "memory"
	LimitPids    Limit = "pids"
	LimitDisk    Limit = "disk"
)

// ExitStatus is how a command ended.
type ExitStatus struct {
	// Code is the exit code, or 128+signal when killed by a signal.
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty" redact:"keep"`
	// Limit is set when a resource limit was hit during the command.
	Limit           Limit         `json:"limit,omitempty" redact:"keep"`
	StdoutBytes     int64         `json:"stdout_bytes"`
	StderrBytes     int64         `json:"stderr_bytes"`
	StdoutTruncated bool          `json:"stdout_truncated,omitempty"`
	StderrTruncated bool          `json:"stderr_truncated,omitempty"`
	Duration        time.Duration `json:"duration"`
	UserTime        time.Duration `json:"user_time"`
	SystemTime      time.Duration `json:"system_time"`
	MaxRSSBytes     int64         `json:"max_rss_bytes"`
	// Files is what the command did to the files under /workspace and the
	// home directory; nil when the backend does not track it.
	Files *FileActivity `json:"files,omitempty"`
}

// FileActivity is what a command did to the files under /workspace and
// the home directory, as far as the backend can see it.
type FileActivity struct {
	Written []string `json:"written,omitempty"` // created or modified (absolute paths, sorted)
	Deleted []string `json:"deleted,omitempty"`
	Chmod   []string `json:"chmod,omitempty"` // mode, owner or extended-attribute changes
	Read    []string `json:"read,omitempty"`  // opened and closed without writing
	// Incomplete: a list was capped, or not every directory could be watched.
	Incomplete bool `json:"incomplete,omitempty"`
	// Shared: other commands of the sandbox ran at the same time, so some
	// of this may be theirs.
	Shared bool `json:"shared,omitempty"`
}

// Exit codes used when a command could not run or was stopped by a limit.
const (
	ExitNotFound      = 127
	ExitNotExecutable = 126
	ExitTimeout       = 124
)

// FileInfo describes a file inside a sandbox.
type FileInfo struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Type    string    `json:"type"` // "file", "dir", "symlink", "other"
	Size    int64     `json:"size"`
	Mode    uint32    `json:"mode"`
	ModTime time.Time `json:"mtime"`
	UID     int       `json:"uid"`
	GID     int       `json:"gid"`
	Target  string    `json:"symlink_target,omitempty"`
}

// Files is the file access a sandbox offers its host. Every path is
// absolute inside the sandbox and is resolved there: "..", absolute
// symlinks and /proc magic links never lead outside the sandbox root, and
// the access rights are those of the sandbox's command user.
type Files interface {
	Stat(ctx context.Context, path string) (FileInfo, error)
	List(ctx context.Context, dir string) ([]FileInfo, error)
	// ReadFile copies a regular file to w; files over max bytes (0: no
	// limit) are refused.
	ReadFile(ctx context.Context, path string, w io.Writer, max int64) (int64, error)
	// WriteFile creates or truncates path with r's content.
	WriteFile(ctx context.Context, path string, r io.Reader, mode uint32, parents bool) (int64, error)
	Mkdir(ctx context.Context, path string, parents bool) error
	Remove(ctx context.Context, path string, recursive bool) error
	// Rename moves from to to, as rename(2) does (a file at to is
	// replaced; neither path's last element is followed), making to's
	// missing parent directories first.
	Rename(ctx context.Context, from, to string) error
	// Tar writes the tree at dir as a tar stream; Untar unpacks one below dir.
	Tar(ctx context.Context, dir string, w io.Writer) (int64, error)
	Untar(ctx context.Context, dir string, r io.Reader) error
}

// Sweeper is a sandbox that can end every process but its own agent:
// running commands and what they left running (a daemon, a setsid'd
// orphan), so that nothing changes its files afterwards.
type Sweeper interface {
	// Sweep returns how many processes it ended, once they are gone.
	Sweep(ctx context.Context) (int, error)
}

// Pauser is a sandbox that can be frozen: every process stops where it is
// (memory, files and processes are kept) until Resume. Nothing can run in
// a paused sandbox; callers must not Exec or use Files on it.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// WriteScoper is a sandbox whose writes can be confined to a write scope:
// the backstop under the host's classification of commands, so that a
// command that slips past it still cannot change anything outside the scope.
type WriteScoper interface {
	// RestrictWrites narrows, for the rest of the sandbox's life, where
	// commands and file operations may write.
	//
	// paths are absolute, clean paths inside the sandbox, each within
	// /workspace or the command user's home directory (anything else is
	// an ErrInvalid error); none at all leaves only the scratch places
	// writable. After it returns nil, every command started afterwards and
	// every Files operation may create, modify, truncate, remove, rename
	// or link only beneath the given paths plus the sandbox's scratch
	// places (ScopeInfo.Scratch: /tmp, the home directory, the writable
	// devices, ...); nothing can be moved or linked between the scope and
	// the rest of the workspace. Reads and execution are unchanged.
	//
	// A path that does not exist is first created as a directory (with
	// its missing parents) owned by the command user; a path that is a
	// regular file may then be written and truncated, not replaced or
	// removed. A path that is or passes through a symlink is invalid.
	//
	// It only ever tightens: calling it again intersects the new paths
	// with the scope in force (a path outside it gets nothing and is not
	// created). Commands and file operations already running keep the
	// rights they started with, and so does anything that can talk to
	// them: restrict before starting long-lived commands.
	//
	// Not confined: metadata that no write right covers (mode, owner,
	// times, extended attributes), and a file hard-linked into the scope
	// before the call, which can be changed through its name there.
	//
	// A backend or host that cannot enforce it returns an ErrUnsupported
	// error, never a silent no-op. If ctx ends before the answer, the
	// scope may or may not be in force.
	RestrictWrites(ctx context.Context, paths []string) (ScopeInfo, error)
}

// ScopeInfo is the write scope a sandbox enforces.
type ScopeInfo struct {
	// Paths are where writes are allowed now, sorted: the requested paths
	// intersected with every earlier scope.
	Paths []string `json:"paths"`
	// Scratch are the places that stay writable under any scope.
	Scratch []string `json:"scratch"`
	// LandlockABI is the ABI of the Landlock layer enforcing the scope
	// (0: the backend enforces it otherwise).
	LandlockABI int `json:"landlock_abi,omitempty"`
}
