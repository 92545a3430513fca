package cgroups

// These tests create real cgroups in the host's v1 hierarchies and check
// that the kernel enforces the limits. They need root and a v1 host (this
// project's CI machine is v1 "hybrid"); elsewhere they skip. Every test uses
// its own "airlock-test-<random>" parent and removes it in t.Cleanup.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/testroot"
)

// realV1 returns the detected hierarchy, skipping unless it is a real v1
// one we may write to.
func realV1(t *testing.T) *Hierarchy {
	t.Helper()
	testroot.Need(t, "for the real cgroup tests")
	h, err := Detect()
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("no usable cgroup hierarchy on this host: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode() != V1 {
		t.Skipf("host uses cgroup %v (%s); the real enforcement tests target v1", h.Mode(), h)
	}
	return h
}

// testParent returns a fresh parent name and registers a cleanup that
// destroys every group under it and removes it.
func testParent(t *testing.T, h *Hierarchy) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	parent := "airlock-test-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		names, err := h.List(parent)
		if err != nil {
			t.Errorf("cleanup list: %v", err)
		}
		for _, n := range names {
			g, err := h.Open(parent, n)
			if err != nil {
				t.Errorf("cleanup open %s: %v", n, err)
				continue
			}
			if err := g.Destroy(); err != nil {
				t.Errorf("cleanup destroy: %v", err)
			}
		}
		if err := h.RemoveParent(parent); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return parent
}

func mustCreate(t *testing.T, h *Hierarchy, parent, name string, lim Limits) *Group {
	t.Helper()
	g, err := h.Create(parent, name, lim)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// proc is a started child whose exit is collected in the background.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's result, valid after done is closed
}

func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		t.Fatalf("process %d did not exit within %v", p.cmd.Process.Pid, d)
		return nil
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// startInGroup starts cmd, moves it into g before it does anything (the
// command must first read one line from stdin) and then releases it.
func startInGroup(t *testing.T, g *Group, cmd *exec.Cmd) *proc {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		w.Close()
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("go\n")); err != nil {
		t.Fatalf("release child: %v", err)
	}
	w.Close()
	return p
}

// shellInGroup runs "/bin/sh -c script args..." inside g.
func shellInGroup(t *testing.T, g *Group, script string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", "read _ || exit 9\n" + script, "sh"}, args...)...)
	return startInGroup(t, g, cmd)
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func assertGone(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: want ENOENT after Destroy, got %v", p, err)
		}
	}
}

func TestV1CreateWritesLimits(t *testing.T) {
	h := realV1(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "limits", Limits{MemoryBytes: 64 << 20, Pids: 16, CPUs: 0.5})

	// A directory in every hierarchy we use.
	for _, c := range v1Controllers {
		mp, ok := h.v1[c]
		if !ok {
			continue
		}
		d := filepath.Join(mp, parent, "limits")
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s: group dir %s missing: %v", c, d, err)
		}
		if !slices.Contains(g.Paths(), d) {
			t.Errorf("Paths() %v lacks %s", g.Paths(), d)
		}
	}

	md, pd, cd := g.ctrl["memory"], g.ctrl["pids"], g.ctrl["cpu"]
	want := map[string]string{
		filepath.Join(md, "memory.limit_in_bytes"): "67108864",
		filepath.Join(pd, "pids.max"):              "16",
		filepath.Join(cd, "cpu.cfs_period_us"):     "100000",
		filepath.Join(cd, "cpu.cfs_quota_us"):      "50000",
	}
	memsw := filepath.Join(md, "memory.memsw.limit_in_bytes")
	if _, err := os.Stat(memsw); err == nil {
		want[memsw] = "67108864"
	} else {
		t.Logf("kernel has no %s (swap accounting off)", filepath.Base(memsw))
	}
	for f, v := range want {
		if got := readTrim(t, f); got != v {
			t.Errorf("%s = %q, want %q", f, got, v)
		}
	}

	// Raising the limit needs memsw written before limit_in_bytes.
	if err := g.SetLimits(Limits{MemoryBytes: 128 << 20, Pids: 32, CPUs: 2}); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(md, "memory.limit_in_bytes")); got != "134217728" {
		t.Errorf("raised memory.limit_in_bytes = %s", got)
	}
	if got := readTrim(t, filepath.Join(cd, "cpu.cfs_quota_us")); got != "200000" {
		t.Errorf("raised cpu.cfs_quota_us = %s", got)
	}
	// And removing all limits.
	if err := g.SetLimits(Limits{}); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(pd, "pids.max")); got != "max" {
		t.Errorf("unlimited pids.max = %s", got)
	}
	if got := readTrim(t, filepath.Join(cd, "cpu.cfs_quota_us")); got != "-1" {
		t.Errorf("unlimited cpu.cfs_quota_us = %s", got)
	}
	if got := readTrim(t, filepath.Join(md, "memory.limit_in_bytes")); got == "134217728" {
		t.Errorf("memory limit not removed: %s", got)
	}

	// Creating it again fails and leaves the existing group alone.
	if _, err := h.Create(parent, "limits", Limits{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Create: want ErrExist, got %v", err)
	}
	for _, p := range g.Paths() {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("failed Create removed existing group dir: %v", err)
		}
	}
	// Open finds it; a missing one is ErrNotExist.
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
	if fd, ok := g.CgroupFD(); ok || fd != -1 {
		t.Errorf("CgroupFD on v1 = %d, %v; want -1, false", fd, ok)
	}
}

func TestV1CreateFailureRemovesEverything(t *testing.T) {
	h := realV1(t)
	parent := testParent(t, h)
	// pids.max above PID_MAX_LIMIT is refused by the kernel, after the
	// group directories exist and the memory limit has been written.
	_, err := h.Create(parent, "bad", Limits{MemoryBytes: 64 << 20, Pids: 1 << 40})
	if err == nil {
		t.Fatal("Create with pids.max=2^40 succeeded")
	}
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "cgroup create "+parent+"/bad") ||
		!strings.Contains(err.Error(), "pids.max") {
		t.Errorf("unexpected error: %v", err)
	}
	t.Log(err)
	for _, b := range h.bases() {
		for _, d := range []string{filepath.Join(b.dir, parent, "bad"), filepath.Join(b.dir, parent)} {
			if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s left behind after failed Create (%v)", d, err)
			}
		}
	}
}

func TestV1AddProcAndProcs(t *testing.T) {
	h := realV1(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "procs", Limits{Pids: 16})
	p := shellInGroup(t, g, "exec sleep 30")
	pid := p.cmd.Process.Pid

	pids, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, pid) {
		t.Fatalf("Procs() = %v, want it to contain %d", pids, pid)
	}
	// The kernel agrees: /proc/<pid>/cgroup names the group in every
	// hierarchy we use.
	cg := readTrim(t, "/proc/"+strconv.Itoa(pid)+"/cgroup")
	for _, c := range []string{"memory", "pids", "cpu", "freezer"} {
		if _, ok := h.v1[c]; !ok {
			continue
		}
		found := false
		for _, line := range strings.Split(cg, "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), c) &&
				parts[2] == "/"+parent+"/procs" {
				found = true
			}
		}
		if !found {
			t.Errorf("/proc/%d/cgroup does not place it in %s:/%s/procs:\n%s", pid, c, parent, cg)
		}
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Pids != 1 {
		t.Errorf("Stats().Pids = %d, want 1", st.Pids)
	}
	if st.MemoryCurrent == 0 {
		t.Logf("note: memory.usage_in_bytes is 0")
	}
	if err := g.AddProc(0); err == nil {
		t.Error("AddProc(0) succeeded")
	}
}

func TestV1PidsLimit(t *testing.T) {
	h := realV1(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "forks", Limits{Pids: 8})
	p := shellInGroup(t, g, `i=0; while [ $i -lt 20 ]; do sleep 5 & i=$((i+1)); done; wait`)

	var st Stats
	waitFor(t, 5*time.Second, "pids.events max > 0", func() bool {
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
	t.Logf("pids.events max=%d, pids.current=%d, procs=%d, shell exited=%v", st.PidsMaxHits, st.Pids, len(pids), p.exited())
	if len(pids) > 8 || st.Pids > 8 {
		t.Errorf("group holds %d procs (pids.current %d), limit 8", len(pids), st.Pids)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, g.Paths())
}

func TestV1MemoryLimitOOMKills(t *testing.T) {
	h := realV1(t)
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
	if fst.MemoryPeak < 200<<20 {
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
	t.Logf("32 MiB group: %+v", st)
	if st.OOMKills < 1 {
		t.Errorf("OOMKills = %d, want >= 1", st.OOMKills)
	}
	// The peak may overshoot the limit by a few pages of charge batching,
	// never by anything like the 200 MiB the helper asked for.
	if st.MemoryPeak > 33<<20 {
		t.Errorf("MemoryPeak %d exceeds the 32 MiB limit", st.MemoryPeak)
	}
}

func TestV1CPULimit(t *testing.T) {
	h := realV1(t)
	if _, ok := h.v1["cpuacct"]; !ok {
		t.Skip("no cpuacct hierarchy: CPU usage is not reported")
	}
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "cpu", Limits{CPUs: 0.5})
	start := time.Now()
	shellInGroup(t, g, `while :; do :; done`)
	time.Sleep(1500 * time.Millisecond)
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	ratio := float64(st.CPUUsageNS) / float64(wall.Nanoseconds())
	cpuStat := readTrim(t, filepath.Join(g.ctrl["cpu"], "cpu.stat"))
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

func TestV1FreezeThaw(t *testing.T) {
	h := realV1(t)
	if _, ok := h.v1["freezer"]; !ok {
		t.Skip("no v1 freezer hierarchy")
	}
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "freeze", Limits{})
	counter := filepath.Join(t.TempDir(), "counter")
	// Only builtins in the loop: no forks, the shell itself makes progress.
	shellInGroup(t, g, `i=0; while :; do i=$((i+1)); echo $i > "$1"; done`, counter)

	read := func() string {
		b, _ := os.ReadFile(counter)
		return string(b)
	}
	waitFor(t, 5*time.Second, "counter to advance", func() bool {
		a := read()
		time.Sleep(20 * time.Millisecond)
		return a != "" && read() != a
	})

	t0 := time.Now()
	if err := g.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Freeze took %v", time.Since(t0))
	if st := readTrim(t, filepath.Join(g.ctrl["freezer"], "freezer.state")); st != "FROZEN" {
		t.Errorf("freezer.state = %s after Freeze", st)
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
	waitFor(t, 5*time.Second, "counter to advance after Thaw", func() bool { return read() != a })
	t.Logf("resumed after %v", time.Since(t0))
}

func TestV1KillDoubleForked(t *testing.T) {
	h := realV1(t)
	parent := testParent(t, h)
	g := mustCreate(t, h, parent, "kill", Limits{Pids: 32})
	// The setsid'd shell backgrounds two sleeps and exits: they are
	// reparented away from our child, in a new session.
	p := shellInGroup(t, g, `setsid sh -c 'sleep 100 & sleep 100 &'; sleep 100`)

	var pids []int
	waitFor(t, 5*time.Second, "3 processes in the group", func() bool {
		var err error
		if pids, err = g.Procs(); err != nil {
			t.Fatal(err)
		}
		return len(pids) >= 3
	})
	escaped := 0
	for _, pid := range pids {
		if ppid := statField(pid, 1); ppid != "" && ppid != strconv.Itoa(p.cmd.Process.Pid) && pid != p.cmd.Process.Pid {
			escaped++
		}
	}
	t.Logf("group procs %v, %d reparented away from our child", pids, escaped)
	if escaped < 2 {
		t.Errorf("expected 2 orphaned sleeps, found %d", escaped)
	}

	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	left, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("Procs after Kill = %v", left)
	}
	for _, pid := range pids {
		if st := statField(pid, 0); st != "" && st != "Z" {
			t.Errorf("pid %d still alive (state %s) after Kill", pid, st)
		}
	}
	err = p.wait(t, 5*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("child exit: want SIGKILL, got %v", err)
	}
	// Killing an empty group is fine.
	if err := g.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}
}

// statField returns field i after the command name in /proc/pid/stat
// (0 = state, 1 = ppid), or "" if the process is gone.
func statField(pid, i int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	if j := strings.LastIndexByte(s, ')'); j >= 0 {
		s = s[j+1:]
	}
	f := strings.Fields(s)
	if i >= len(f) {
		return ""
	}
	return f[i]
}

func TestV1DestroyAndList(t *testing.T) {
	h := realV1(t)
	parent := testParent(t, h)
	if names, err := h.List(parent); err != nil || len(names) != 0 {
		t.Fatalf("List of missing parent = %v, %v", names, err)
	}
	a := mustCreate(t, h, parent, "a", Limits{Pids: 8})
	mustCreate(t, h, parent, "b", Limits{})
	names, err := h.List(parent)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("List = %v, want [a b]", names)
	}

	p := shellInGroup(t, a, "sleep 100 & sleep 100")
	waitFor(t, 5*time.Second, "2 processes in a", func() bool {
		pids, err := a.Procs()
		return err == nil && len(pids) >= 2
	})
	if err := a.Destroy(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, a.Paths())
	p.wait(t, 5*time.Second)
	if err := a.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	names, err = h.List(parent)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"b"}) {
		t.Errorf("List after Destroy(a) = %v, want [b]", names)
	}
	if _, err := h.Open(parent, "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open destroyed group: want ErrNotExist, got %v", err)
	}
	if _, err := a.Stats(); err == nil {
		t.Error("Stats of destroyed group succeeded")
	}
	// The parent still holds b, so it cannot go yet.
	if err := h.RemoveParent(parent); err == nil {
		t.Error("RemoveParent with a group left succeeded")
	}
}
