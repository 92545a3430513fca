package pathwalk

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tree makes a root with planted symlinks, and a host file beside it that
// no walk in the root may reach.
func tree(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "secret")
	for _, d := range []string{"a/b", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{"a/b/f": "inside", "etc/passwd": "root passwd"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"abs-passwd":  "/etc/passwd",     // inside the root: its /etc
		"up":          "../../../secret", // climbs: clamped at the root
		"host":        outside,           // absolute host path: inside the root it does not exist
		"a/rel":       "b/f",
		"a/b/dotdot":  "../../etc/passwd",
		"loop1":       "loop2",
		"loop2":       "loop1",
		"a/dirlink":   "/a/b",
		"proc-self":   "/proc/self/root",
		"dangling":    "/newfile",
		"a/b/up-much": "../../../../../../etc",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

func read(t *testing.T, fd int) string {
	t.Helper()
	f := os.NewFile(uintptr(fd), "x")
	defer f.Close()
	b := make([]byte, 100)
	n, _ := f.Read(b)
	return string(b[:n])
}

// TestWalkMatchesKernel: the user-space walk resolves each case as the
// kernel's openat2 does (same content or same error), except where it is
// documented to be stricter.
func TestWalkMatchesKernel(t *testing.T) {
	root, _ := tree(t)
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rfd)
	inRoot := uint64(unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS)
	cases := []struct {
		path    string
		flags   uint64
		resolve uint64
	}{
		{"a/b/f", unix.O_RDONLY, inRoot},
		{"/a/b/f", unix.O_RDONLY, inRoot},
		{"abs-passwd", unix.O_RDONLY, inRoot},
		{"up", unix.O_RDONLY, inRoot},
		{"host", unix.O_RDONLY, inRoot},
		{"a/rel", unix.O_RDONLY, inRoot},
		{"a/b/dotdot", unix.O_RDONLY, inRoot},
		{"../../../../etc/passwd", unix.O_RDONLY, inRoot},
		{"a/b/up-much/passwd", unix.O_RDONLY, inRoot},
		{"a/dirlink/f", unix.O_RDONLY, inRoot},
		{"loop1", unix.O_RDONLY, inRoot},
		{"a/b/f/", unix.O_RDONLY, inRoot},
		{"a/b/missing", unix.O_RDONLY, inRoot},
		{"a/rel", unix.O_RDONLY | unix.O_NOFOLLOW, inRoot},
		{"a/b/f", unix.O_RDONLY, unix.RESOLVE_NO_SYMLINKS},
		{"a/rel", unix.O_RDONLY, unix.RESOLVE_NO_SYMLINKS},
		{"a/dirlink/f", unix.O_RDONLY, unix.RESOLVE_NO_SYMLINKS},
		{"a/b", unix.O_RDONLY | unix.O_DIRECTORY, inRoot},
		{"a/dirlink", unix.O_PATH | unix.O_DIRECTORY, inRoot},
		{"a/", unix.O_PATH | unix.O_DIRECTORY, inRoot},
		{"/", unix.O_PATH | unix.O_DIRECTORY, inRoot},
	}
	for _, c := range cases {
		how := unix.OpenHow{Flags: c.flags | unix.O_CLOEXEC, Resolve: c.resolve}
		kfd, kerr := unix.Openat2(rfd, c.path, &how)
		wfd, werr := Walk(rfd, c.path, &how)
		if (kerr == nil) != (werr == nil) || kerr != nil && !errors.Is(werr, kerr) {
			t.Errorf("%s (flags %#x resolve %#x): kernel %v, walk %v", c.path, c.flags, c.resolve, kerr, werr)
		}
		if kerr == nil && werr == nil {
			var ks, ws unix.Stat_t
			_ = unix.Fstat(kfd, &ks)
			_ = unix.Fstat(wfd, &ws)
			if ks.Ino != ws.Ino || ks.Dev != ws.Dev {
				t.Errorf("%s: kernel and walk opened different files", c.path)
			}
		}
		if kfd >= 0 {
			unix.Close(kfd)
		}
		if wfd >= 0 {
			unix.Close(wfd)
		}
	}
}

// TestWalkStaysInside: no walk reaches the host file or follows a procfs
// link; creating through a dangling symlink creates inside the root.
func TestWalkStaysInside(t *testing.T) {
	root, outside := tree(t)
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rfd)
	how := unix.OpenHow{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	for _, p := range []string{"up", "host", "../secret", "a/b/up-much/../secret", outside} {
		if fd, err := Walk(rfd, p, &how); err == nil {
			if got := read(t, fd); got == "host secret" {
				t.Errorf("%s reached the host file", p)
			}
		}
	}
	// a magic link, reached from a root that has procfs in it
	phow := unix.OpenHow{Flags: unix.O_PATH, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	slash, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(slash)
	for _, p := range []string{"/proc/1/root/etc", "/proc/self/fd/0", "/proc/self/cwd"} {
		if fd, err := Walk(slash, p, &phow); err == nil {
			unix.Close(fd)
			t.Errorf("%s: a magic link was followed", p)
		} else if !errors.Is(err, unix.ELOOP) {
			t.Errorf("%s: %v, want ELOOP", p, err)
		}
	}
	chow := unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT, Mode: 0o600, Resolve: unix.RESOLVE_IN_ROOT}
	fd, err := Walk(rfd, "dangling", &chow)
	if err != nil {
		t.Fatalf("create through a dangling symlink: %v", err)
	}
	unix.Close(fd)
	if _, err := os.Stat(filepath.Join(root, "newfile")); err != nil {
		t.Errorf("the file was not created inside the root: %v", err)
	}
	if _, err := os.Stat("/newfile"); err == nil {
		t.Error("the file was created at the host's root")
	}
	if _, err := Walk(rfd, "a", &unix.OpenHow{Resolve: unix.RESOLVE_BENEATH}); !errors.Is(err, unix.ENOSYS) {
		t.Errorf("an unsupported flag: %v, want ENOSYS", err)
	}
}

func TestOpenRegular(t *testing.T) {
	d := t.TempDir()
	dfd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	if err := unix.Mkfifo(d+"/fifo", 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", d+"/link"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		flags int
	}{{"fifo", unix.O_WRONLY}, {"fifo", unix.O_RDONLY}, {"link", unix.O_RDONLY}} {
		done := make(chan error, 1)
		go func() {
			f, err := OpenRegular(dfd, c.name, c.flags, 0)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s (flags %#x): opened", c.name, c.flags)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s (flags %#x): open blocked", c.name, c.flags)
		}
	}
	f, err := OpenRegular(dfd, "file", unix.O_WRONLY|unix.O_CREAT, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Error("the file was left non-blocking")
	}
	if _, err := f.WriteString("x"); err != nil {
		t.Error(err)
	}
}

// TestOpenat2SurvivesHostRenames: openat2 with RESOLVE_IN_ROOT answers
// EAGAIN when any rename (or mount) on the host races a ".." step, and
// the file API failed spuriously under load. Openat2 retries: with a
// rename loop running beside it, no resolution fails.
func TestOpenat2SurvivesHostRenames(t *testing.T) {
	root, _ := tree(t)
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	if fd, err := unix.Openat2(unix.AT_FDCWD, root, &how); err == unix.ENOSYS {
		t.Skip("no openat2 here: the user-space walk does not race renames")
	} else if err == nil {
		unix.Close(fd)
	}
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rootFD)

	// The host side: renames in a directory of its own, in a loop.
	spin := t.TempDir()
	a, b := filepath.Join(spin, "a"), filepath.Join(spin, "b")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Rename(a, b)
			_ = os.Rename(b, a)
		}
	}()
	defer func() { close(stop); <-done }()

	// Paths that take ".." steps, as the file API's do through symlinks.
	paths := []string{"a/b/../../etc/passwd", "a/b/dotdot", "/a/b/../b/f"}
	var failures, eagain int
	var first error
	deadline := time.Now().Add(3 * time.Second)
	n := 0
	for ; n < 200000 && time.Now().Before(deadline); n++ {
		fd, err := Openat2(rootFD, paths[n%len(paths)], &how)
		if err != nil {
			failures++
			if errors.Is(err, unix.EAGAIN) {
				eagain++
			}
			if first == nil {
				first = err
			}
			continue
		}
		unix.Close(fd)
	}
	if failures > 0 {
		t.Errorf("%d of %d resolutions failed under a host rename loop (%d EAGAIN), first: %v", failures, n, eagain, first)
	}
	t.Logf("%d resolutions under a rename loop", n)
}

// TestRaceError: once the retries run out, the error says what happened
// and is still EAGAIN to errors.Is.
func TestRaceError(t *testing.T) {
	err := error(&RaceError{Path: "a/../b", Tries: MaxRaceRetries})
	if !errors.Is(err, unix.EAGAIN) {
		t.Errorf("RaceError is not EAGAIN to errors.Is")
	}
	if msg := err.Error(); !strings.Contains(msg, "a/../b") || !strings.Contains(msg, "renames or mounts on the host") {
		t.Errorf("RaceError text %q does not say what raced", msg)
	}
}
