package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/landlock"
	"github.com/airlock-dev/airlock/internal/kernel/pathwalk"
	"github.com/airlock-dev/airlock/internal/runtime/agent/fileops"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// A write scope confines where commands and file operations may write,
// as a backstop under the host's classification of commands. Each
// RestrictWrites stacks one more Landlock layer that handles only the
// write rights (so reads stay as they are) and grants them beneath the
// scope's paths and the scratch places. The layer is enforced on the
// spawner thread, so every later command inherits it, and on the thread of
// every later file operation. Layers only ever add up: the scope in force
// is the intersection of all of them.

// restrictWrites answers OpRestrictWrites.
func (s *Server) restrictWrites(m *proto.Message) {
	var paths []string
	if m.Scope != nil {
		paths = m.Scope.Paths
	}
	end := s.hostOp() // it may make directories
	ws, err := s.narrowWrites(paths)
	end()
	if err != nil {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: scopeErrCode(err), Error: err.Error()})
		return
	}
	s.reply(&proto.Message{Op: proto.OpDone, ID: m.ID, Scope: ws})
}

func scopeErrCode(err error) string {
	switch {
	case errors.Is(err, landlock.ErrUnsupported):
		return "unsupported"
	case errors.Is(err, unix.E2BIG):
		return "limit_exceeded"
	}
	return fileops.ErrCode(err)
}

// narrowWrites stacks a write layer for paths and returns the scope now in
// force.
func (s *Server) narrowWrites(req []string) (*proto.WriteScope, error) {
	if s.landABI < landlock.MinWritesABI {
		// 0: no Landlock at all
		return nil, fmt.Errorf("write scopes need Landlock ABI %d or later, commands here have %d: %w",
			landlock.MinWritesABI, s.landABI, landlock.ErrUnsupported)
	}
	paths, err := checkScopePaths(req, s.hard.ScopeRoots)
	if err != nil {
		return nil, err
	}
	s.restrictMu.Lock()
	defer s.restrictMu.Unlock()
	prev := s.currentScope()
	var rs *landlock.Ruleset
	// As the command user and under the layers already in force, so a
	// missing path is created only where a command could create it.
	err = s.asUser(func() error {
		places, err := openPlaces(scopeToOpen(paths, prev, s.hard.Scratch), s.hard.Scratch)
		if err != nil {
			return err
		}
		defer closeAll(places)
		rs, err = landlock.PrepareWrites(places)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := s.restrictSpawner(rs); err != nil {
		rs.Close()
		if errors.Is(err, unix.E2BIG) {
			err = fmt.Errorf("too many write scopes (Landlock stacks at most 16 layers): %w", err)
		}
		return nil, fmt.Errorf("restrict the spawner thread: %w", err)
	}
	scope := intersectScopes(prev, paths, s.hard.Scratch)
	s.scopeMu.Lock()
	s.layers = append(s.layers, rs)
	s.scope = scope
	s.scopeMu.Unlock()
	return &proto.WriteScope{Paths: scope, Scratch: s.hard.Scratch, LandlockABI: rs.Applied().ABI}, nil
}

// restrictSpawner enforces rs on the spawner thread, between two forks.
func (s *Server) restrictSpawner(rs *landlock.Ruleset) error {
	reply := make(chan spawnRes, 1)
	s.spawnc <- spawnReq{restrict: rs, reply: reply}
	return (<-reply).err
}

// writeLayers is a snapshot of the write layers in force, oldest first.
func (s *Server) writeLayers() []*landlock.Ruleset {
	s.scopeMu.Lock()
	defer s.scopeMu.Unlock()
	// append-only: a clipped slice never sees a later layer
	return slices.Clip(s.layers)
}

func (s *Server) currentScope() []string {
	s.scopeMu.Lock()
	defer s.scopeMu.Unlock()
	return s.scope
}

// scopeToOpen leaves out the paths that share nothing with the scope in
// force: the new layer could grant nothing there, and they are not created.
func scopeToOpen(paths, prev, scratch []string) []string {
	if prev == nil {
		return paths
	}
	inForce := append(slices.Clip(prev), scratch...)
	return slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return !overlaps(p, inForce) })
}

// openPlaces opens the scope's paths, creating missing ones as
// directories, and the scratch places, all without following symlinks:
// a symlink planted in the workspace must not widen the scope.
func openPlaces(paths, scratch []string) ([]*os.File, error) {
	var places []*os.File
	fail := func(err error) ([]*os.File, error) {
		closeAll(places)
		return nil, err
	}
	for _, p := range paths {
		f, err := openPlace(p, true)
		if err != nil {
			return fail(err)
		}
		places = append(places, f)
		if err := checkPlaceType(f); err != nil {
			return fail(err)
		}
	}
	for _, p := range scratch {
		f, err := openPlace(p, false)
		if err != nil {
			return fail(err)
		}
		places = append(places, f)
	}
	return places, nil
}

// openPlace opens p (O_PATH) without following any symlink on the way;
// with create, a missing p is made first, with its missing parents.
func openPlace(p string, create bool) (*os.File, error) {
	fd, err := openNoSymlinks(p)
	if err == unix.ENOENT && create {
		if err = mkdirNoSymlinks(p); err == nil {
			fd, err = openNoSymlinks(p)
		}
	}
	if errors.Is(err, unix.ELOOP) {
		// not %w: ELOOP alone would read as a refusal, this is a bad path
		return nil, fmt.Errorf("write scope path %s is or passes through a symlink (%v): %w", p, err, fileops.ErrInvalidPath)
	}
	if err != nil {
		return nil, fmt.Errorf("write scope path %s: %w", p, err)
	}
	return os.NewFile(uintptr(fd), p), nil
}

// checkPlaceType accepts directories and regular files as scope paths.
func checkPlaceType(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("write scope path %s: %w", f.Name(), err)
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFDIR && t != unix.S_IFREG {
		return fmt.Errorf("write scope path %s is neither a directory nor a regular file: %w", f.Name(), fileops.ErrInvalidPath)
	}
	return nil
}

func openNoSymlinks(p string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	return pathwalk.Openat2(unix.AT_FDCWD, p, &how)
}

// mkdirNoSymlinks makes p and its missing parents, never through a
// symlink.
func mkdirNoSymlinks(p string) error {
	cur := "/"
	for _, el := range strings.Split(strings.Trim(p, "/"), "/") {
		dfd, err := openNoSymlinks(cur)
		if err != nil {
			return &fs.PathError{Op: "open", Path: cur, Err: err}
		}
		err = unix.Mkdirat(dfd, el, 0o755)
		unix.Close(dfd)
		if err != nil && err != unix.EEXIST {
			return &fs.PathError{Op: "mkdir", Path: path.Join(cur, el), Err: err}
		}
		cur = path.Join(cur, el)
	}
	return nil
}

// Scope paths: a path stands for itself and everything beneath it. These
// helpers work on the path strings only; what the kernel enforces is bound
// to the inodes opened above.

// checkScopePaths wants absolute, clean paths within one of roots; it
// returns them sorted, without duplicates.
func checkScopePaths(paths, roots []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "" || !path.IsAbs(p) || strings.ContainsRune(p, 0) || len(p) > 4096 {
			return nil, fmt.Errorf("write scope path %q: want an absolute path: %w", p, fileops.ErrInvalidPath)
		}
		if path.Clean(p) != p {
			return nil, fmt.Errorf("write scope path %q: want a clean path (%q): %w", p, path.Clean(p), fileops.ErrInvalidPath)
		}
		if !slices.ContainsFunc(roots, func(r string) bool { return within(p, r) }) {
			return nil, fmt.Errorf("write scope path %s: not within %s: %w", p, strings.Join(roots, " or "), fileops.ErrInvalidPath)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// within says whether p is dir or beneath it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// overlaps says whether p and some path of set share anything.
func overlaps(p string, set []string) bool {
	return slices.ContainsFunc(set, func(q string) bool { return within(p, q) || within(q, p) })
}

// intersectScopes is where both scopes allow writes: the paths of one that
// lie beneath a path of the other. always (the scratch places) belongs to
// every scope; a nil prev is no scope yet, which allows everything.
func intersectScopes(prev, next, always []string) []string {
	if prev == nil {
		return minimalPaths(next)
	}
	prev = append(slices.Clip(prev), always...)
	out := []string{}
	for _, p := range next {
		for _, q := range prev {
			switch {
			case within(p, q):
				out = append(out, p)
			case within(q, p):
				out = append(out, q)
			}
		}
	}
	return minimalPaths(out)
}

// minimalPaths sorts paths and drops those beneath another of them.
func minimalPaths(paths []string) []string {
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	out := []string{}
	for _, p := range sorted {
		if len(out) == 0 || !within(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}
