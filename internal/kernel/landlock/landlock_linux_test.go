package landlock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Restrictions cannot be undone, so everything that calls RestrictThread runs in a re-executed
// copy of the test binary (see helperMain) and the test process only inspects its report.
const (
	envScenario = "AIRLOCK_LANDLOCK_HELPER"
	envRoot     = "AIRLOCK_LANDLOCK_ROOT"
	envAbstract = "AIRLOCK_LANDLOCK_ABSTRACT"
)

func TestMain(m *testing.M) {
	if s := os.Getenv(envScenario); s != "" {
		os.Exit(helperMain(s))
	}
	os.Exit(m.Run())
}

// helperReport is what a helper child prints as JSON on stdout.
type helperReport struct {
	Applied     Applied
	Err         string          // RestrictThread's error, if any
	ErrIs       map[string]bool // which sentinel errors Err matches
	Results     map[string]string
	ResultOrder []string
}

func helperMain(scenario string) int {
	root := os.Getenv(envRoot)
	p := func(rel string) string { return filepath.Join(root, rel) }

	runtime.LockOSThread()
	if scenario != "no-nnp" {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "set no_new_privs:", err)
			return 2
		}
	}

	var cfg Config
	switch scenario {
	case "fs":
		cfg = Config{
			ReadOnly:  []string{"/usr", "/bin", "/lib", "/lib64", "/etc", p("ro"), p("missing")},
			ReadWrite: []string{p("rw"), p("devnull")},
		}
	case "rootro":
		cfg = Config{ReadOnly: []string{"/"}, ReadWrite: []string{p("rw"), "/dev/null"}}
	case "scope", "noscope":
		cfg = Config{ReadOnly: []string{"/"}, Scope: scenario == "scope"}
	case "missing-rw", "no-nnp":
		cfg = Config{ReadOnly: []string{"/"}, ReadWrite: []string{p("rw"), p("missing")}}
	case "writes":
		// PrepareWrites, below; no Config
	default:
		fmt.Fprintln(os.Stderr, "unknown scenario", scenario)
		return 2
	}

	rep := helperReport{Results: map[string]string{}, ErrIs: map[string]bool{}}
	var applied Applied
	var err error
	if scenario == "writes" {
		applied, err = restrictWrites(p("rw"), p("devnull"))
	} else {
		applied, err = RestrictThread(cfg)
	}
	rep.Applied = applied
	if err != nil {
		rep.Err = err.Error()
		rep.ErrIs["ErrNotExist"] = errors.Is(err, fs.ErrNotExist)
		rep.ErrIs["ErrNoNewPrivs"] = errors.Is(err, ErrNoNewPrivs)
		rep.ErrIs["ErrUnsupported"] = errors.Is(err, ErrUnsupported)
	}
	run := func(name string, op func() error) {
		rep.Results[name] = outcome(op())
		rep.ResultOrder = append(rep.ResultOrder, name)
	}

	switch scenario {
	case "fs":
		run("read_ro", func() error { return readExpect(p("ro/file"), "hello") })
		run("readdir_ro", func() error { _, err := os.ReadDir(p("ro")); return err })
		run("read_outside", func() error { _, err := os.ReadFile(p("outside/file")); return err })
		run("readdir_root", func() error { _, err := os.ReadDir(root); return err })
		run("write_ro", func() error { return writeFile(p("ro/file"), os.O_WRONLY) })
		run("create_ro", func() error { return writeFile(p("ro/new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL) })
		run("mkdir_ro", func() error { return os.Mkdir(p("ro/d"), 0o755) })
		run("mkfifo_ro", func() error { return unix.Mkfifo(p("ro/fifo"), 0o644) })
		run("symlink_ro", func() error { return os.Symlink("file", p("ro/link")) })
		run("remove_ro", func() error { return os.Remove(p("ro/file")) })
		run("rmdir_ro", func() error { return os.Remove(p("ro/sub")) })
		run("rename_in_ro", func() error { return os.Rename(p("ro/file"), p("ro/file2")) })
		run("truncate_ro", func() error { return os.Truncate(p("ro/file"), 0) })

		run("create_rw", func() error { return writeFile(p("rw/new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL) })
		run("append_rw", func() error { return writeFile(p("rw/existing"), os.O_WRONLY|os.O_APPEND) })
		run("mkdir_rw", func() error { return os.Mkdir(p("rw/d"), 0o755) })
		run("symlink_rw", func() error { return os.Symlink("existing", p("rw/link")) })
		run("truncate_rw", func() error { return os.Truncate(p("rw/existing"), 1) })
		run("rename_in_rw", func() error { return os.Rename(p("rw/new"), p("rw/new2")) })
		run("rename_rw_subdir", func() error { return os.Rename(p("rw/new2"), p("rw/sub/new2")) })
		run("link_in_rw", func() error { return os.Link(p("rw/existing"), p("rw/hard")) })
		run("remove_rw", func() error { return os.Remove(p("rw/hard")) })
		run("rmdir_rw", func() error { return os.Remove(p("rw/d")) })

		run("link_rw_to_ro", func() error { return os.Link(p("rw/existing"), p("ro/linked")) })
		run("rename_rw_to_ro", func() error { return os.Rename(p("rw/existing"), p("ro/moved")) })
		run("rename_ro_to_rw", func() error { return os.Rename(p("ro/file"), p("rw/stolen")) })

		run("file_rule_write", func() error { return writeFile(p("devnull"), os.O_WRONLY) })
		run("file_rule_read", func() error { _, err := os.ReadFile(p("devnull")); return err })
		run("file_rule_truncate", func() error { return os.Truncate(p("devnull"), 0) })
		run("file_rule_sibling", func() error {
			return writeFile(p("devnull2"), os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		})

		run("exec_true", func() error { return runProcess("/bin/true") })
		run("child_sh", func() error {
			return runProcess("/bin/sh", "-c", `echo x > "$1/rw/f" && ! echo y > "$1/ro/g"`, "sh", root)
		})
		run("other_thread_write_ro", func() error {
			// Only the calling thread is restricted: a goroutine on another thread is not.
			done := make(chan error)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				done <- writeFile(p("ro/other"), os.O_WRONLY|os.O_CREATE|os.O_EXCL)
			}()
			return <-done
		})
	case "rootro":
		run("exec_true", func() error { return runProcess("/bin/true") })
		run("read_ro", func() error { return readExpect(p("ro/file"), "hello") })
		run("create_ro", func() error { return writeFile(p("ro/new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL) })
		run("create_rw", func() error { return writeFile(p("rw/new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL) })
		run("write_dev_null", func() error { return writeFile("/dev/null", os.O_WRONLY) })
		run("write_dev_zero", func() error { return writeFile("/dev/zero", os.O_WRONLY) })
		// TCGETS is not a tty ioctl these drivers know (ENOTTY) unless Landlock denies it first.
		run("ioctl_dev_null", func() error { return ioctlTCGETS("/dev/null") })
		run("ioctl_dev_zero", func() error { return ioctlTCGETS("/dev/zero") })
	case "scope", "noscope":
		run("kill_parent", func() error { return unix.Kill(os.Getppid(), 0) })
		run("connect_abstract", func() error { return connectAbstract(os.Getenv(envAbstract)) })
		run("kill_own_child", func() error {
			proc, err := os.StartProcess("/bin/sleep", []string{"sleep", "30"}, &os.ProcAttr{})
			if err != nil {
				return err
			}
			defer proc.Wait()
			if err := proc.Signal(unix.SIGKILL); err != nil {
				_ = proc.Kill()
				return err
			}
			return nil
		})
	case "writes":
		run("read_outside", func() error { return readExpect(p("outside/file"), "secret") })
		run("readdir_root", func() error { _, err := os.ReadDir(root); return err })
		run("exec_true", func() error { return runProcess("/bin/true") })
		run("write_ro", func() error { return writeFile(p("ro/file"), os.O_WRONLY) })
		run("create_ro", func() error { return writeFile(p("ro/new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL) })
		run("mkdir_ro", func() error { return os.Mkdir(p("ro/d"), 0o755) })
		run("mkfifo_ro", func() error { return unix.Mkfifo(p("ro/fifo"), 0o644) })
		run("symlink_ro", func() error { return os.Symlink("file", p("ro/link")) })
		run("remove_ro", func() error { return os.Remove(p("ro/file")) })
		run("rmdir_ro", func() error { return os.Remove(p("ro/sub")) })
		run("rename_in_ro", func() error { return os.Rename(p("ro/file"), p("ro/file2")) })
		run("truncate_ro", func() error { return os.Truncate(p("ro/file"), 0) })

		run("create_rw", func() error { return writeFile(p("rw/new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL) })
		run("append_rw", func() error { return writeFile(p("rw/existing"), os.O_WRONLY|os.O_APPEND) })
		run("mkdir_rw", func() error { return os.Mkdir(p("rw/d"), 0o755) })
		run("truncate_rw", func() error { return os.Truncate(p("rw/existing"), 1) })
		run("rename_rw_subdir", func() error { return os.Rename(p("rw/new"), p("rw/sub/new2")) })
		run("link_in_rw", func() error { return os.Link(p("rw/existing"), p("rw/hard")) })
		run("remove_rw", func() error { return os.Remove(p("rw/hard")) })
		run("rmdir_rw", func() error { return os.Remove(p("rw/d")) })

		// Nothing crosses the boundary of the place, either way.
		run("link_rw_to_ro", func() error { return os.Link(p("rw/existing"), p("ro/linked")) })
		run("link_ro_to_rw", func() error { return os.Link(p("ro/file"), p("rw/stolen-link")) })
		run("rename_rw_to_ro", func() error { return os.Rename(p("rw/existing"), p("ro/moved")) })
		run("rename_ro_to_rw", func() error { return os.Rename(p("ro/file"), p("rw/stolen")) })
		run("rename_place", func() error { return os.Rename(p("rw"), p("rw2")) })

		run("file_rule_write", func() error { return writeFile(p("devnull"), os.O_WRONLY) })
		run("file_rule_truncate", func() error { return os.Truncate(p("devnull"), 0) })
		run("file_rule_remove", func() error { return os.Remove(p("devnull")) })

		run("child_sh", func() error {
			return runProcess("/bin/sh", "-c", `echo x > "$1/rw/f" && ! echo y > "$1/ro/g"`, "sh", root)
		})
	case "missing-rw", "no-nnp":
		// RestrictThread failed, so this thread must still be unrestricted.
		run("create_ro", func() error { return writeFile(p("ro/new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL) })
	}

	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, "encode report:", err)
		return 2
	}
	return 0
}

// restrictWrites stacks a write-only layer granting changes beneath places on the calling thread.
func restrictWrites(places ...string) (Applied, error) {
	var files []*os.File
	for _, p := range places {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return Applied{}, fmt.Errorf("open %s: %w", p, err)
		}
		f := os.NewFile(uintptr(fd), p)
		defer f.Close()
		files = append(files, f)
	}
	r, err := PrepareWrites(files)
	if err != nil {
		return Applied{}, err
	}
	defer r.Close()
	return r.RestrictThread()
}

// outcome turns an operation's error into "ok", an errno name such as "EACCES", "exit N" or
// "error: text".
func outcome(err error) string {
	var errno unix.Errno
	var exit *exec.ExitError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
		return fmt.Sprintf("errno %d", int(errno))
	case errors.As(err, &exit):
		return fmt.Sprintf("exit %d", exit.ExitCode())
	default:
		return "error: " + err.Error()
	}
}

func readExpect(path, want string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if string(b) != want {
		return fmt.Errorf("read %s: got %q, want %q", path, b, want)
	}
	return nil
}

func writeFile(path string, flag int) error {
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString("x")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runProcess forks and execs from the calling (restricted) thread; os/exec is avoided so that no
// helper goroutine is involved.
func runProcess(path string, args ...string) error {
	proc, err := os.StartProcess(path, append([]string{path}, args...), &os.ProcAttr{
		Files: []*os.File{nil, os.Stderr, os.Stderr},
	})
	if err != nil {
		return err
	}
	st, err := proc.Wait()
	if err != nil {
		return err
	}
	if !st.Success() {
		return &exec.ExitError{ProcessState: st}
	}
	return nil
}

func ioctlTCGETS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err
}

func connectAbstract(name string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + name})
}

// requireABI skips the test when the kernel has no Landlock and returns its ABI otherwise.
func requireABI(t *testing.T) int {
	t.Helper()
	abi, err := ABI()
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("Landlock is not available in this kernel or LSM configuration: %v", err)
	}
	if err != nil {
		t.Fatalf("ABI: %v", err)
	}
	return abi
}

// layout creates root/{ro/file,ro/sub/,rw/existing,rw/sub/,devnull,outside/file}.
func layout(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"ro/sub", "rw/sub", "outside"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"ro/file": "hello", "rw/existing": "data", "devnull": "", "outside/file": "secret",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func runHelper(t *testing.T, scenario, root string, env ...string) helperReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	// GORACE: skip the race runtime's one-second sleep at exit in every helper.
	cmd.Env = append(os.Environ(), envScenario+"="+scenario, envRoot+"="+root, "GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper %s: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, &stdout, &stderr)
	}
	var rep helperReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("helper %s: decode report: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, &stdout, &stderr)
	}
	t.Logf("helper %s: %v err=%q stderr=%q", scenario, rep.Applied, rep.Err, stderr.String())
	for _, name := range rep.ResultOrder {
		t.Logf("  %-22s %s", name, rep.Results[name])
	}
	return rep
}

// checkResults compares every result with the outcomes allowed for it.
func checkResults(t *testing.T, rep helperReport, want map[string][]string) {
	t.Helper()
	for name, allowed := range want {
		got, ok := rep.Results[name]
		if !ok {
			t.Errorf("%s: no result", name)
			continue
		}
		if !slices.Contains(allowed, got) {
			t.Errorf("%s: got %s, want one of %v", name, got, allowed)
		}
	}
	for _, name := range rep.ResultOrder {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: result %s has no expectation", name, rep.Results[name])
		}
	}
}

func TestABI(t *testing.T) {
	abi := requireABI(t)
	if abi < 1 {
		t.Fatalf("ABI() = %d, want >= 1", abi)
	}
	t.Logf("kernel Landlock ABI %d", abi)
}

func TestUAPIConstants(t *testing.T) {
	pairs := []struct {
		name      string
		ours, sys uint64
	}{
		{"EXECUTE", AccessFSExecute, unix.LANDLOCK_ACCESS_FS_EXECUTE},
		{"WRITE_FILE", AccessFSWriteFile, unix.LANDLOCK_ACCESS_FS_WRITE_FILE},
		{"READ_FILE", AccessFSReadFile, unix.LANDLOCK_ACCESS_FS_READ_FILE},
		{"READ_DIR", AccessFSReadDir, unix.LANDLOCK_ACCESS_FS_READ_DIR},
		{"REMOVE_DIR", AccessFSRemoveDir, unix.LANDLOCK_ACCESS_FS_REMOVE_DIR},
		{"REMOVE_FILE", AccessFSRemoveFile, unix.LANDLOCK_ACCESS_FS_REMOVE_FILE},
		{"MAKE_CHAR", AccessFSMakeChar, unix.LANDLOCK_ACCESS_FS_MAKE_CHAR},
		{"MAKE_DIR", AccessFSMakeDir, unix.LANDLOCK_ACCESS_FS_MAKE_DIR},
		{"MAKE_REG", AccessFSMakeReg, unix.LANDLOCK_ACCESS_FS_MAKE_REG},
		{"MAKE_SOCK", AccessFSMakeSock, unix.LANDLOCK_ACCESS_FS_MAKE_SOCK},
		{"MAKE_FIFO", AccessFSMakeFifo, unix.LANDLOCK_ACCESS_FS_MAKE_FIFO},
		{"MAKE_BLOCK", AccessFSMakeBlock, unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK},
		{"MAKE_SYM", AccessFSMakeSym, unix.LANDLOCK_ACCESS_FS_MAKE_SYM},
		{"REFER", AccessFSRefer, unix.LANDLOCK_ACCESS_FS_REFER},
		{"TRUNCATE", AccessFSTruncate, unix.LANDLOCK_ACCESS_FS_TRUNCATE},
		{"IOCTL_DEV", AccessFSIoctlDev, unix.LANDLOCK_ACCESS_FS_IOCTL_DEV},
		{"SCOPE_ABSTRACT_UNIX_SOCKET", scopeAbstractUnixSocket, unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET},
		{"SCOPE_SIGNAL", scopeSignal, unix.LANDLOCK_SCOPE_SIGNAL},
		{"CREATE_RULESET_VERSION", createRulesetVersion, unix.LANDLOCK_CREATE_RULESET_VERSION},
		{"RULE_PATH_BENEATH", rulePathBeneath, unix.LANDLOCK_RULE_PATH_BENEATH},
	}
	for _, p := range pairs {
		if p.ours != p.sys {
			t.Errorf("%s: ours %#x, x/sys/unix %#x", p.name, p.ours, p.sys)
		}
	}
	// The kernel reads a packed 12-byte landlock_path_beneath_attr.
	var pb pathBeneathAttr
	if off := unsafe.Offsetof(pb.parentFd); off != 8 {
		t.Errorf("parent_fd offset %d, want 8", off)
	}
	if size := unsafe.Sizeof(rulesetAttr{}); size != rulesetAttrSize(6) {
		t.Errorf("rulesetAttr size %d, want %d", size, rulesetAttrSize(6))
	}
}

func TestRestrictFilesystem(t *testing.T) {
	abi := requireABI(t)
	root := layout(t)
	rep := runHelper(t, "fs", root)
	if rep.Err != "" {
		t.Fatalf("RestrictThread: %s", rep.Err)
	}
	if rep.Applied.ABI != abi || rep.Applied.HandledFS != handledFS(abi) || rep.Applied.Scoped {
		t.Errorf("Applied = %v, want abi=%d fs=%s scoped=false", rep.Applied, abi, FormatAccessFS(handledFS(abi)))
	}
	if want := []string{filepath.Join(root, "missing")}; !slices.Equal(rep.Applied.Skipped, want) {
		t.Errorf("Skipped = %q, want %q", rep.Applied.Skipped, want)
	}

	ok := []string{"ok"}
	denied := []string{"EACCES"}
	crossDenied := []string{"EXDEV", "EACCES"}
	truncateRO, reparentRW := denied, ok
	if abi < 3 {
		truncateRO = ok // truncate is not handled before ABI 3
	}
	if abi < 2 {
		reparentRW = []string{"EXDEV"} // ABI 1 denies every reparenting
	}
	checkResults(t, rep, map[string][]string{
		"read_ro":      ok,
		"readdir_ro":   ok,
		"read_outside": denied,
		"readdir_root": denied,
		"write_ro":     denied,
		"create_ro":    denied,
		"mkdir_ro":     denied,
		"mkfifo_ro":    denied,
		"symlink_ro":   denied,
		"remove_ro":    denied,
		"rmdir_ro":     denied,
		"rename_in_ro": denied,
		"truncate_ro":  truncateRO,

		"create_rw":        ok,
		"append_rw":        ok,
		"mkdir_rw":         ok,
		"symlink_rw":       ok,
		"truncate_rw":      ok,
		"rename_in_rw":     ok,
		"rename_rw_subdir": reparentRW,
		"link_in_rw":       ok,
		"remove_rw":        ok,
		"rmdir_rw":         ok,

		"link_rw_to_ro":   crossDenied,
		"rename_rw_to_ro": crossDenied,
		"rename_ro_to_rw": crossDenied,

		"file_rule_write":    ok,
		"file_rule_read":     ok,
		"file_rule_truncate": ok,
		"file_rule_sibling":  denied,

		"exec_true":             ok,
		"child_sh":              ok,
		"other_thread_write_ro": ok,
	})

	// Check from outside the sandbox what the restricted processes left behind.
	if b, err := os.ReadFile(filepath.Join(root, "rw/f")); err != nil || string(b) != "x\n" {
		t.Errorf("rw/f written by the forked shell: %q, %v; want \"x\\n\"", b, err)
	}
	for _, name := range []string{"ro/g", "ro/new", "ro/d", "ro/linked", "ro/moved", "rw/stolen", "devnull2"} {
		if _, err := os.Lstat(filepath.Join(root, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists after a denied operation (err %v)", name, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "ro/file")); err != nil || (abi >= 3 && string(b) != "hello") {
		t.Errorf("ro/file = %q, %v; want it untouched", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "devnull")); err != nil || string(b) != "" {
		t.Errorf("devnull = %q, %v; want written then truncated", b, err)
	}
}

// TestRestrictRootReadOnly is the typical sandbox shape: "/" read-only, a few writable places
// including a device file.
func TestRestrictRootReadOnly(t *testing.T) {
	abi := requireABI(t)
	root := layout(t)
	rep := runHelper(t, "rootro", root)
	if rep.Err != "" {
		t.Fatalf("RestrictThread: %s", rep.Err)
	}
	ioctlOutside := []string{"EACCES"}
	if abi < 5 {
		ioctlOutside = []string{"ENOTTY"} // device ioctls are not handled before ABI 5
	}
	checkResults(t, rep, map[string][]string{
		"exec_true":      {"ok"},
		"read_ro":        {"ok"},
		"create_ro":      {"EACCES"},
		"create_rw":      {"ok"},
		"write_dev_null": {"ok"},
		"write_dev_zero": {"EACCES"},
		"ioctl_dev_null": {"ENOTTY"},
		"ioctl_dev_zero": ioctlOutside,
	})
}

// TestRestrictWrites: a write-only layer confines every change to its places and leaves reads,
// listing and execution alone.
func TestRestrictWrites(t *testing.T) {
	abi := requireABI(t)
	root := layout(t)
	rep := runHelper(t, "writes", root)
	if abi < MinWritesABI {
		if !rep.ErrIs["ErrUnsupported"] {
			t.Fatalf("PrepareWrites on ABI %d: error %q, want ErrUnsupported", abi, rep.Err)
		}
		return
	}
	if rep.Err != "" {
		t.Fatalf("PrepareWrites + RestrictThread: %s", rep.Err)
	}
	if want := handledFS(abi) &^ (AccessFSExecute | AccessFSReadFile | AccessFSReadDir | AccessFSIoctlDev); rep.Applied.HandledFS != want || rep.Applied.Scoped {
		t.Errorf("Applied = %v, want fs=%s scoped=false", rep.Applied, FormatAccessFS(want))
	}
	ok, denied := []string{"ok"}, []string{"EACCES"}
	checkResults(t, rep, map[string][]string{
		"read_outside": ok,
		"readdir_root": ok,
		"exec_true":    ok,
		"write_ro":     denied,
		"create_ro":    denied,
		"mkdir_ro":     denied,
		"mkfifo_ro":    denied,
		"symlink_ro":   denied,
		"remove_ro":    denied,
		"rmdir_ro":     denied,
		"rename_in_ro": denied,
		"truncate_ro":  denied,

		"create_rw":        ok,
		"append_rw":        ok,
		"mkdir_rw":         ok,
		"truncate_rw":      ok,
		"rename_rw_subdir": ok,
		"link_in_rw":       ok,
		"remove_rw":        ok,
		"rmdir_rw":         ok,

		"link_rw_to_ro": denied,
		// only refer is missing at the source: the kernel's "move it by copying" answer
		"link_ro_to_rw":   {"EXDEV"},
		"rename_rw_to_ro": denied,
		"rename_ro_to_rw": denied,
		"rename_place":    denied,

		"file_rule_write":    ok,
		"file_rule_truncate": ok,
		"file_rule_remove":   denied,

		"child_sh": ok,
	})
	for _, name := range []string{"ro/new", "ro/d", "ro/linked", "ro/moved", "rw/stolen", "rw/stolen-link", "rw2", "ro/g"} {
		if _, err := os.Lstat(filepath.Join(root, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists after a denied operation (err %v)", name, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "ro/file")); err != nil || string(b) != "hello" {
		t.Errorf("ro/file = %q, %v; want it untouched", b, err)
	}
}

func TestScope(t *testing.T) {
	abi := requireABI(t)
	root := layout(t)
	name := fmt.Sprintf("airlock-landlock-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatalf("listen on abstract socket: %v", err)
	}
	t.Cleanup(func() { ln.Close() })

	for _, scope := range []bool{false, true} {
		scenario := map[bool]string{false: "noscope", true: "scope"}[scope]
		t.Run(scenario, func(t *testing.T) {
			rep := runHelper(t, scenario, root, envAbstract+"="+name)
			if rep.Err != "" {
				t.Fatalf("RestrictThread: %s", rep.Err)
			}
			wantScoped := scope && abi >= 6
			if rep.Applied.Scoped != wantScoped {
				t.Errorf("Applied.Scoped = %t, want %t (abi %d)", rep.Applied.Scoped, wantScoped, abi)
			}
			outside := []string{"ok"}
			if wantScoped {
				outside = []string{"EPERM"}
			}
			checkResults(t, rep, map[string][]string{
				"kill_parent":      outside,
				"connect_abstract": outside,
				"kill_own_child":   {"ok"},
			})
		})
	}
	if abi < 6 {
		t.Logf("ABI %d has no scoping: checked that Scope is reported as not applied", abi)
	}
}

func TestRestrictErrorsLeaveThreadUnrestricted(t *testing.T) {
	requireABI(t)
	tests := []struct {
		scenario string
		errIs    string
	}{
		{"missing-rw", "ErrNotExist"},
		{"no-nnp", "ErrNoNewPrivs"},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			root := layout(t)
			rep := runHelper(t, tt.scenario, root)
			if rep.Err == "" || !rep.ErrIs[tt.errIs] {
				t.Fatalf("RestrictThread error = %q (is %v), want one matching %s", rep.Err, rep.ErrIs, tt.errIs)
			}
			if rep.Applied.ABI != 0 || rep.Applied.HandledFS != 0 {
				t.Errorf("Applied = %v on error, want zero", rep.Applied)
			}
			checkResults(t, rep, map[string][]string{"create_ro": {"ok"}})
		})
	}
}

func TestRelativePathRejected(t *testing.T) {
	// Fails in checkPaths, before any system call, so it is safe to run in the test process.
	_, err := RestrictThread(Config{ReadOnly: []string{"usr"}})
	if err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Fatalf("RestrictThread(relative) = %v, want a not-absolute error", err)
	}
}
