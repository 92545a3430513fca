//go:build linux

// Command guest is PID 1 of the cgroup v2 test VM (see ../vm_test.go).
//
// From the initramfs it loads the kernel modules it was given, mounts the
// host's root file system read-only over virtio-9p ("hostroot") and the
// test's work directory ("vmwork", holding the airlock binary and test
// binaries) at /run/vm, puts tmpfs on the places that must be writable,
// mounts cgroup2 at /sys/fs/cgroup the way a systemd host does (nsdelegate,
// controllers enabled at the root, PID 1 in init.scope) and switches root.
// It then runs the checks in a child process (itself, argv[1] "checks", in
// system.slice/airlock-vmcheck.service), reaps orphans meanwhile, and
// powers the machine off.
//
// Every check writes one line to the second serial port (/dev/ttyS1):
//
//	AIRLOCKVM {"check":"memory","status":"pass","ms":1234,"detail":"..."}
//
// status is pass, fail or skip. The last line is {"check":"done",...}.
// Diagnostics go to the console (ttyS0).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	// The guest has no disk of its own: sandboxes' disk images go on a
	// tmpfs, which airlock refuses unless told (diskimg.InMemoryEnv).
	_ = os.Setenv("AIRLOCK_DISKS_IN_MEMORY", "1")
	if len(os.Args) > 1 && os.Args[1] == "checks" {
		os.Exit(checks())
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "guest: this is the test VM's init; it only runs as PID 1")
		os.Exit(2)
	}
	pid1()
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "vm-init: "+format+"\n", args...)
}

// --- PID 1 -----------------------------------------------------------------

func pid1() {
	err := setup()
	if err != nil {
		logf("setup failed: %v", err)
		report(result{Check: "boot", Status: "fail", Detail: err.Error()})
		report(result{Check: "done", Status: "fail"})
		poweroff()
	}
	// (our file is in the initramfs, out of reach after the switch)
	const self = "/proc/self/exe"
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "TERM=dumb", "LANG=C.UTF-8",
	}
	p, err := os.StartProcess(self, []string{"vmcheck", "checks"}, &os.ProcAttr{
		Dir: "/", Env: env, Files: []*os.File{devNull(), os.Stdout, os.Stderr},
	})
	if err != nil {
		logf("start checks: %v", err)
		report(result{Check: "done", Status: "fail", Detail: err.Error()})
		poweroff()
	}
	go watchdog(p.Pid)
	// Reap everything (orphans are reparented to us) until the checks end.
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			logf("wait: %v", err)
			break
		}
		if pid == p.Pid {
			logf("checks exited: %v", exitString(ws))
			break
		}
	}
	poweroff()
}

// watchdog ends a run that hangs, after printing what every process is
// doing, so that the host gets a diagnosis instead of a bare timeout. The
// deadline (seconds since boot) is airlockvm.deadline= on the kernel
// command line.
func watchdog(checker int) {
	deadline := 300
	for _, f := range strings.Fields(readTrim("/proc/cmdline")) {
		if v, ok := strings.CutPrefix(f, "airlockvm.deadline="); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				deadline = n
			}
		}
	}
	var up float64
	fmt.Sscanf(readTrim("/proc/uptime"), "%f", &up)
	time.Sleep(time.Duration(float64(deadline)-up) * time.Second)
	logf("watchdog: still running after %ds; processes:", deadline)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		d := "/proc/" + e.Name()
		st := readTrim(d + "/stat")
		if i := strings.LastIndexByte(st, ')'); i >= 0 && len(st) > i+3 {
			st = st[i+2 : i+3]
		}
		cmd := strings.ReplaceAll(readTrim(d+"/cmdline"), "\x00", " ")
		if cmd == "" {
			continue // kernel thread
		}
		logf("  %s %s wchan=%s cg=%s %s", e.Name(), st, readTrim(d+"/wchan"), readTrim(d+"/cgroup"), clip(cmd, 120))
	}
	for _, f := range []string{"/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io"} {
		logf("  %s: %s", f, strings.ReplaceAll(readTrim(f), "\n", "; "))
	}
	report(result{Check: "watchdog", Status: "fail", Detail: fmt.Sprintf("checks still running %ds after boot (see the console)", deadline)})
	report(result{Check: "done", Status: "fail"})
	_ = unix.Kill(checker, unix.SIGKILL)
	poweroff()
}

func exitString(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return "status " + strconv.Itoa(ws.ExitStatus())
}

func devNull() *os.File {
	f, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return f
}

func poweroff() {
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	// If that failed, exiting makes the kernel panic, and panic=-1 with
	// qemu's -no-reboot ends the VM as well.
	os.Exit(1)
}

func setup() error {
	for _, d := range []string{"/dev", "/proc", "/sys", "/newroot"} {
		_ = os.MkdirAll(d, 0o755)
	}
	if err := unix.Mount("devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID, "mode=0755"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	if c, err := os.OpenFile("/dev/console", os.O_RDWR, 0); err == nil {
		for _, fd := range []int{0, 1, 2} {
			_ = unix.Dup2(int(c.Fd()), fd)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /sys: %w", err)
	}
	openResults()
	if err := loadModules("/modules"); err != nil {
		return err
	}
	if err := mount9p("hostroot", "/newroot"); err != nil {
		return err
	}
	nr := func(p string) string { return filepath.Join("/newroot", p) }
	if err := unix.Mount("tmpfs", nr("/run"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount /run: %w", err)
	}
	if err := os.Mkdir(nr("/run/vm"), 0o755); err != nil {
		return err
	}
	if err := mount9p("vmwork", nr("/run/vm")); err != nil {
		return err
	}
	for _, m := range []string{"/dev", "/proc", "/sys"} {
		if err := unix.Mount(m, nr(m), "", unix.MS_MOVE, ""); err != nil {
			return fmt.Errorf("move %s: %w", m, err)
		}
	}
	type mnt struct{ src, dst, fstype, data string }
	for _, m := range []mnt{
		{"tmpfs", "/tmp", "tmpfs", "mode=1777"},
		{"tmpfs", "/var/tmp", "tmpfs", "mode=1777"},
		{"tmpfs", "/root", "tmpfs", "mode=0700"},
		{"tmpfs", "/dev/shm", "tmpfs", "mode=1777"},
		{"devpts", "/dev/pts", "devpts", "newinstance,ptmxmode=0666,mode=0620"},
		// as systemd mounts it on a pure v2 host
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", "nsdelegate,memory_recursiveprot"},
	} {
		_ = os.MkdirAll(nr(m.dst), 0o755)
		if err := unix.Mount(m.src, nr(m.dst), m.fstype, unix.MS_NOSUID|unix.MS_NODEV, m.data); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dst, err)
		}
	}
	// switch_root: the 9p mount becomes /.
	if err := unix.Chdir("/newroot"); err != nil {
		return err
	}
	if err := unix.Mount(".", "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move newroot to /: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	// A systemd host: controllers enabled at the root, processes only in
	// leaves (PID 1 in init.scope, services under system.slice).
	const cg = "/sys/fs/cgroup"
	if err := writeFile(cg+"/cgroup.subtree_control", "+cpu +io +memory +pids"); err != nil {
		return err
	}
	for _, d := range []string{"init.scope", "system.slice", "system.slice/airlock-vmcheck.service"} {
		if err := os.Mkdir(filepath.Join(cg, d), 0o755); err != nil {
			return err
		}
	}
	if err := writeFile(cg+"/init.scope/cgroup.procs", "1"); err != nil {
		return err
	}
	_ = unix.Sethostname([]byte("airlock-vm"))
	// Swap, so that memory.swap.max=0 is what stops a hog from swapping
	// (zram: compressed RAM, no disk needed).
	if !strings.Contains(readTrim("/proc/cmdline"), "airlockvm.noswap") {
		if err := setupSwap(); err != nil {
			logf("no swap: %v", err)
		}
	}
	return nil
}

func setupSwap() error {
	logf("swap: disksize")
	if err := writeFile("/sys/block/zram0/disksize", "256M"); err != nil {
		return err
	}
	for _, c := range [][]string{{"/usr/sbin/mkswap", "/dev/zram0"}, {"/usr/sbin/swapon", "/dev/zram0"}} {
		logf("swap: %v", c)
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", c[0], err, out)
		}
	}
	logf("swap: on")
	return nil
}

func writeFile(path, data string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(data))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s %q: %w", path, data, err)
	}
	return nil
}

func loadModules(dir string) error {
	order, err := os.ReadFile(filepath.Join(dir, "order"))
	if err != nil {
		return fmt.Errorf("module list: %w", err)
	}
	for _, name := range strings.Fields(string(order)) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		switch {
		case err == nil, err == unix.EEXIST:
		case name == "crc32c-intel.ko":
			// needs SSE4.2; crc32c_generic does the job without it
			logf("optional module %s: %v", name, err)
		default:
			return fmt.Errorf("load module %s: %w", name, err)
		}
	}
	return nil
}

func mount9p(tag, dir string) error {
	// The device may still be probing right after its driver loaded.
	var err error
	for i := 0; i < 100; i++ {
		err = unix.Mount(tag, dir, "9p", unix.MS_RDONLY|unix.MS_NODEV,
			"trans=virtio,version=9p2000.L,msize=512000,cache=loose,access=any")
		if err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("mount 9p %s on %s: %w", tag, dir, err)
}

// --- results -----------------------------------------------------------------

type result struct {
	Check  string `json:"check"`
	Status string `json:"status"` // pass, fail, skip
	MS     int64  `json:"ms"`
	Detail string `json:"detail,omitempty"`
}

var (
	resMu  sync.Mutex
	resOut *os.File
)

// openResults opens the second serial port, raw (no \r added).
func openResults() {
	f, err := os.OpenFile("/dev/ttyS1", os.O_WRONLY|unix.O_NOCTTY, 0)
	if err != nil {
		logf("open /dev/ttyS1: %v (results go to the console)", err)
		return
	}
	if t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
		t.Oflag &^= unix.OPOST
		_ = unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t)
	}
	resOut = f
}

func report(r result) {
	b, _ := json.Marshal(r)
	line := "AIRLOCKVM " + string(b) + "\n"
	resMu.Lock()
	defer resMu.Unlock()
	fmt.Fprint(os.Stderr, line)
	if resOut != nil {
		_, _ = resOut.WriteString(line)
	}
}

// --- the checks -----------------------------------------------------------------

const (
	cgRoot    = "/sys/fs/cgroup"
	airlock   = "/run/vm/airlock"
	stateDir  = "/run/airlock" // airlock's defaults for the one-shot runs
	cgParent  = "airlock"
	dataDir   = "/run/airlock-data"
	uidBase   = 0x10000000 // native.UIDRangeStart
	uidRanges = 16384 * 65536
)

func checks() int {
	openResults()
	// Run as a service of a systemd host would: in a leaf of system.slice.
	if err := writeFile(cgRoot+"/system.slice/airlock-vmcheck.service/cgroup.procs", "0"); err != nil {
		report(result{Check: "boot", Status: "fail", Detail: err.Error()})
		report(result{Check: "done", Status: "fail"})
		return 1
	}
	up, _ := os.ReadFile("/proc/uptime")
	var uname unix.Utsname
	_ = unix.Uname(&uname)
	report(result{Check: "boot", Status: "pass", Detail: fmt.Sprintf("kernel %s, uptime %s s",
		unix.ByteSliceToString(uname.Release[:]), strings.Fields(string(up) + " ?")[0])})

	// Kernel command line: airlockvm.only=a,b runs only those checks (env
	// is always run), airlockvm.repeat=N runs them N times (to chase a
	// flake).
	only, repeat := map[string]bool{}, 1
	for _, f := range strings.Fields(readTrim("/proc/cmdline")) {
		if v, ok := strings.CutPrefix(f, "airlockvm.only="); ok {
			for _, c := range strings.Split(v, ",") {
				only[c] = true
			}
		}
		if v, ok := strings.CutPrefix(f, "airlockvm.repeat="); ok {
			repeat, _ = strconv.Atoi(v)
		}
	}
	failed := 0
	run := func(name string, fn func() (string, error)) {
		if len(only) > 0 && !only[name] && name != "env" {
			return
		}
		t0 := time.Now()
		detail, err := fn()
		r := result{Check: name, Status: "pass", MS: time.Since(t0).Milliseconds(), Detail: detail}
		if errors.Is(err, errSkip) {
			r.Status = "skip"
		} else if err != nil {
			r.Status = "fail"
			r.Detail = strings.TrimSpace(err.Error() + "; " + detail)
			failed++
		}
		report(r)
	}
	run("env", checkEnv)
	for i := 0; i < max(repeat, 1); i++ {
		run("gotest-cgroups", checkGoTest)
		run("run-basic", checkBasic)
		run("leftovers-basic", leftovers)
		run("swap-control", checkSwapControl)
		run("memory", checkMemory)
		run("leftovers-memory", leftovers)
		run("pids", checkPids)
		run("leftovers-pids", leftovers)
		run("cpu", checkCPU)
		run("leftovers-cpu", leftovers)
		run("gotest-native", checkGoTestNative)
		run("daemon", checkDaemon)
		run("reap-after-crash", checkReapAfterCrash)
		run("reap", checkReap)
	}
	status := "pass"
	if failed > 0 {
		status = "fail"
	}
	report(result{Check: "done", Status: status, Detail: fmt.Sprintf("%d failed", failed)})
	return 0
}

var errSkip = errors.New("skipped")

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// checkEnv: a pure cgroup v2 system, as the kernel command line asked.
func checkEnv() (string, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	var v2, v1 []string
	for _, line := range strings.Split(string(mi), "\n") {
		_, after, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f := strings.Fields(line)
		switch strings.Fields(after)[0] {
		case "cgroup2":
			v2 = append(v2, f[4])
		case "cgroup":
			v1 = append(v1, f[4])
		}
	}
	ctrls := readTrim(cgRoot + "/cgroup.controllers")
	sub := readTrim(cgRoot + "/cgroup.subtree_control")
	swaps := strings.Split(readTrim("/proc/swaps"), "\n")
	detail := fmt.Sprintf("cgroup2 mounts %v, v1 mounts %v, controllers %q, subtree_control %q, swap %q",
		v2, v1, ctrls, sub, swaps[len(swaps)-1])
	if len(v1) > 0 || len(v2) != 1 || v2[0] != cgRoot {
		return detail, errors.New("not a pure cgroup v2 system")
	}
	if len(swaps) < 2 {
		return detail, errors.New("no swap device (zram)")
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if !strings.Contains(" "+sub+" ", " "+c+" ") {
			return detail, fmt.Errorf("%s not enabled at the root", c)
		}
	}
	return detail, nil
}

// checkGoTest runs the cgroups package's tests (built on the host with
// go test -c) here, where its real v2 tests do not skip. Each test's
// outcome is reported as its own line, "go:TestName".
func checkGoTest() (string, error) {
	return goTest("cgroups.test", "go:", nil)
}

// checkGoTestNative runs the native backend's conformance suite and its
// resource-limit escape tests here. Their TestMain builds the hostile probe
// with "go build"; the guest has no usable Go build cache, so a stand-in
// go on PATH hands it the probe built on the host from the same source.
func checkGoTestNative() (string, error) {
	const shimDir = "/run/vm-gobin"
	if err := os.MkdirAll(shimDir, 0o755); err != nil {
		return "", err
	}
	shim := "#!/bin/sh\n# test/vm: the probe, prebuilt on the host, for 'go build -o OUT ./testdata/probe'\n" +
		"out=; while [ $# -gt 0 ]; do [ \"$1\" = -o ] && { out=$2; shift; }; shift; done\n" +
		"exec cp /run/vm/probe \"$out\"\n"
	if err := os.WriteFile(shimDir+"/go", []byte(shim), 0o755); err != nil {
		return "", err
	}
	// The cgroup-limit ones, but not Memory: under emulation its probe can
	// spend its 20 s timeout in reclaim before the OOM kill (the memory
	// check and the cgroups tests cover OOM kills). Not Output, NoFile,
	// Disk: no cgroups there, and slow under emulation.
	run := "^(TestConformance|TestEscapeRes(ForkBomb|CPU))$"
	for _, f := range strings.Fields(readTrim("/proc/cmdline")) {
		if v, ok := strings.CutPrefix(f, "airlockvm.nativerun="); ok {
			run = v
		}
	}
	// one test at a time: under emulation, parallel tests starve each
	// other past their timeouts
	return goTest("native.test", "native:", []string{"PATH=" + shimDir + ":" + os.Getenv("PATH")}, "-test.run="+run, "-test.parallel=1")
}

func goTest(name, prefix string, env []string, args ...string) (string, error) {
	bin := "/run/vm/" + name
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no test binary: %w", err)
	}
	// In a group of its own, so that whatever it leaves running can be
	// found and killed; its output goes to the console as it runs.
	tg := filepath.Join(cgRoot, "gotest")
	if err := os.Mkdir(tg, 0o755); err != nil {
		return "", err
	}
	fd, err := unix.Open(tg, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-test.v", "-test.count=1", "-test.timeout=140s"}, args...)...)
	cmd.Dir = "/tmp"
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
	cmd.Stderr = cmd.Stdout
	err = cmd.Run()
	unix.Close(fd)
	out := buf.Bytes()
	// Anything left in its group or in a test group of its own making is
	// a leak (or a test killed by its timeout).
	var leaks []string
	dirs, _ := filepath.Glob(filepath.Join(cgRoot, "airlock-test-*"))
	for _, d := range append(dirs, tg) {
		if pids := readTrim(filepath.Join(d, "cgroup.procs")); pids != "" || d != tg {
			leaks = append(leaks, fmt.Sprintf("%s [%s]", d, strings.ReplaceAll(pids, "\n", " ")))
		}
		_ = writeFile(filepath.Join(d, "cgroup.kill"), "1")
	}
	time.Sleep(100 * time.Millisecond)
	for i := len(dirs) - 1; i >= 0; i-- {
		sub, _ := filepath.Glob(filepath.Join(dirs[i], "*", "cgroup.procs"))
		for _, s := range sub {
			_ = unix.Rmdir(filepath.Dir(s))
		}
		_ = unix.Rmdir(dirs[i])
	}
	_ = unix.Rmdir(tg)
	re := regexp.MustCompile(`(?m)^--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)
	counts := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		secs, _ := strconv.ParseFloat(m[3], 64)
		st := strings.ToLower(m[1])
		counts[st]++
		r := result{Check: prefix + m[2], Status: st, MS: int64(secs * 1000), Detail: testLog(string(out), m[2])}
		report(r)
	}
	detail := fmt.Sprintf("%d passed, %d failed, %d skipped", counts["pass"], counts["fail"], counts["skip"])
	if err != nil {
		return detail, fmt.Errorf("%s: %v: %s", name, err, lastLines(string(out), 15))
	}
	if len(leaks) > 0 {
		return detail, fmt.Errorf("%s left groups or processes: %s", name, strings.Join(leaks, "; "))
	}
	return detail, nil
}

// testLog returns the log lines of one test from go test -v output.
func testLog(out, name string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "=== RUN   "+name):
			in = true
			continue
		case strings.HasPrefix(line, "=== "), strings.HasPrefix(line, "--- "):
			in = false
		}
		if in && b.Len() < 1500 && strings.TrimSpace(line) != "" {
			if b.Len() > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(strings.TrimSpace(line))
		}
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// runResult is one finished airlock command.
type runResult struct {
	code           int
	stdout, stderr string
	dur            time.Duration
}

func (r runResult) String() string {
	return fmt.Sprintf("exit %d after %v; stdout %q; stderr %q", r.code, r.dur.Round(time.Millisecond),
		clip(r.stdout, 300), clip(r.stderr, 600))
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func airlockCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, airlock, args...)
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+stateDir, "AIRLOCK_DATA_DIR="+dataDir)
	cmd.Dir = "/"
	return cmd
}

// airlockRun runs "airlock run ARGS" to completion.
func airlockRun(args ...string) (runResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return finish(startRun(ctx, args...))
}

type started struct {
	cmd            *exec.Cmd
	stdout, stderr *bytes.Buffer
	t0             time.Time
	err            error
}

func startRun(ctx context.Context, args ...string) *started {
	cmd := airlockCmd(ctx, append([]string{"run"}, args...)...)
	s := &started{cmd: cmd, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, t0: time.Now()}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	s.err = cmd.Start()
	return s
}

func finish(s *started) (runResult, error) {
	if s.err != nil {
		return runResult{}, s.err
	}
	err := s.cmd.Wait()
	r := runResult{stdout: s.stdout.String(), stderr: s.stderr.String(), dur: time.Since(s.t0)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		return r, fmt.Errorf("airlock run: %v", err)
	}
	return r, nil
}

// checkBasic: a plain command runs; it sees itself at the root of its own
// cgroup namespace.
func checkBasic() (string, error) {
	r, err := airlockRun("--", "sh", "-c", "echo hello; cat /proc/self/cgroup")
	if err != nil {
		return r.String(), err
	}
	if r.code != 0 || !strings.Contains(r.stdout, "hello") {
		return r.String(), errors.New("want exit 0 and hello")
	}
	// the root of its own cgroup namespace, or the commands' pids group
	if !regexp.MustCompile(`(?m)^0::/(cmds)?$`).MatchString(r.stdout) {
		return r.String(), errors.New("want /proc/self/cgroup to read 0::/ (own cgroup namespace on v2)")
	}
	return r.String(), nil
}

// hog grows a buffer until killed (tail keeps a line without a newline
// whole): 128 MiB of zero pages, which the zram swap stores almost for free.
const hog = "head -c 128M /dev/zero | tail >/dev/null"

// checkSwapControl: without a swap limit, a group's memory.max alone does
// not stop the hog: it swaps. This is what memory.swap.max=0 must prevent.
func checkSwapControl() (string, error) {
	g := filepath.Join(cgRoot, "swap-control")
	if err := os.Mkdir(g, 0o755); err != nil {
		return "", err
	}
	defer unix.Rmdir(g)
	// (a smaller hog and limit than the memory check's: what goes to
	// swap takes a while under emulation)
	if err := writeFile(g+"/memory.max", strconv.Itoa(32<<20)); err != nil {
		return "", err
	}
	fd, err := unix.Open(g, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", strings.Replace(hog, "128M", "64M", 1))
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	done := make(chan struct{})
	var out []byte
	var runErr error
	go func() { out, runErr = cmd.CombinedOutput(); close(done) }()
	peak, _ := sampleGroup(done, func() string { return g }, "memory.current", "memory.swap.current")
	unix.Close(fd)
	events := strings.ReplaceAll(readTrim(g+"/memory.events"), "\n", ", ")
	detail := fmt.Sprintf("memory.max %s, memory.swap.max %s, peaks %v, memory.events {%s}, exit %v %q",
		readTrim(g+"/memory.max"), readTrim(g+"/memory.swap.max"), peak, events, runErr, clip(string(out), 200))
	if runErr != nil {
		return detail, errors.New("want the hog to survive by swapping")
	}
	if peak["memory.swap.current"] == 0 {
		return detail, errors.New("want the hog to have used swap")
	}
	return detail, nil
}

// checkMemory: a memory hog under --memory 64M is OOM-killed (it may not
// swap) and airlock names the memory limit.
func checkMemory() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := startRun(ctx, "--memory", "64M", "--", "sh", "-c", hog)
	var (
		r    runResult
		err  error
		done = make(chan struct{})
	)
	go func() { r, err = finish(s); close(done) }()
	peak, last := sampleGroup(done, sandboxGroup, "memory.current", "memory.swap.current")
	detail := fmt.Sprintf("sampled peaks %v, memory.max %s, memory.swap.max %s; %s",
		peak, last["memory.max"], last["memory.swap.max"], r)
	if err != nil {
		return detail, err
	}
	var errs []error
	if !strings.Contains(r.stderr, "memory limit") {
		errs = append(errs, errors.New("want airlock to report the memory limit"))
	}
	if r.code != 128+9 {
		errs = append(errs, errors.New("want the hog SIGKILLed (exit 137)"))
	}
	if last["memory.max"] != strconv.Itoa(64<<20) || last["memory.swap.max"] != "0" {
		errs = append(errs, errors.New("want memory.max 64 MiB and memory.swap.max 0"))
	}
	if peak["memory.swap.current"] != 0 {
		errs = append(errs, errors.New("the sandbox used swap"))
	}
	return detail, errors.Join(errs...)
}

// sampleGroup watches the group dir() names until done: the highest
// value of each numeric file, and the last value of memory.max,
// memory.swap.max and pids.max.
func sampleGroup(done <-chan struct{}, dir func() string, files ...string) (map[string]int64, map[string]string) {
	peak, last := map[string]int64{}, map[string]string{}
	for {
		select {
		case <-done:
			return peak, last
		default:
		}
		if g := dir(); g != "" {
			for _, f := range files {
				if n, err := strconv.ParseInt(readTrim(filepath.Join(g, f)), 10, 64); err == nil && n > peak[f] {
					peak[f] = n
				}
			}
			for _, f := range []string{"memory.max", "memory.swap.max", "pids.max", "cmds/pids.max"} {
				if v := readTrim(filepath.Join(g, f)); v != "" {
					last[f] = v
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bomb is a bounded fork bomb: 63 shells that each fork two and wait, all
// alive at once; it ends by itself (dash does not retry a failed fork, it
// fails that subshell).
const bomb = `b() { if [ "$1" -gt 0 ]; then b $(($1-1)) & b $(($1-1)) & fi; sleep 2; wait; }; b 5; echo bomb-done`

// checkPids: a fork bomb under --pids 32 is stopped (forks fail, the
// command ends on its own) and airlock names the process limit. While it
// runs, the sandbox's pids.current is sampled.
func checkPids() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := startRun(ctx, "--pids", "32", "--", "sh", "-c", bomb)
	var (
		r    runResult
		err  error
		done = make(chan struct{})
	)
	go func() { r, err = finish(s); close(done) }()
	peak, last := sampleGroup(done, sandboxGroup, "pids.current", "cmds/pids.current")
	detail := fmt.Sprintf("sampled pids.current peak %d (pids.max %s), commands' group cmds/pids.current peak %d (cmds/pids.max %s); %s",
		peak["pids.current"], last["pids.max"], peak["cmds/pids.current"], last["cmds/pids.max"], r)
	if err != nil {
		return detail, err
	}
	if !strings.Contains(r.stderr, "process limit of 32") {
		return detail, errors.New("want airlock to report the process limit of 32")
	}
	if !strings.Contains(r.stdout, "bomb-done") {
		return detail, errors.New("want the bomb to end by itself")
	}
	return detail, nil
}

// sandboxGroup returns the directory of the (single) sandbox group under
// the one-shot runs' parent, or "".
func sandboxGroup() string {
	ents, err := os.ReadDir(filepath.Join(cgRoot, cgParent))
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if e.IsDir() {
			return filepath.Join(cgRoot, cgParent, e.Name())
		}
	}
	return ""
}

// checkCPU: --cpus 0.5 is cpu.max "50000 100000" in the sandbox's group,
// and a busy loop gets no more than about half a CPU.
func checkCPU() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := startRun(ctx, "--cpus", "0.5", "--timeout", "8s", "--", "sh", "-c", "while :; do :; done")
	var g string
	deadline := time.Now().Add(60 * time.Second)
	for g == "" || readTrim(g+"/cgroup.procs") == "" {
		if time.Now().After(deadline) || s.err != nil {
			r, err := finish(s)
			return r.String(), errors.Join(errors.New("no sandbox group with processes appeared"), err)
		}
		time.Sleep(20 * time.Millisecond)
		g = sandboxGroup()
	}
	cpuMax := readTrim(g + "/cpu.max")
	parentSub := readTrim(filepath.Join(cgRoot, cgParent, "cgroup.subtree_control"))
	// let the loop start, then measure 2 s of wall time
	time.Sleep(1 * time.Second)
	u0, t0 := usageUS(g), time.Now()
	time.Sleep(2 * time.Second)
	u1, t1 := usageUS(g), time.Now()
	stat := strings.ReplaceAll(readTrim(g+"/cpu.stat"), "\n", ", ")
	ratio := float64(u1-u0) / float64(t1.Sub(t0).Microseconds())
	r, err := finish(s)
	detail := fmt.Sprintf("cpu.max %q, parent subtree_control %q, busy loop used %.2f CPUs, cpu.stat {%s}; %s",
		cpuMax, parentSub, ratio, stat, r)
	if err != nil {
		return detail, err
	}
	var errs []error
	if cpuMax != "50000 100000" {
		errs = append(errs, errors.New(`want cpu.max "50000 100000"`))
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if !strings.Contains(" "+parentSub+" ", " "+c+" ") {
			errs = append(errs, fmt.Errorf("%s not enabled for the sandbox groups", c))
		}
	}
	if ratio > 0.65 || ratio < 0.05 {
		errs = append(errs, errors.New("want about 0.5 CPUs for the busy loop"))
	}
	if !strings.Contains(stat, "nr_throttled") || strings.Contains(stat, "nr_throttled 0,") {
		errs = append(errs, errors.New("want the busy loop throttled"))
	}
	if r.code != 124 {
		errs = append(errs, errors.New("want exit 124 (the --timeout)"))
	}
	return detail, errors.Join(errs...)
}

func usageUS(g string) int64 {
	for _, line := range strings.Split(readTrim(g+"/cpu.stat"), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// census is what sandboxes hold on this machine (cf. native.Census), plus
// attached loop devices.
type census struct {
	StateDirs, Cgroups, Processes, Mounts, Loops int
}

func takeCensus(state, parent string) census {
	var c census
	ents, _ := os.ReadDir(filepath.Join(state, "sandboxes"))
	c.StateDirs = len(ents)
	ents, _ = os.ReadDir(filepath.Join(cgRoot, parent))
	for _, e := range ents {
		if e.IsDir() {
			c.Cgroups++
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/status")
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					if uid, err := strconv.Atoi(f[0]); err == nil && uid >= uidBase && uid < uidBase+uidRanges {
						c.Processes++
					}
				}
				break
			}
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		if strings.Contains(line, state+"/") || strings.Contains(line, state+" ") {
			c.Mounts++
		}
	}
	loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	c.Loops = len(loops)
	return c
}

// leftovers: after a run, nothing of it is left (waiting a moment for
// exiting processes to be reaped).
func leftovers() (string, error) {
	return leftoversIn(stateDir, cgParent)
}

func leftoversIn(state, parent string) (string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := takeCensus(state, parent)
		detail := fmt.Sprintf("%+v", c)
		if c == (census{}) {
			return detail, nil
		}
		if time.Now().After(deadline) {
			return detail, errors.New("sandbox leftovers: " + describeLeftovers(state, parent))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func describeLeftovers(state, parent string) string {
	var parts []string
	ents, _ := os.ReadDir(filepath.Join(state, "sandboxes"))
	for _, e := range ents {
		parts = append(parts, "state "+e.Name())
	}
	ents, _ = os.ReadDir(filepath.Join(cgRoot, parent))
	for _, e := range ents {
		if e.IsDir() {
			parts = append(parts, "cgroup "+e.Name()+" procs ["+readTrim(filepath.Join(cgRoot, parent, e.Name(), "cgroup.procs"))+"]")
		}
	}
	loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, l := range loops {
		parts = append(parts, "loop "+readTrim(l))
	}
	return strings.Join(parts, "; ")
}

// checkDaemon: airlock serve reports cgroup v2; a sandbox it creates has
// its limits in its group and pauses with the v2 freezer.
func checkDaemon() (string, error) {
	const (
		sock   = "/run/airlock-serve.sock"
		state  = "/run/airlock-serve"
		data   = "/run/airlock-serve-data"
		parent = "airlock-serve"
	)
	env := append(os.Environ(), "AIRLOCK_STATE_DIR="+state, "AIRLOCK_DATA_DIR="+data,
		"AIRLOCK_CGROUP_PARENT="+parent, "AIRLOCK_SOCKET="+sock)
	var log bytes.Buffer
	srv := exec.Command(airlock, "serve", "--socket", sock)
	srv.Env, srv.Stdout, srv.Stderr, srv.Dir = env, &log, &log, "/"
	if err := srv.Start(); err != nil {
		return "", err
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	stop := func() error {
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-srvDone:
			return nil
		case <-time.After(30 * time.Second):
			_ = srv.Process.Kill()
			<-srvDone
			return errors.New("airlock serve did not stop on SIGTERM")
		}
	}
	cli := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, airlock, append([]string{"sandbox"}, args...)...)
		cmd.Env, cmd.Dir = env, "/"
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	var steps []string
	fail := func(err error) (string, error) {
		serr := stop()
		return strings.Join(steps, "; ") + "; serve log: " + lastLines(log.String(), 10), errors.Join(err, serr)
	}
	var health string
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := cli("health")
		if err == nil {
			health = out
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("daemon not healthy: %v: %s", err, out))
		}
		time.Sleep(200 * time.Millisecond)
	}
	steps = append(steps, "health: "+health)
	if !strings.Contains(health, "cgroup v2") {
		return fail(errors.New("want the daemon to report cgroup v2"))
	}
	id, err := cli("create", "--memory", "96M", "--pids", "48", "--cpus", "1.5")
	steps = append(steps, "create: "+id)
	if err != nil {
		return fail(fmt.Errorf("create: %v", err))
	}
	g := filepath.Join(cgRoot, parent, id)
	lim := fmt.Sprintf("memory.max %s, memory.swap.max %s, cpu.max %s", readTrim(g+"/memory.max"),
		readTrim(g+"/memory.swap.max"), readTrim(g+"/cpu.max"))
	steps = append(steps, lim)
	if lim != "memory.max 100663296, memory.swap.max 0, cpu.max 150000 100000" {
		return fail(errors.New("want the sandbox's limits in its group"))
	}
	get, err := cli("get", id)
	if err != nil || !regexp.MustCompile(`(?m)^Cgroup:\s+v2\s*$`).MatchString(get) {
		steps = append(steps, "get: "+get)
		return fail(fmt.Errorf("want get to show Cgroup v2 (%v)", err))
	}
	// On v2 the agent shares the sandbox's group with the commands: an OOM
	// kill or a fork bomb must take the command, never the agent.
	out, _ := cli("exec", id, "--", "sh", "-c", hog)
	steps = append(steps, "exec hog: "+clip(out, 200))
	if !strings.Contains(out, "memory limit") {
		return fail(errors.New("want the hog's exec to report the memory limit"))
	}
	base := readPids(g) // the agent's own tasks, when it shares the group
	out, _ = cli("exec", id, "--", "sh", "-c", bomb)
	steps = append(steps, "exec bomb: "+clip(lastLines(out, 2), 200))
	if !strings.Contains(out, "process limit of 48") || !strings.Contains(out, "bomb-done") {
		return fail(errors.New("want the bomb's exec to end and report the process limit of 48"))
	}
	// A second bomb in the same sandbox must be reported too. Without a
	// commands' pids group of its own (dir cmds, as on v1), airlock can only
	// tell a hit from pids.peak, a high watermark the first bomb already
	// set: a known v2 bug while airlock makes no such group on v2; once it
	// does, a miss here is a failure.
	hasSub := false
	if fi, err := os.Stat(filepath.Join(g, "cmds")); err == nil && fi.IsDir() {
		hasSub = true
	}
	// (twice: a later bomb that happens to peak higher than the first is
	// still reported without such a group)
	missed := 0
	for i := 2; i <= 3; i++ {
		// A subshell of the last bomb whose fork failed exits, and its
		// children, orphaned, sleep on after "bomb-done": let them end
		// first, or this bomb cannot fork at all.
		if hasSub {
			waitPidsBelow(filepath.Join(g, "cmds"), 1, 15*time.Second)
		} else {
			waitPidsBelow(g, base+2, 15*time.Second)
		}
		out, _ = cli("exec", id, "--", "sh", "-c", bomb)
		steps = append(steps, fmt.Sprintf("exec bomb #%d: %s", i, clip(lastLines(out, 2), 200)))
		if !strings.Contains(out, "bomb-done") {
			return fail(fmt.Errorf("want bomb #%d to end by itself", i))
		}
		if !strings.Contains(out, "process limit of 48") {
			missed++
		}
	}
	repeat := result{Check: "daemon-pids-repeat", Status: "pass", Detail: fmt.Sprintf(
		"commands' pids group (cmds) on v2: %v; %d of 2 later bombs not reported", hasSub, missed)}
	if missed > 0 || !hasSub {
		repeat.Status = "fail"
	}
	defer report(repeat)
	if out, err := cli("exec", id, "--", "echo", "agent-alive"); err != nil || !strings.Contains(out, "agent-alive") {
		return fail(fmt.Errorf("the sandbox did not survive its commands' OOM kill and fork bomb: %v: %s", err, out))
	}
	pause := func() error {
		if out, err := cli("pause", id); err != nil {
			return fmt.Errorf("pause: %v: %s", err, out)
		}
		frozen := readTrim(g + "/cgroup.freeze")
		events := strings.ReplaceAll(readTrim(g+"/cgroup.events"), "\n", ", ")
		steps = append(steps, fmt.Sprintf("paused: cgroup.freeze %s, cgroup.events {%s}", frozen, events))
		if frozen != "1" || !strings.Contains(events, "frozen 1") {
			return errors.New("want the paused sandbox's group frozen")
		}
		return nil
	}
	if err := pause(); err != nil {
		return fail(err)
	}
	if out, err := cli("resume", id); err != nil {
		return fail(fmt.Errorf("resume: %v: %s", err, out))
	}
	if readTrim(g+"/cgroup.freeze") != "0" {
		return fail(errors.New("want the resumed sandbox's group thawed"))
	}
	out, err = cli("exec", id, "--", "echo", "hi-from-daemon")
	steps = append(steps, "exec after resume: "+clip(out, 200))
	if err != nil || !strings.Contains(out, "hi-from-daemon") {
		return fail(fmt.Errorf("exec after resume: %v", err))
	}
	// Removing a paused (frozen) sandbox.
	if err := pause(); err != nil {
		return fail(err)
	}
	if out, err := cli("rm", id); err != nil {
		return fail(fmt.Errorf("rm of the paused sandbox: %v: %s", err, out))
	}
	if err := stop(); err != nil {
		return strings.Join(steps, "; "), err
	}
	left, err := leftoversIn(state, parent)
	steps = append(steps, "census after rm and stop: "+left)
	return strings.Join(steps, "; "), err
}

// checkReapAfterCrash: an airlock run killed by SIGKILL takes its
// sandbox's processes with it (they die with their owner) and leaves its
// state dir and cgroup, which airlock reap removes.
func checkReapAfterCrash() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := startRun(ctx, "--", "sleep", "100")
	if s.err != nil {
		return "", s.err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if g := sandboxGroup(); g != "" && strings.Count(readTrim(g+"/cgroup.procs"), "\n") >= 1 {
			break // init and sleep
		}
		if time.Now().After(deadline) {
			_ = s.cmd.Process.Kill()
			r, err := finish(s)
			return r.String(), errors.Join(errors.New("the sandbox did not start"), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = s.cmd.Process.Kill()
	_, _ = finish(s)
	var before census
	deadline = time.Now().Add(10 * time.Second)
	for {
		before = takeCensus(stateDir, cgParent)
		if before.Processes == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, err := airlockCmd(ctx, "reap").CombinedOutput()
	detail := fmt.Sprintf("census after the crash %+v; reap: %s", before, strings.TrimSpace(string(out)))
	if err != nil {
		return detail, err
	}
	var errs []error
	if before.Processes != 0 {
		errs = append(errs, errors.New("sandbox processes outlived their owner"))
	}
	if before.StateDirs != 1 || before.Cgroups != 1 {
		errs = append(errs, errors.New("want the crash to leave one state dir and one cgroup"))
	}
	if !strings.Contains(string(out), "reaped 1 ") {
		errs = append(errs, errors.New("want reap to remove one sandbox"))
	}
	left, err := leftovers()
	return detail + "; after reap " + left, errors.Join(append(errs, err)...)
}

// checkReap: nothing for airlock reap to find after all the runs.
func checkReap() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := airlockCmd(ctx, "reap").CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, err
	}
	if !strings.Contains(s, "reaped 0 ") {
		return s, errors.New("want nothing reaped")
	}
	if _, err := os.Stat(filepath.Join(cgRoot, cgParent)); err == nil {
		return s, errors.New("reap left the empty cgroup parent")
	}
	return s, nil
}

// waitPidsBelow waits (at most d) until the cgroup g holds fewer than n
// tasks.
func waitPidsBelow(g string, n int, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if v := readPids(g); v < 0 || v < n {
			return
		}
	}
}

// readPids is the cgroup g's pids.current, -1 when unreadable.
func readPids(g string) int {
	b, err := os.ReadFile(filepath.Join(g, "pids.current"))
	if err != nil {
		return -1
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return v
}
