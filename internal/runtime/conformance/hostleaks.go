package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// plantedConfig is one host configuration place under /usr the attack
// looks at: a token planted there, or an existing file the host has.
type plantedConfig struct {
	inside string // path inside the sandbox
	token  []byte // what must not be read there
	// keep: what must be read there instead (npm's registry settings of
	// a hidden npmrc, runtime.UsrKeep), when not nil
	keep []byte
}

// testHostConfigUnderUsr is the attack of a host's npm token, Maven
// password or Cloud SDK properties kept under the host's /usr, which the
// sandbox has bound read-only: a token planted in every place of
// runtime.UsrConfigPaths (made if missing, removed after) must not be
// readable inside, nor any existing file there.
func testHostConfigUnderUsr(t *testing.T, f Factory) {
	be, spec := f(t)
	usr := ""
	for _, b := range spec.Binds {
		if path.Clean(b.Target) == "/usr" {
			usr = b.Source
		}
	}
	if usr == "" {
		t.Skip("the factory's template binds no host /usr")
	}
	if err := syscall.Access(usr, 2 /* W_OK */); errors.Is(err, syscall.EROFS) {
		// the cgroup v2 test VM's root: nothing can be planted, and no
		// host tool can have put configuration there at run time either
		t.Skipf("the host's %s is on a read-only file system: nothing to plant", usr)
	}
	lockHostUsr(t)
	var planted []plantedConfig
	for _, p := range runtime.UsrConfigPaths {
		planted = append(planted, plantConfig(t, usr, p)...)
	}
	// The control: a token in /usr outside these places is read, so that
	// reading none of the others means they are hidden.
	control := plantConfig(t, usr, "share/airlock-control-"+runtime.NewID())
	sb, err := be.Create(ctxTimeout(t), spec)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = sb.Destroy(context.Background()) })
	if r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/cat", "--", control[0].inside}}); !bytes.Contains([]byte(r.out), control[0].token) {
		t.Fatalf("control: a token planted in %s is not read inside (%q %q): the attack proves nothing", control[0].inside, r.out, r.err)
	}
	for _, pc := range planted {
		r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/cat", "--", pc.inside}})
		switch {
		case len(pc.token) > 0 && r.st.Code == 0 && bytes.Contains([]byte(r.out), pc.token):
			t.Errorf("LEAK: host configuration %s is readable inside the sandbox", pc.inside)
		case pc.keep != nil && r.out != string(pc.keep):
			t.Errorf("%s inside: %d bytes (%q), want the %d bytes of its settings without credentials", pc.inside, len(r.out), r.err, len(pc.keep))
		}
	}
}

// hostUsrLock is the host-wide lock of planting under the host's /usr.
const hostUsrLock = "/run/airlock-conformance-usr.lock"

// lockHostUsr holds a host-wide lock until the test and its cleanups end:
// runs of this case for several backends at once (make test runs their
// packages in parallel) must not see each other's planted files, which
// vanish under a sandbox being created (runsc then made the missing mount
// target in the host's /usr, left behind as an empty file).
func lockHostUsr(t *testing.T) {
	t.Helper()
	// A fixed path, not os.TempDir(): runs with another TMPDIR (each
	// worktree's, the fast tier's) must share the lock too, or an empty
	// /usr/pip.conf is left on the host.
	f, err := os.OpenFile(hostUsrLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // registered first: released last
}

// plantConfig plants a token at the place p (a directory place when it
// ends in "/") under the host directory usr, making what is missing and
// removing it all when the test ends. An existing file is left as it is
// and its content is what must not be read.
func plantConfig(t *testing.T, usr, p string) []plantedConfig {
	t.Helper()
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	token := []byte("airlock-planted-token-" + hex.EncodeToString(tok[:]))
	data := append(append([]byte("[airlock-test]\ntoken = "), token...), '\n')
	isDir := strings.HasSuffix(p, "/")
	host := filepath.Join(usr, strings.TrimSuffix(p, "/"))
	inside := path.Join("/usr", strings.TrimSuffix(p, "/"))
	st, err := os.Stat(host)
	switch {
	case err == nil && st.IsDir():
		name := "airlock-planted-" + hex.EncodeToString(tok[:4])
		writePlanted(t, filepath.Join(host, name), data)
		return []plantedConfig{{inside: path.Join(inside, name), token: token}, plantNpmrc(t, host, inside, token)}
	case err == nil && st.Mode().IsRegular():
		old, err := os.ReadFile(host)
		if err != nil || len(bytes.TrimSpace(old)) == 0 {
			return nil // nothing to read
		}
		return []plantedConfig{{inside: inside, token: old}}
	case err == nil || !errors.Is(err, fs.ErrNotExist):
		return nil // a device or unreadable: not a configuration file
	}
	dir := host
	if !isDir {
		dir = filepath.Dir(host)
	}
	mkdirPlanted(t, dir)
	if isDir {
		writePlanted(t, filepath.Join(host, "settings"), data)
		return []plantedConfig{{inside: path.Join(inside, "settings"), token: token}, plantNpmrc(t, host, inside, token)}
	}
	writePlanted(t, host, data)
	return []plantedConfig{{inside: inside, token: token}}
}

// plantNpmrc plants an npm configuration with a registry and tokens in
// the host directory place dir (seen at inside), unless it has one: the
// sandbox must see the registry and nothing of the tokens. One that
// exists must be seen as runtime.UsrKeep keeps it.
func plantNpmrc(t *testing.T, dir, inside string, token []byte) plantedConfig {
	t.Helper()
	pc := plantedConfig{inside: path.Join(inside, "npmrc")}
	// a place that is a link (Debian's Maven conf, to /etc/maven) names
	// the sandbox's own tree inside: nothing of the host's is seen there
	st, err := os.Lstat(dir)
	linked := err != nil || !st.IsDir()
	if old, err := os.ReadFile(filepath.Join(dir, "npmrc")); err == nil {
		if !linked {
			pc.keep = runtime.UsrKeep("npmrc", old)
		}
		return pc
	}
	tok := string(token)
	data := "registry=http://127.0.0.1:9/\n//127.0.0.1:9/:_authToken=" + tok + "\n_auth = " + tok +
		"\n@corp:registry=https://u:" + tok + "@127.0.0.1:9/\n; a comment " + tok + "\n"
	writePlanted(t, filepath.Join(dir, "npmrc"), []byte(data))
	pc.token = token
	if !linked {
		pc.keep = []byte("registry=http://127.0.0.1:9/\n")
	}
	return pc
}

// mkdirPlanted makes dir and its missing parents, removed (when empty)
// when the test ends.
func mkdirPlanted(t *testing.T, dir string) {
	t.Helper()
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("plant: %v", err)
	}
	t.Cleanup(func() {
		for _, d := range made {
			_ = os.Remove(d)
		}
	})
}

// writePlanted creates file (never one that exists), removed when the
// test ends.
func writePlanted(t *testing.T, file string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("plant: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(file) })
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("plant: %v", err)
	}
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testHostLeaks: what /proc tells a sandbox of the host and of other
// sandboxes. The host's block devices (other sandboxes' loop devices)
// and their I/O counters, a covert channel between sandboxes, are
// hidden, and the agent's name is the same everywhere, not that of the
// host's copy of the airlock binary.
func testHostLeaks(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	for _, p := range []string{"/proc/diskstats", "/proc/partitions"} {
		r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/cat", "--", p}})
		if r.st.Code == 0 && strings.TrimSpace(r.out) != "" {
			t.Errorf("LEAK: %s shows the host's block devices: %q", p, firstLine(r.out))
		}
	}
	if r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/cat", "/proc/1/comm", "/proc/1/task/1/comm"}}); r.out != "airlock-agent\nairlock-agent\n" {
		t.Errorf("LEAK: the agent's name is %q (%q), want airlock-agent", r.out, r.err)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// testNoDeviceNodes: a command cannot make a device node (through which it
// would reach a device its sandbox does not offer), nor force the writeback
// of every host filesystem; fifos and fsync still work.
func testNoDeviceNodes(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	for _, dev := range [][]string{{"b", "7", "0"}, {"c", "1", "1"}} {
		p := "/tmp/dev-" + dev[0]
		if r := execWait(t, sb, runtime.ExecRequest{Argv: append([]string{"/usr/bin/mknod", p}, dev...)}); r.st.Code == 0 {
			t.Errorf("ESCAPE: mknod %s %v succeeds", p, dev)
		}
	}
	if r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/usr/bin/mknod", "/tmp/fifo", "p"}}); r.st.Code != 0 {
		t.Errorf("mknod of a fifo: %q (code %d)", r.err, r.st.Code)
	}
}

// testNoHostWriteback: sync(2) makes the host write out every dirty page
// of every filesystem, syncfs(2) on the bound /usr those of the host's
// root filesystem; a sandbox must not have the host do that at will.
// Both fail (sync's callers cannot tell: it returns nothing), fsync of the
// sandbox's own file still works.
func testNoHostWriteback(t *testing.T, f Factory) {
	if goruntime.GOARCH != "amd64" {
		t.Skip("the syscall numbers below are amd64's")
	}
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		t.Skip("no perl to make raw syscalls with")
	}
	sb := create(t, f, nil)
	// perl's syscall() makes the raw call: prints "-1 errno" or the result
	script := `open(my $d, "<", "/usr") or die; open(my $w, ">", "/tmp/f") or die; ` +
		`for my $c ([162, 0], [306, fileno($d)], [74, fileno($w)]) { my $r = syscall($c->[0], $c->[1]); print $r, " ", ($r < 0 ? $!+0 : 0), "\n" }`
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/usr/bin/perl", "-e", script}})
	eperm := fmt.Sprintf("-1 %d", int(syscall.EPERM))
	want := eperm + "\n" + eperm + "\n0 0\n"
	if r.out != want {
		t.Errorf("sync, syncfs(/usr), fsync(own file): %q (%q), want %q", r.out, r.err, want)
	}
}

// testPtyLimit: the host's pseudo-terminals are one pool for every
// sandbox (kernel.pty.max less the host's reserve): a sandbox opens at
// most its Limits.Ptys, then ENOSPC, whatever it tries. A backend whose
// terminals are not the host's may declare the limit unsupported; then
// asking for one must fail so.
func testPtyLimit(t *testing.T, f Factory, unsupported string) {
	const limit = 4
	if unsupported != "" {
		be, spec := f(t)
		spec.Limits.Ptys = limit
		sb, err := be.Create(ctxTimeout(t), spec)
		if err == nil {
			_ = sb.Destroy(context.Background())
		}
		if !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("Create with a pty limit = %v, want unsupported (declared: %s)", err, unsupported)
		}
		return
	}
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		t.Skip("no perl to open terminals with")
	}
	sb := create(t, f, func(s *runtime.Spec) { s.Limits.Ptys = limit })
	script := `my @f; for (1..64) { open(my $f, "+<", "/dev/ptmx") or last; push @f, $f } print scalar(@f), " ", $!+0, "\n"`
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/usr/bin/perl", "-e", script}})
	if want := fmt.Sprintf("%d %d\n", limit, int(syscall.ENOSPC)); r.out != want {
		t.Errorf("terminals opened, errno: %q (%q), want %q", r.out, r.err, want)
	}
	if got := sb.Info().Limits.Ptys; got != limit {
		t.Errorf("Info().Limits.Ptys = %d, want %d", got, limit)
	}
}

// testMountinfoNamesNoHostPath: the sandbox's mount table names neither
// the template's host directory nor the sandbox's state (by its id).
func testMountinfoNamesNoHostPath(t *testing.T, f Factory) {
	_, spec := f(t)
	sb := create(t, f, nil)
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/cat", "/proc/self/mountinfo"}})
	if r.st.Code != 0 || !strings.Contains(r.out, " / / ") {
		t.Fatalf("mountinfo: %q %q", r.out, r.err)
	}
	for _, leak := range []string{spec.RootFS, sb.ID()} {
		for _, l := range strings.Split(r.out, "\n") {
			if strings.Contains(l, leak) {
				t.Errorf("LEAK: mountinfo names %q: %s", leak, l)
			}
		}
	}
}
