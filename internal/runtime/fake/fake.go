// Package fake is an in-process runtime.Backend for tests, so that the
// layers above the backends (the manager, the API) can be tested in
// seconds and without root.
//
// IT IS NOT A SECURITY BOUNDARY. Commands run as ordinary host processes
// of the calling user, with the host's file system, network, /proc and
// devices: a command can read and change anything its user can (run
// as root, that is the whole host). A
// sandbox is only a directory (its /workspace, /tmp and home directory)
// that commands start in (cwd, HOME, TMPDIR) and that the file API is
// confined to. It must never run untrusted code and is not selectable
// by `airlock serve` or `airlock run`: only tests construct it. Its
// Info reports the boundary "none".
//
// What it honours, as runtime's contracts say: exit codes and signals,
// timeouts and Signal (the whole tree of a command, found by a marker in
// its processes' environment, also what left the process group), output
// caps, terminals, Destroy and Sweep ending every process a sandbox
// started, Lifetime, pause (SIGSTOP/SIGCONT of the sandbox's processes)
// and the runtime.Files operations, resolved with RESOLVE_IN_ROOT in the
// sandbox's directory. What it refuses with ErrUnsupported: a Network,
// and every resource limit but Lifetime (memory, pids, cpus, disk, tmp,
// inodes, nofile, ptys), which it cannot enforce. It reports no file
// activity and offers no write scope. A Spec's User names the home
// directory (made, and HOME) and USER and LOGNAME; commands still run as
// the calling user, so whoami and id say that user's name. Binds and RootFS are not shown to
// commands (they see the host's own); RootFS must exist.
package fake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/tarball"
)

// Name is the fake backend's name.
const Name = "fake"

// Boundary is what Info reports as the isolation applied: none.
const Boundary = "none"

// HomeDir is the command user's home directory inside a sandbox whose
// Spec names no User.
const HomeDir = "/home/sandbox"

// Backend makes fake sandboxes, each a directory under Dir.
type Backend struct {
	// Dir holds the sandboxes' directories; "": the system's temp dir.
	Dir string
}

// New returns a backend whose sandboxes live under dir ("": the temp dir).
func New(dir string) *Backend { return &Backend{Dir: dir} }

// Name is "fake".
func (b *Backend) Name() string { return Name }

// Capabilities: pause, no snapshots.
func (b *Backend) Capabilities() runtime.Capabilities { return runtime.Capabilities{Pause: true} }

// Create makes the sandbox's directory, copies the workspace in and arms
// the lifetime.
func (b *Backend) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	if err := checkSpec(&spec); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(b.Dir, "airlock-fake-"+spec.ID+"-")
	if err != nil {
		return nil, err
	}
	s := &sandbox{id: spec.ID, dir: dir, root: filepath.Join(dir, "root"), spec: spec,
		created: time.Now().UTC(), done: make(chan struct{}), token: token(), rootFD: -1}
	if err := s.setUp(ctx); err != nil {
		s.removeDir()
		return nil, err
	}
	if l := spec.Limits.Lifetime; l > 0 {
		s.mu.Lock()
		s.lifetime = time.AfterFunc(l, func() { _ = s.Destroy(context.Background()) })
		s.mu.Unlock()
	}
	return s, nil
}

// checkSpec refuses what is invalid, and what the fake cannot enforce.
func checkSpec(spec *runtime.Spec) error {
	if spec.ID == "" {
		spec.ID = runtime.NewID()
	}
	if !runtime.ValidID(spec.ID) {
		return fmt.Errorf("sandbox id %q: %w", spec.ID, errdefs.ErrInvalid)
	}
	if st, err := os.Stat(spec.RootFS); err != nil || !st.IsDir() {
		return fmt.Errorf("root filesystem %q: not a directory: %w", spec.RootFS, errdefs.ErrNotFound)
	}
	l := spec.Limits
	for _, v := range []struct {
		name string
		n    float64
	}{{"memory", float64(l.MemoryBytes)}, {"pids", float64(l.Pids)}, {"cpus", l.CPUs}, {"disk", float64(l.DiskBytes)},
		{"tmp", float64(l.TmpBytes)}, {"inodes", float64(l.Inodes)}, {"ptys", float64(l.Ptys)}, {"lifetime", float64(l.Lifetime)}} {
		if v.n < 0 {
			return fmt.Errorf("limit %s is negative: %w", v.name, errdefs.ErrInvalid)
		}
		if v.n > 0 && v.name != "lifetime" {
			return fmt.Errorf("the fake backend cannot enforce a %s limit: %w", v.name, errdefs.ErrUnsupported)
		}
	}
	if l.NoFile > 0 {
		return fmt.Errorf("the fake backend cannot enforce a nofile limit: %w", errdefs.ErrUnsupported)
	}
	if spec.Network != nil {
		return fmt.Errorf("the fake backend has no sandbox network: %w", errdefs.ErrUnsupported)
	}
	u, err := spec.User.Resolve()
	if err != nil {
		return err
	}
	spec.User = u
	return nil
}

func token() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type sandbox struct {
	id, dir, root string
	spec          runtime.Spec
	created       time.Time
	token         string // in every process's environment (marker)

	// rootFD is root's O_PATH, for the file operations; -1 once closed
	// (fdMu: a closed number may be reused by anything)
	fdMu   sync.RWMutex
	rootFD int

	mu       sync.Mutex
	lifetime *time.Timer
	execs    int
	paused   bool
	stopped  bool
	done     chan struct{}
}

// setUp makes root with /workspace (the spec's workspace copied in),
// /tmp and the home directory.
func (s *sandbox) setUp(ctx context.Context) error {
	for _, d := range []string{"workspace", "tmp", strings.TrimPrefix(s.spec.User.Home, "/")} {
		if err := os.MkdirAll(filepath.Join(s.root, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(s.root, "tmp"), 0o1777); err != nil {
		return err
	}
	fd, err := unix.Open(s.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	s.rootFD = fd
	if s.spec.Workspace == "" {
		return ctx.Err()
	}
	return copyIn(s.spec.Workspace, filepath.Join(s.root, "workspace"))
}

// copyIn copies the host directory src into dst (links as links).
func copyIn(src, dst string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.WriteDir(pw, src)) }()
	_, err := tarball.Extract(pr, dst, tarball.ExtractOptions{UID: os.Getuid(), GID: os.Getgid()})
	pr.CloseWithError(errors.New("extract ended"))
	if err != nil {
		return fmt.Errorf("copy the workspace %s: %w", src, err)
	}
	return nil
}

func (s *sandbox) ID() string { return s.id }

func (s *sandbox) Info() runtime.Info {
	return runtime.Info{ID: s.id, Backend: Name, Created: s.created, Limits: s.spec.Limits, User: s.spec.User,
		Isolation: runtime.Isolation{Boundary: Boundary, UIDBase: os.Getuid()}}
}

func (s *sandbox) Done() <-chan struct{} { return s.done }

// Destroy ends every process of the sandbox and removes its directory.
func (s *sandbox) Destroy(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	if s.lifetime != nil {
		s.lifetime.Stop()
	}
	s.mu.Unlock()
	_, err := killAll(ctx, s.marker())
	s.fdMu.Lock()
	unix.Close(s.rootFD)
	s.rootFD = -1
	s.fdMu.Unlock()
	if rerr := s.removeDir(); err == nil {
		err = rerr
	}
	close(s.done)
	return err
}

// removeDir removes the sandbox's directory, also what a command made
// unwritable.
func (s *sandbox) removeDir() error {
	if os.RemoveAll(s.dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(s.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(s.dir)
}

// Sweep ends every process of the sandbox.
func (s *sandbox) Sweep(ctx context.Context) (int, error) {
	return killAll(ctx, s.marker())
}

// Pause stops every process of the sandbox (SIGSTOP) until Resume.
func (s *sandbox) Pause(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("sandbox %s is stopped: %w", s.id, errdefs.ErrConflict)
	}
	if err := stopAll(ctx, s.marker()); err != nil {
		return err
	}
	s.paused = true
	return nil
}

// Resume continues what Pause stopped.
func (s *sandbox) Resume(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("sandbox %s is stopped: %w", s.id, errdefs.ErrConflict)
	}
	for _, pid := range pidsWith(s.marker()) {
		_ = unix.Kill(pid, unix.SIGCONT)
	}
	s.paused = false
	return nil
}

// hostPath maps an absolute sandbox path onto the host, in root.
func (s *sandbox) hostPath(p string) string { return filepath.Join(s.root, filepath.Clean("/"+p)) }

// Relimit implements runtime.Relimiter: the fake enforces no limit but
// the lifetime, so only that may change (armed from now).
func (s *sandbox) Relimit(_ context.Context, lim runtime.Limits) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.spec.Limits
	cur.Lifetime = lim.Lifetime
	if lim != cur {
		return fmt.Errorf("the fake backend cannot change a sandbox's limits but its lifetime: %w", errdefs.ErrUnsupported)
	}
	if lim.Lifetime < 0 {
		return fmt.Errorf("limit lifetime is negative: %w", errdefs.ErrInvalid)
	}
	if s.stopped {
		return fmt.Errorf("sandbox %s has stopped: %w", s.id, errdefs.ErrConflict)
	}
	if s.lifetime != nil {
		s.lifetime.Stop()
		s.lifetime = nil
	}
	if lim.Lifetime > 0 {
		s.lifetime = time.AfterFunc(lim.Lifetime, func() { _ = s.Destroy(context.Background()) })
	}
	s.spec.Limits = lim
	return nil
}
