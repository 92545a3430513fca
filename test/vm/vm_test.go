// Package vm tests airlock on a real cgroup v2 system: a virtual machine
// under qemu's software emulation (TCG; no KVM) booting a stock Debian
// kernel with cgroup v1 disabled. The host's CI machine is cgroup v1
// "hybrid", so this is where airlock's v2 path meets a real kernel.
//
// The guest's init (./guest, PID 1, built here with CGO_ENABLED=0 into a
// small initramfs with the kernel modules it needs) mounts the host's root
// file system read-only over virtio-9p and switches to it, so the guest runs
// the host's tools and the binaries built here unchanged; tmpfs covers the
// writable places, zram gives it swap, cgroup2 is mounted as systemd would
// (controllers enabled at the root, processes in leaves). It has no network
// device. Its checks: the cgroups package's tests (whose real v2 tests skip
// on the host), the native backend's conformance suite and fork-bomb and
// CPU tests, `airlock run` under --memory, --pids and --cpus limits, the
// daemon (health, limits, OOM and fork bomb in a kept sandbox, pause,
// removal while paused), reaping after a crash, and a census of leftovers
// after each. It writes one JSON result line per check to its second serial
// port, which this test reads back; any "fail" fails the test. A "known"
// result is a bug found here whose fix is elsewhere: logged as KNOWN BUG,
// a failure only with AIRLOCK_VM_STRICT=1.
//
// The kernel and its modules come from test/vm/prepare.sh (run by
// scripts/setup.sh), cached under /var/cache/airlock-vm (env
// AIRLOCK_VM_CACHE); this test downloads nothing. Without qemu or the
// cached kernel it skips, except under CI (env CI set), where it fails.
//
// For work on the test itself: AIRLOCK_VM_ONLY=check,check runs only those
// checks, AIRLOCK_VM_REPEAT=N runs them N times, AIRLOCK_VM_TIMEOUT=5m
// changes the time limit, AIRLOCK_VM_CMDLINE adds to the guest's kernel
// command line (airlockvm.noswap; airlockvm.nativerun=REGEXP).
package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// vmTimeout bounds one VM run; it normally takes 1.5-2.5 minutes.
const vmTimeout = 5 * time.Minute

// wantChecks are the guest's checks that must each report "pass".
var wantChecks = []string{
	"boot", "env", "gotest-cgroups",
	"run-basic", "leftovers-basic",
	"swap-control", "memory", "leftovers-memory",
	"pids", "leftovers-pids",
	"cpu", "leftovers-cpu",
	"gotest-native", "daemon", "daemon-pids-repeat", "reap-after-crash", "reap", "done",
}

type result struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	MS     int64  `json:"ms"`
	Detail string `json:"detail"`
}

// unavailable skips, or under CI fails: the suite must not pass there by
// skipping.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("cgroup v2 VM test cannot run under CI: %s", msg)
	}
	t.Skipf("cgroup v2 VM test skipped: %s", msg)
}

func TestCgroupV2VM(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a VM under software emulation (about 2 minutes): not with -short")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		unavailable(t, "needs linux/amd64, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		unavailable(t, "qemu-system-x86_64 not found (scripts/setup.sh installs qemu-system-x86)")
	}
	cache := os.Getenv("AIRLOCK_VM_CACHE")
	if cache == "" {
		cache = "/var/cache/airlock-vm"
	}
	kdir := filepath.Join(cache, "current")
	for _, f := range []string{"vmlinuz", "modules.order"} {
		if _, err := os.Stat(filepath.Join(kdir, f)); err != nil {
			unavailable(t, "no prepared kernel in %s (run test/vm/prepare.sh): %v", kdir, err)
		}
	}
	kernelPkg, _ := os.ReadFile(filepath.Join(kdir, "package"))

	work := t.TempDir()
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	buildGuestFiles(t, work)
	initrd := filepath.Join(work, "initrd.img")
	if err := writeInitramfs(initrd, filepath.Join(work, "init"), kdir); err != nil {
		t.Fatalf("initramfs: %v", err)
	}
	// The guest's init reads nothing of these but the binaries: keep the
	// initramfs out of the share.
	if err := os.Remove(filepath.Join(work, "init")); err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	initrdFinal := filepath.Join(logDir, "initrd.img")
	if err := os.Rename(initrd, initrdFinal); err != nil {
		t.Fatal(err)
	}
	t.Logf("built airlock, cgroups.test and the initramfs in %v", time.Since(t0).Round(time.Millisecond))

	timeout := vmTimeout
	if v, err := time.ParseDuration(os.Getenv("AIRLOCK_VM_TIMEOUT")); err == nil && v > time.Minute {
		timeout = v
	}
	cmdline := "console=ttyS0 loglevel=4 panic=-1 mitigations=off systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all"
	want := wantChecks
	// For work on the test itself: AIRLOCK_VM_ONLY=check,check runs only
	// those checks; AIRLOCK_VM_REPEAT=N runs them N times.
	if only := os.Getenv("AIRLOCK_VM_ONLY"); only != "" {
		cmdline += " airlockvm.only=" + only
		want = append([]string{"boot", "env", "done"}, strings.Split(only, ",")...)
	}
	if n := os.Getenv("AIRLOCK_VM_REPEAT"); n != "" {
		cmdline += " airlockvm.repeat=" + n
	}
	if extra := os.Getenv("AIRLOCK_VM_CMDLINE"); extra != "" {
		cmdline += " " + extra // e.g. airlockvm.noswap airlockvm.nativerun=REGEXP
	}
	// the guest's watchdog fires before we give up on it
	cmdline += fmt.Sprintf(" airlockvm.deadline=%d", int((timeout - 30*time.Second).Seconds()))
	// Under emulation the guest has been seen to livelock (both vCPUs
	// busy, no progress: once in about ten runs, in a CPU-quota check).
	// That is the emulator, not airlock: a run that hangs is retried once;
	// a check that fails is never retried.
	var (
		console, results string
		qout             bytes.Buffer
		runErr           error
		elapsed          time.Duration
	)
	logTail := func() {
		t.Logf("qemu output:\n%s", strings.TrimSpace(qout.String()))
		t.Logf("guest console (last 80 lines):\n%s", tail(console, 80))
	}
	for attempt := 1; ; attempt++ {
		console = filepath.Join(logDir, fmt.Sprintf("console-%d.log", attempt))
		results = filepath.Join(logDir, fmt.Sprintf("results-%d.log", attempt))
		args := []string{
			"-nodefaults", "-no-user-config", "-machine", "pc",
			"-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2", "-m", "1024",
			"-display", "none", "-monitor", "none", "-no-reboot",
			"-nic", "none", // the guest has no network at all
			"-kernel", filepath.Join(kdir, "vmlinuz"),
			"-initrd", initrdFinal,
			"-append", cmdline,
			"-serial", "file:" + console,
			"-serial", "file:" + results,
			"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
			"-virtfs", "local,path=" + work + ",mount_tag=vmwork,security_model=none,readonly=on,multidevs=remap",
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		cmd := exec.CommandContext(ctx, qemu, args...)
		qout.Reset()
		cmd.Stdout, cmd.Stderr = &qout, &qout
		cmd.WaitDelay = 10 * time.Second
		t1 := time.Now()
		runErr = cmd.Run()
		elapsed = time.Since(t1)
		hung := ctx.Err() != nil
		cancel()
		if !hung {
			break
		}
		logTail()
		if attempt == 2 {
			t.Fatalf("VM did not finish within %v, twice", timeout)
		}
		t.Logf("VM did not finish within %v (attempt %d): running it again", timeout, attempt)
	}

	res, perr := parseResults(results)
	if runErr != nil {
		logTail()
		t.Fatalf("qemu: %v", runErr)
	}
	if perr != nil {
		logTail()
		t.Fatalf("results: %v", perr)
	}
	t.Logf("VM (%s) ran %v", strings.TrimSpace(string(kernelPkg)), elapsed.Round(time.Millisecond))

	byName := map[string]result{}
	failed := false
	var goPassed []string
	for _, r := range res {
		byName[r.Check] = r
		line := fmt.Sprintf("%-28s %-5s %6.1fs  %s", r.Check, r.Status, float64(r.MS)/1000, strings.ReplaceAll(r.Detail, "\n", " | "))
		switch {
		case r.Status == "known" && os.Getenv("AIRLOCK_VM_STRICT") == "":
			// a bug found here and reported, whose fix is elsewhere:
			// loud, but not a failure (AIRLOCK_VM_STRICT=1 makes it one)
			t.Logf("KNOWN BUG %s", line)
		case r.Status == "fail", r.Status == "known":
			t.Errorf("FAIL %s", line)
			failed = true
		case (strings.HasPrefix(r.Check, "go:TestV2") && !strings.HasPrefix(r.Check, "go:TestV2Fake") ||
			strings.HasPrefix(r.Check, "native:")) && r.Status == "skip":
			// these skip only where there is no v2 or no runtime
			t.Errorf("%s: the test did not run in the v2 guest", line)
			failed = true
		default:
			t.Log(line)
		}
		if strings.HasPrefix(r.Check, "go:TestV2") && !strings.HasPrefix(r.Check, "go:TestV2Fake") && r.Status == "pass" {
			goPassed = append(goPassed, r.Check)
		}
	}
	for _, c := range want {
		r, ok := byName[c]
		if !ok {
			t.Errorf("check %s: no result from the guest", c)
			failed = true
		} else if r.Status == "skip" { // fail and known are reported above
			t.Errorf("check %s: %s", c, r.Status)
			failed = true
		}
	}
	if len(goPassed) < 5 && byName["gotest-cgroups"].Check != "" {
		t.Errorf("only %d real cgroup v2 tests passed in the guest: %v", len(goPassed), goPassed)
		failed = true
	}
	if failed {
		logTail()
	}
}

// buildGuestFiles builds what the guest runs into work: its init, the
// airlock binary and the cgroups package's test binary.
func buildGuestFiles(t *testing.T, work string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		unavailable(t, "no go tool to build the guest's binaries")
	}
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %v %s", err, out)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	for _, b := range []struct {
		env  []string
		args []string
	}{
		{[]string{"CGO_ENABLED=0"}, []string{"build", "-o", filepath.Join(work, "init"), "./test/vm/guest"}},
		{[]string{"CGO_ENABLED=0"}, []string{"build", "-o", filepath.Join(work, "airlock"), "./cmd/airlock"}},
		{nil, []string{"test", "-c", "-o", filepath.Join(work, "cgroups.test"), "./internal/kernel/cgroups"}},
		{nil, []string{"test", "-c", "-o", filepath.Join(work, "native.test"), "./internal/runtime/native"}},
		{[]string{"CGO_ENABLED=0"}, []string{"build", "-o", filepath.Join(work, "probe"), "./internal/runtime/native/testdata/probe"}},
	} {
		cmd := exec.Command(goTool, b.args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), b.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(b.args, " "), err, out)
		}
	}
}

func parseResults(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var res []result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		i := strings.Index(line, "AIRLOCKVM {")
		if i < 0 {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line[i+len("AIRLOCKVM "):]), &r); err != nil {
			return res, fmt.Errorf("bad result line %q: %v", line, err)
		}
		res = append(res, r)
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("the guest reported nothing")
	}
	return res, nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// --- initramfs: a cpio "newc" archive ---------------------------------------

// writeInitramfs writes an uncompressed initramfs holding init as /init,
// the kernel modules named in kdir/modules.order as /modules/*.ko with
// that list as /modules/order, the mount points init needs and
// /dev/console.
func writeInitramfs(path, init, kdir string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &cpioWriter{w: bufio.NewWriter(f)}
	for _, d := range []string{"dev", "proc", "sys", "newroot", "modules"} {
		w.entry(d, 0o040755, 0, 0, nil)
	}
	w.entry("dev/console", 0o020600, 5, 1, nil)
	data, err := os.ReadFile(init)
	if err != nil {
		return err
	}
	w.entry("init", 0o100755, 0, 0, data)
	order, err := os.ReadFile(filepath.Join(kdir, "modules.order"))
	if err != nil {
		return err
	}
	mods := strings.Fields(string(order))
	for _, m := range mods {
		data, err := os.ReadFile(filepath.Join(kdir, "modules", m))
		if err != nil {
			return err
		}
		w.entry("modules/"+m, 0o100644, 0, 0, data)
	}
	w.entry("modules/order", 0o100644, 0, 0, []byte(strings.Join(mods, "\n")+"\n"))
	w.entry("TRAILER!!!", 0, 0, 0, nil)
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if err := f.Close(); w.err == nil {
		w.err = err
	}
	return w.err
}

type cpioWriter struct {
	w   *bufio.Writer
	ino int
	n   int64
	err error
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	var n int
	n, c.err = c.w.Write(b)
	c.n += int64(n)
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// entry writes one member: mode includes the file type bits; rdev is
// major/minor for device nodes.
func (c *cpioWriter) entry(name string, mode uint32, major, minor int, data []byte) {
	c.ino++
	nlink := 1
	if mode&0o170000 == 0o040000 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, major, minor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad()
	c.write(data)
	c.pad()
}
