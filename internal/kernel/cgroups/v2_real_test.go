package cgroups

// These tests create real cgroups in a cgroup v2 (unified) hierarchy and
// check that the kernel enforces the limits. They need root and a host
// whose detected hierarchy is v2; elsewhere (this project's CI machine is
// v1 "hybrid") they skip, and test/vm runs them inside a VM with a pure v2
// kernel, where they must pass. They share the helpers of v1_real_test.go.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/testroot"
)

// realV2 returns the detected hierarchy, skipping unless it is a real v2
// one we may write to.
func realV2(t *testing.T) *Hierarchy {
	t.Helper()
	testroot.Need(t, "for the real cgroup tests")
	h, err := Detect()
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("no usable cgroup hierarchy on this host: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode() != V2 {
		t.Skipf("host uses cgroup %v; the real v2 tests need a v2 host (test/vm runs them in one)", h.Mode())
	}
	return h
}

// hasWord reports whether the space-separated list s contains w.
func hasWord(s, w string) bool { return slices.Contains(strings.Fields(s), w) }

// cgroupOf returns the v2 entry ("0::/path") of /proc/pid/cgroup.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	for _, line := range strings.Split(readTrim(t, "/proc/"+strconv.Itoa(pid)+"/cgroup"), "\n") {
		if strings.HasPrefix(line, "0::") {
			return line
		}
	}
	t.Fatalf("/proc/%d/cgroup has no v2 entry", pid)
	return ""
}

func TestV2CreateWritesLimits(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "limits", Limits{MemoryBytes: 64 << 20, Pids: 16, CPUs: 0.5})

	d := filepath.Join(h.root, parent, "limits")
	if !slices.Equal(g.Paths(), []string{d}) {
		t.Fatalf("Paths() = %v, want [%s]", g.Paths(), d)
	}
	// The controllers reach the group: enabled in the root's and the
	// parent's subtree_control, hence listed in the group's controllers.
	for _, dir := range []string{h.root, filepath.Join(h.root, parent)} {
		sub := readTrim(t, filepath.Join(dir, "cgroup.subtree_control"))
		for _, c := range requiredControllers {
			if !hasWord(sub, c) {
				t.Errorf("%s/cgroup.subtree_control = %q, lacks %s", dir, sub, c)
			}
		}
	}
	if ctrls := readTrim(t, filepath.Join(d, "cgroup.controllers")); !hasWord(ctrls, "memory") ||
		!hasWord(ctrls, "pids") || !hasWord(ctrls, "cpu") {
		t.Errorf("group's cgroup.controllers = %q", ctrls)
	}

	want := map[string]string{
		"memory.max": "67108864",
		"pids.max":   "16",
		"cpu.max":    "50000 100000",
	}
	if _, err := os.Stat(filepath.Join(d, "memory.swap.max")); err == nil {
		want["memory.swap.max"] = "0"
	} else {
		t.Logf("kernel has no memory.swap.max (swap accounting off)")
	}
	check := func(want map[string]string) {
		t.Helper()
		for f, v := range want {
			if got := readTrim(t, filepath.Join(d, f)); got != v {
				t.Errorf("%s = %q, want %q", f, got, v)
			}
		}
	}
	check(want)

	if err := g.SetLimits(Limits{MemoryBytes: 128 << 20, Pids: 32, CPUs: 2}); err != nil {
		t.Fatal(err)
	}
	check(map[string]string{"memory.max": "134217728", "pids.max": "32", "cpu.max": "200000 100000"})
	// Removing all limits.
	if err := g.SetLimits(Limits{}); err != nil {
		t.Fatal(err)
	}
	unlimited := map[string]string{"memory.max": "max", "pids.max": "max", "cpu.max": "max 100000"}
	if _, ok := want["memory.swap.max"]; ok {
		unlimited["memory.swap.max"] = "max"
	}
	check(unlimited)

	// Creating it again fails and leaves the existing group alone.
	if _, err := h.Create(parent, "limits", Limits{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Create: want ErrExist, got %v", err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Errorf("failed Create removed the existing group: %v", err)
	}
	g2, err := h.Open(parent, "limits")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g2.Paths(), g.Paths()) {
		t.Errorf("Open paths %v != Create paths %v", g2.Paths(), g.Paths())
	}
	if _, err := h.Open(parent, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open missing: want ErrNotExist, got %v", err)
	}
}

func TestV2CreateFailureRemovesEverything(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)
	// pids.max above PID_MAX_LIMIT is refused by the kernel, after the
	// group directory exists and the memory limit has been written.
	_, err := h.Create(parent, "bad", Limits{MemoryBytes: 64 << 20, Pids: 1 << 40})
	if err == nil {
		t.Fatal("Create with pids.max=2^40 succeeded")
	}
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "pids.max") {
		t.Errorf("unexpected error: %v", err)
	}
	t.Log(err)
	for _, d := range []string{filepath.Join(h.root, parent, "bad"), filepath.Join(h.root, parent)} {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left behind after failed Create (%v)", d, err)
		}
	}
}

// TestV2CgroupFDAndAddProc: a child cloned with CLONE_INTO_CGROUP starts in
// the group (how the native backend starts a sandbox's init on v2), and
// AddProc moves a running process.
func TestV2CgroupFDAndAddProc(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "procs", Limits{Pids: 16})

	fd, ok := g.CgroupFD()
	if !ok {
		t.Fatal("CgroupFD failed on v2")
	}
	cmd := exec.Command("/bin/sh", "-c", "exec sleep 30")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	err := cmd.Start()
	unix.Close(fd)
	if err != nil {
		t.Fatalf("start with CgroupFD: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	wantCg := "0::/" + parent + "/procs"
	if got := cgroupOf(t, cmd.Process.Pid); got != wantCg {
		t.Errorf("child cloned into the group is in %q, want %q", got, wantCg)
	}

	p := shellInGroup(t, g, "exec sleep 30")
	if got := cgroupOf(t, p.cmd.Process.Pid); got != wantCg {
		t.Errorf("AddProc'd child is in %q, want %q", got, wantCg)
	}
	pids, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, cmd.Process.Pid) || !slices.Contains(pids, p.cmd.Process.Pid) {
		t.Errorf("Procs() = %v, want %d and %d", pids, cmd.Process.Pid, p.cmd.Process.Pid)
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %+v", st)
	if st.Pids != 2 {
		t.Errorf("Stats().Pids = %d, want 2", st.Pids)
	}
	if st.MemoryCurrent == 0 {
		t.Errorf("Stats().MemoryCurrent = 0 with two processes in the group")
	}
	if err := g.AddProc(0); err == nil {
		t.Error("AddProc(0) succeeded")
	}
}

func TestV2PidsLimit(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "forks", Limits{Pids: 8})
	p := shellInGroup(t, g, `i=0; while [ $i -lt 20 ]; do sleep 5 & i=$((i+1)); done; wait`)

	var st Stats
	waitFor(t, 10*time.Second, "pids.events max > 0", func() bool {
		var err error
		if st, err = g.Stats(); err != nil {
			t.Fatal(err)
		}
		return st.PidsMaxHits > 0
	})
	pids, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	hasPeak := fileExists(g.dirs[0], "pids.peak")
	t.Logf("pids.events max=%d, pids.current=%d, pids.peak=%d (file present: %v), procs=%d, shell exited=%v",
		st.PidsMaxHits, st.Pids, st.PidsPeak, hasPeak, len(pids), p.exited())
	if len(pids) > 8 || st.Pids > 8 {
		t.Errorf("group holds %d procs (pids.current %d), limit 8", len(pids), st.Pids)
	}
	if hasPeak && (st.PidsPeak < 2 || st.PidsPeak > 8) {
		t.Errorf("PidsPeak = %d, want between 2 and the limit 8", st.PidsPeak)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, g.Paths())
}

func TestV2MemoryLimitOOMKills(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)

	run := func(name string, lim Limits) (*Group, *proc, *bytes.Buffer) {
		g := mustCreate(t, h, parent, name, lim)
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=200")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		return g, startInGroup(t, g, cmd), &out
	}

	// Control: without a limit the helper really allocates 200 MiB.
	free, fp, fout := run("free", Limits{})
	if err := fp.wait(t, 60*time.Second); err != nil {
		t.Fatalf("unlimited helper failed: %v\n%s", err, fout)
	}
	if !strings.Contains(fout.String(), "allocated 200 MiB") {
		t.Fatalf("unlimited helper output: %q", fout)
	}
	fst, err := free.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if fileExists(free.dirs[0], "memory.peak") && fst.MemoryPeak < 200<<20 {
		t.Errorf("unlimited group MemoryPeak = %d, want >= 200 MiB", fst.MemoryPeak)
	}
	if fst.OOMKills != 0 {
		t.Errorf("unlimited group OOMKills = %d", fst.OOMKills)
	}

	g, p, out := run("small", Limits{MemoryBytes: 32 << 20})
	err = p.wait(t, 60*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("helper in 32 MiB group: want killed, got %v\n%s", err, out)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper in 32 MiB group: want SIGKILL, got %v\n%s", ee, out)
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("32 MiB group: %+v; memory.events: %s", st,
		strings.ReplaceAll(readTrim(t, filepath.Join(g.dirs[0], "memory.events")), "\n", ", "))
	if st.OOMKills < 1 {
		t.Errorf("OOMKills = %d, want >= 1", st.OOMKills)
	}
	if fileExists(g.dirs[0], "memory.peak") && (st.MemoryPeak == 0 || st.MemoryPeak > 33<<20) {
		t.Errorf("MemoryPeak %d: want above 0 and within the 32 MiB limit", st.MemoryPeak)
	}
}

func TestV2CPULimit(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "cpu", Limits{CPUs: 0.5})
	start := time.Now()
	shellInGroup(t, g, `while :; do :; done`)
	// Lift the quota before the loop is killed (cleanups run last first),
	// so that a throttled task is not left waiting for runtime to die.
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(g.dirs[0], "cpu.max"), []byte("max 100000"), 0) })
	time.Sleep(1500 * time.Millisecond)
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	ratio := float64(st.CPUUsageNS) / float64(wall.Nanoseconds())
	cpuStat := readTrim(t, filepath.Join(g.dirs[0], "cpu.stat"))
	t.Logf("busy loop with CPUs=0.5: %v CPU in %v wall (%.2f); cpu.stat:\n%s", time.Duration(st.CPUUsageNS), wall, ratio, cpuStat)
	if st.CPUUsageNS == 0 {
		t.Error("CPUUsageNS = 0 for a busy loop")
	}
	if ratio > 0.7 {
		t.Errorf("busy loop used %.2f CPUs, limit 0.5", ratio)
	}
	throttled, _, err := parseKeyed(cpuStat, "nr_throttled")
	if err != nil {
		t.Fatal(err)
	}
	if throttled == 0 {
		t.Error("cpu.stat nr_throttled = 0 for a busy loop limited to 0.5 CPUs")
	}
}

func TestV2FreezeThaw(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "freeze", Limits{})
	counter := filepath.Join(t.TempDir(), "counter")
	// Only builtins in the loop: no forks, the shell itself makes progress.
	shellInGroup(t, g, `i=0; while :; do i=$((i+1)); echo $i > "$1"; done`, counter)

	read := func() string {
		b, _ := os.ReadFile(counter)
		return string(b)
	}
	waitFor(t, 10*time.Second, "counter to advance", func() bool {
		a := read()
		time.Sleep(20 * time.Millisecond)
		return a != "" && read() != a
	})

	t0 := time.Now()
	if err := g.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Freeze took %v", time.Since(t0))
	if v := readTrim(t, filepath.Join(g.dirs[0], "cgroup.freeze")); v != "1" {
		t.Errorf("cgroup.freeze = %s after Freeze", v)
	}
	if ev := readTrim(t, filepath.Join(g.dirs[0], "cgroup.events")); !strings.Contains(ev, "frozen 1") {
		t.Errorf("cgroup.events after Freeze: %q", ev)
	}
	a := read()
	time.Sleep(300 * time.Millisecond)
	if b := read(); b != a {
		t.Fatalf("frozen process made progress: %q -> %q", a, b)
	}
	if _, err := g.Procs(); err != nil {
		t.Errorf("Procs while frozen: %v", err)
	}
	if err := g.Thaw(); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	waitFor(t, 10*time.Second, "counter to advance after Thaw", func() bool { return read() != a })
	t.Logf("resumed after %v", time.Since(t0))
}

// TestV2KillAndDestroyNested: Kill empties the group (cgroup.kill) with
// processes that left their parent and one in a descendant group, and
// Destroy removes the descendant groups too.
func TestV2KillAndDestroyNested(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "kill", Limits{Pids: 32})
	if !fileExists(g.dirs[0], "cgroup.kill") {
		t.Logf("note: no cgroup.kill (Linux < 5.14): Kill falls back to freeze and signal")
	}
	p := shellInGroup(t, g, `setsid sh -c 'sleep 100 & sleep 100 &'; sleep 100`)
	waitFor(t, 10*time.Second, "3 processes in the group", func() bool {
		pids, err := g.Procs()
		if err != nil {
			t.Fatal(err)
		}
		return len(pids) >= 3
	})
	// A descendant group holding a process of its own (the sandbox may
	// make such groups inside its cgroup namespace).
	sub := filepath.Join(g.dirs[0], "inner")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	inner := exec.Command("/bin/sh", "-c", "read _; exec sleep 100")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inner.Stdin = r
	if err := inner.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	innerDone := make(chan error, 1)
	go func() { innerDone <- inner.Wait() }()
	t.Cleanup(func() { _ = inner.Process.Kill(); w.Close() })
	if err := os.WriteFile(filepath.Join(sub, "cgroup.procs"), []byte(strconv.Itoa(inner.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("go\n"))
	w.Close()

	pids, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, inner.Process.Pid) || len(pids) < 4 {
		t.Fatalf("Procs() = %v: want the 3 of the group and %d of its descendant", pids, inner.Process.Pid)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if left, err := g.Procs(); err != nil || len(left) != 0 {
		t.Fatalf("Procs after Kill = %v, %v", left, err)
	}
	for _, pid := range pids {
		if st := statField(pid, 0); st != "" && st != "Z" {
			t.Errorf("pid %d still alive (state %s) after Kill", pid, st)
		}
	}
	var ee *exec.ExitError
	if err := p.wait(t, 10*time.Second); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("child exit: want SIGKILL, got %v", err)
	}
	select {
	case <-innerDone:
	case <-time.After(10 * time.Second):
		t.Error("the descendant group's process survived Kill")
	}
	if err := g.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}

	mustCreate(t, h, parent, "other", Limits{})
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, []string{sub, g.dirs[0]})
	if err := g.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if names, err := h.List(parent); err != nil || !slices.Equal(names, []string{"other"}) {
		t.Errorf("List after Destroy = %v, %v; want [other]", names, err)
	}
	if _, err := g.Stats(); err == nil {
		t.Error("Stats of destroyed group succeeded")
	}
	if err := h.RemoveParent(parent); err == nil {
		t.Error("RemoveParent with a group left succeeded")
	}
}

// TestV2DestroyKillsRunning: Destroy of a group with running processes
// kills them and removes the group in one call.
func TestV2DestroyKillsRunning(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "busy", Limits{Pids: 8})
	p := shellInGroup(t, g, "sleep 100 & sleep 100")
	waitFor(t, 10*time.Second, "2 processes in the group", func() bool {
		pids, err := g.Procs()
		return err == nil && len(pids) >= 2
	})
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, g.Paths())
	p.wait(t, 10*time.Second)
	if err := h.RemoveParent(parent); err != nil {
		t.Errorf("RemoveParent of the emptied parent: %v", err)
	}
}

// spawnerEnv makes the test binary act as a sandbox agent's spawner: it
// locks one thread, prints "tid N", waits for one line on stdin (sent once
// that thread is in a pids sub-group), then starts "sleep 1" children from
// that thread in rounds of N, waiting for each round's children, and
// prints "refused R" for each round's refused starts.
const spawnerEnv = "AIRLOCK_CGROUPS_TEST_SPAWNER"

func spawnerHelper(v string) int {
	rounds, n, ok := strings.Cut(v, "x")
	r, err1 := strconv.Atoi(rounds)
	k, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "bad", spawnerEnv, v)
		return 2
	}
	runtime.LockOSThread() // for good: the thread is the spawner
	fmt.Println("tid", unix.Gettid())
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "handshake:", err)
		return 3
	}
	for i := 0; i < r; i++ {
		var started []*exec.Cmd
		refused := 0
		for j := 0; j < k; j++ {
			c := exec.Command("sleep", "1")
			if err := c.Start(); err != nil {
				if !errors.Is(err, unix.EAGAIN) {
					fmt.Fprintln(os.Stderr, "start:", err)
					return 4
				}
				refused++
				continue
			}
			started = append(started, c)
		}
		for _, c := range started {
			_ = c.Wait()
		}
		fmt.Println("refused", refused)
	}
	return 0
}

// TestV2PidsSub: the commands' pids group, as the native backend uses it: a
// threaded child that one thread of a process in the group joins; what
// that thread starts is counted and capped there, and pids.events "max"
// counts every refused fork (not only a new high watermark, like
// pids.peak), while the process stays in the group, whose own limits
// cover the child.
func TestV2PidsSub(t *testing.T) {
	h := realV2(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "sb", Limits{MemoryBytes: 256 << 20, Pids: 64})

	const rounds, perRound, max = 2, 12, 8
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%dx%d", spawnerEnv, rounds, perRound))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		stdin.Close()
	})
	// It does nothing but print its spawner thread's tid before the
	// handshake, so moving it now is in time.
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewScanner(stdout)
	var tid int
	if !out.Scan() {
		t.Fatalf("spawner said nothing: %v; stderr %s", out.Err(), &errOut)
	}
	if _, err := fmt.Sscanf(out.Text(), "tid %d", &tid); err != nil {
		t.Fatalf("spawner: %q: %v", out.Text(), err)
	}

	sub, err := g.CreatePidsSub("cmds", max)
	if err != nil {
		t.Fatal(err)
	}
	d := g.dirs[0]
	cmds := filepath.Join(d, "cmds")
	if typ := readTrim(t, filepath.Join(cmds, "cgroup.type")); typ != "threaded" {
		t.Errorf("sub-group cgroup.type = %q, want threaded", typ)
	}
	if typ := readTrim(t, filepath.Join(d, "cgroup.type")); typ != "domain threaded" {
		t.Errorf("group cgroup.type = %q, want domain threaded", typ)
	}
	if got := readTrim(t, filepath.Join(cmds, "pids.max")); got != strconv.Itoa(max) {
		t.Errorf("sub-group pids.max = %q", got)
	}
	if err := sub.AddThread(tid); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(cmds, "cgroup.threads")); got != strconv.Itoa(tid) {
		t.Errorf("sub-group cgroup.threads = %q, want the spawner thread %d", got, tid)
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	stdin.Close()

	refused := 0
	for i := 0; i < rounds; i++ {
		if !out.Scan() {
			t.Fatalf("spawner ended early: %v; stderr %s", out.Err(), &errOut)
		}
		var n int
		if _, err := fmt.Sscanf(out.Text(), "refused %d", &n); err != nil {
			t.Fatalf("spawner: %q: %v", out.Text(), err)
		}
		refused += n
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("spawner: %v; stderr %s", err, &errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("spawner did not exit")
	}
	hits, err := sub.MaxHits()
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d starts refused; sub-group pids.events max %d, pids.peak %s; group stats %+v", refused,
		rounds*perRound, hits, readTrim(t, filepath.Join(cmds, "pids.peak")), st)
	// The spawner thread itself counts: max-1 children fit.
	if want := rounds * (perRound - (max - 1)); refused != want {
		t.Errorf("refused %d starts, want %d", refused, want)
	}
	if hits != uint64(refused) {
		t.Errorf("sub-group counted %d refused forks, the spawner saw %d", hits, refused)
	}
	if st.PidsMaxHits != 0 {
		t.Errorf("the group's own pids.max (64) was hit: %d", st.PidsMaxHits)
	}

	// Kill and Destroy cover the threaded sub-group (whose cgroup.procs
	// cannot be read).
	p2 := exec.Command("sleep", "100")
	if err := p2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p2.Process.Kill(); _ = p2.Wait() })
	if err := g.AddProc(p2.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := sub.AddThread(p2.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if pids, err := g.Procs(); err != nil || !slices.Contains(pids, p2.Process.Pid) {
		t.Errorf("Procs() = %v, %v; want %d", pids, err, p2.Process.Pid)
	}
	if err := g.Freeze(); err != nil {
		t.Errorf("Freeze with a threaded sub-group: %v", err)
	}
	if err := g.Thaw(); err != nil {
		t.Errorf("Thaw: %v", err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, []string{cmds, d})
}
