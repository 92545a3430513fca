package native

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// execWait runs a command and returns its status or the error of Exec or
// Wait (unlike run, it does not stop the test on an error).
func execWait(sb runtime.Sandbox, req runtime.ExecRequest) (result, error) {
	var out, errb bytes.Buffer
	req.Stdout, req.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := sb.Exec(ctx, req)
	if err != nil {
		return result{}, err
	}
	st, err := p.Wait(ctx)
	return result{Stdout: out.String(), Stderr: errb.String(), Status: st}, err
}

// initLogHead is the start of the agent's log (where a Go runtime crash
// says why), for failure messages.
func initLogHead(s *sandbox) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "init.log"))
	lines := strings.SplitN(string(b), "\n", 4)
	return strings.Join(lines[:min(3, len(lines))], " | ")
}

// A fork bomb is capped by the pids limit and reported; the sandbox (its
// agent) and the host stay usable.
func TestEscapeResForkBomb(t *testing.T) {
	needRuntime(t)
	// Not parallel: it measures the host's responsiveness.
	const pids = 32
	sb := escSandbox(t, func(s *runtime.Spec) { s.Limits.Pids = pids })
	s := impl(t, sb)
	cmdUID := s.uidBase + SandboxUID
	before, err := s.Cgroup().Stats()
	if err != nil {
		t.Fatal(err)
	}

	// 1. Each process starts two more and stays: the pids are held until
	// the timeout kills the bomb's process group.
	bomb := make(chan struct{})
	var res result
	var bombErr error
	go func() {
		defer close(bomb)
		res, bombErr = execWait(sb, runtime.ExecRequest{Argv: []string{"/bin/bash", "-c", `f(){ f & f & sleep 30; }; f`}, Timeout: 3 * time.Second})
	}()
	// Meanwhile the host counts the commands' tasks, and the daemon keeps
	// using the sandbox as it would for other commands: each may fail to
	// start (no pids left), but gracefully.
	var during []string
	peak := 0
	next := time.Now()
	for done := false; !done; {
		select {
		case <-bomb:
			done = true
		case <-time.After(20 * time.Millisecond):
		}
		peak = max(peak, countTasksOfUID(cmdUID))
		if time.Now().After(next) && !done {
			next = time.Now().Add(150 * time.Millisecond)
			r, err := execWait(sb, runtime.ExecRequest{Argv: []string{"/bin/true"}})
			if err != nil {
				during = append(during, err.Error())
			} else {
				during = append(during, "exit "+strconv.Itoa(r.Status.Code))
			}
		}
	}
	after, _ := s.Cgroup().Stats()
	t.Logf("holding bomb: %+v; peak %d command tasks (limit %d); cgroup pids.max hits %d -> %d, peak %d; commands during: %q",
		res.Status, peak, pids, before.PidsMaxHits, after.PidsMaxHits, after.PidsPeak, during)
	if peak > pids {
		t.Errorf("ESCAPE: the fork bomb reached %d tasks with a pids limit of %d", peak, pids)
	}
	if peak < pids-4 && after.PidsMaxHits <= before.PidsMaxHits {
		t.Errorf("the fork bomb never came near the pids limit (peak %d of %d): the test is void", peak, pids)
	}
	if bombErr != nil {
		t.Errorf("BUG: the fork bomb's status was lost (%v): the agent died; its log: %s", bombErr, initLogHead(s))
	} else if res.Status.Limit != runtime.LimitPids && res.Status.Limit != runtime.LimitTimeout {
		t.Errorf("holding fork bomb: want limit timeout (or pids), got %+v", res.Status)
	}
	for _, d := range during {
		if strings.Contains(d, ErrStopped.Error()) {
			t.Errorf("BUG: the sandbox stopped during the fork bomb: %q", during)
			break
		}
	}

	// the host is responsive: a process starts at once
	start := time.Now()
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Errorf("host cannot start a process: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("host took %s to run /bin/true", d)
	}

	// the same sandbox still runs commands once the bomb is gone
	waitUsable(t, sb, s)

	// 2. A bomb whose shell gives up when fork fails (dash does not retry):
	// the command ends on its own, and each time the status must name the
	// pids limit.
	for i := 1; i <= 2; i++ {
		res, err = execWait(sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", `i=0; while [ $i -lt 200 ]; do sleep 1 & i=$((i+1)); done; wait`}, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("BUG: fork bomb %d: status lost (%v); agent log: %s", i+1, err, initLogHead(s))
		}
		t.Logf("failing bomb %d: %+v %q", i, res.Status, res.Stderr)
		if res.Status.Code == 0 {
			t.Errorf("ESCAPE: 200 background processes started under a pids limit of %d", pids)
		} else if res.Status.Limit != runtime.LimitPids {
			t.Errorf("BUG: failing bomb %d: a command stopped by the pids limit is not reported as such: %+v (stderr %q)", i, res.Status, res.Stderr)
		}
		waitUsable(t, sb, s)
	}
}

// waitUsable waits until the sandbox runs `true` again (background
// processes of an earlier command may hold pids for a while).
func waitUsable(t *testing.T, sb runtime.Sandbox, s *sandbox) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := execWait(sb, runtime.ExecRequest{Argv: []string{"/bin/true"}})
		if err == nil && r.Status.Code == 0 {
			break
		}
		if errors.Is(err, ErrStopped) || time.Now().After(deadline) {
			t.Fatalf("BUG: the sandbox cannot run `true` after a fork bomb: %v %+v; agent log: %s", err, r.Status, initLogHead(s))
		}
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case <-sb.Done():
		t.Fatal("BUG: the sandbox stopped because of a fork bomb")
	default:
	}
}

// countTasksOfUID counts the host's tasks (threads included, as
// RLIMIT_NPROC and the pids controller do) whose real uid is uid.
func countTasksOfUID(uid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if u, ok := procUID(pid); ok && u == uid {
			if tasks, err := os.ReadDir("/proc/" + e.Name() + "/task"); err == nil {
				n += len(tasks)
			} else {
				n++
			}
		}
	}
	return n
}

// Allocating past the memory limit OOM-kills the command (not the agent)
// and is reported as a memory limit, also when the command first tries to
// make itself exempt from the OOM killer.
func TestEscapeResMemory(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, func(s *runtime.Spec) {
		withProbe(t)(s)
		s.Limits.MemoryBytes = 64 << 20
	})
	s := impl(t, sb)
	for _, mode := range []string{"plain", "protect"} {
		before, _ := s.Cgroup().Stats()
		res := run(t, sb, runtime.ExecRequest{Argv: []string{"/workspace/probe", "alloc", "400", mode}, Timeout: 20 * time.Second})
		after, _ := s.Cgroup().Stats()
		if strings.Contains(res.Stdout, `"ok":true`) {
			t.Fatalf("ESCAPE: allocated 400MiB under a 64MiB limit (%s): %s", mode, res.Stdout)
		}
		if strings.Contains(res.Stdout, "oom_score_adj set to -1000") {
			t.Errorf("%s: a command made itself exempt from the OOM killer (oom_score_adj -1000)", mode)
		}
		if res.Status.Limit != runtime.LimitMemory || res.Status.Signal != "SIGKILL" {
			t.Errorf("%s: want limit memory and SIGKILL, got %+v (stdout %q)", mode, res.Status, res.Stdout)
		}
		if after.OOMKills <= before.OOMKills {
			t.Errorf("%s: cgroup OOM kills %d -> %d", mode, before.OOMKills, after.OOMKills)
		}
		if res.Status.MaxRSSBytes > 80<<20 {
			t.Errorf("%s: the command reached %d bytes RSS under a 64MiB limit", mode, res.Status.MaxRSSBytes)
		}
		if r, err := execWait(sb, runtime.ExecRequest{Argv: []string{"echo", "alive"}}); err != nil || r.Stdout != "alive\n" {
			t.Fatalf("%s: sandbox unusable after the OOM kill (agent killed?): %v %+v; agent log: %s", mode, err, r, initLogHead(s))
		}
	}
	select {
	case <-sb.Done():
		t.Error("the sandbox stopped after an OOM kill")
	default:
	}
}

// Filling /workspace, /tmp or the inode table stops at the quota and is
// reported as a disk limit; the host's disk pays at most the quota while
// the sandbox lives, and nothing once it is destroyed.
func TestEscapeResDisk(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	const disk, tmp, inodes = 32 << 20, 16 << 20, 2000
	free := func() int64 {
		var st syscall.Statfs_t
		if err := syscall.Statfs(testRoot, &st); err != nil {
			t.Fatal(err)
		}
		return int64(st.Bavail) * st.Bsize
	}
	freeBefore := free()
	sb := escSandbox(t, func(s *runtime.Spec) {
		s.Limits.DiskBytes = disk
		s.Limits.TmpBytes = tmp
		s.Limits.Inodes = inodes
	})
	fill := func(path, mib string) {
		t.Helper()
		res := run(t, sb, runtime.ExecRequest{Argv: []string{"dd", "if=/dev/zero", "of=" + path, "bs=1M", "count=" + mib}})
		if res.Status.Code == 0 {
			t.Errorf("ESCAPE: wrote %sMiB to %s past the quota: %s", mib, path, res.Stderr)
			return
		}
		// ENOSPC when the filesystem is full; SIGXFSZ when RLIMIT_FSIZE
		// (the larger of the two quotas) is reached first
		if !strings.Contains(res.Stderr, "No space left on device") && res.Status.Signal != "SIGXFSZ" {
			t.Errorf("%s: want ENOSPC or SIGXFSZ, got %+v %q", path, res.Status, res.Stderr)
		}
		if res.Status.Limit != runtime.LimitDisk {
			t.Errorf("%s: the command failed on a full disk, want limit disk, got %+v", path, res.Status)
		}
		ls := sh(t, sb, `stat -c %s `+path)
		if n, _ := strconv.ParseInt(strings.TrimSpace(ls.Stdout), 10, 64); n > disk {
			t.Errorf("%s grew to %d bytes", path, n)
		}
	}
	for _, c := range []struct{ path, mib string }{{"/workspace/big", "64"}, {"/home/sandbox/big", "64"}, {"/var/tmp/big", "64"}, {"/tmp/big", "48"}} {
		fill(c.path, c.mib)
		if c.path == "/workspace/big" {
			// the disk is full now: the host pays at most the quota
			// (margin for other test packages writing meanwhile)
			if drop := freeBefore - free(); drop > disk+24<<20 {
				t.Errorf("host disk free space dropped by %d MiB with a %d MiB quota", drop>>20, disk>>20)
			}
		}
		if r := sh(t, sb, `rm -f `+c.path); r.Status.Code != 0 {
			t.Fatalf("rm: %+v", r)
		}
	}
	// sizes: /workspace shares the disk quota, /tmp has its own
	r := sh(t, sb, `df -k /workspace /tmp | tail -2`)
	for i, want := range []int64{disk >> 10, tmp >> 10} {
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		if len(lines) != 2 {
			t.Fatalf("df: %q", r.Stdout)
		}
		f := strings.Fields(lines[i])
		if n, _ := strconv.ParseInt(f[1], 10, 64); n > want || n < want*85/100 {
			t.Errorf("df: %s is %sk, want at most %dk (and not much less)", f[len(f)-1], f[1], want)
		}
	}

	// inodes: the writable layer holds at most Limits.Inodes files
	r = sh(t, sb, `i=0; while [ $i -lt 3000 ]; do if ! true > /workspace/f$i; then echo "failed at $i"; exit 7; fi; i=$((i+1)); done; echo created all`)
	if r.Status.Code == 0 || !strings.HasPrefix(r.Stdout, "failed at") {
		t.Errorf("ESCAPE: created 3000 files under an inode limit of %d: %+v", inodes, r)
	} else if n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(r.Stdout, "failed at"))); n > inodes {
		t.Errorf("created %d files under an inode limit of %d", n, inodes)
	}
	if !strings.Contains(r.Stderr, "No space left on device") {
		t.Errorf("inode exhaustion: want ENOSPC, got %q", r.Stderr)
	}
	if r.Status.Limit != runtime.LimitDisk {
		t.Errorf("inode exhaustion: want limit disk, got %+v", r.Status)
	}
	if r := sh(t, sb, `true > /workspace/one-more`); r.Status.Code == 0 {
		t.Error("a file could still be created with the inode table full")
	}
	if r := sh(t, sb, `rm -f /workspace/f*; true > /workspace/one-more && echo ok`); r.Stdout != "ok\n" {
		t.Errorf("sandbox unusable after freeing the inodes: %+v", r)
	}

	img := sb.(*sandbox).b.diskImage(sb.ID())
	createMu.Lock()
	err := sb.Destroy(context.Background())
	createMu.Unlock()
	if err != nil {
		t.Fatalf("destroy: %v", err)
	}
	// The disk image (unlinked once attached) is freed with its loop device:
	// no loop device may still hold it. (Host free space is no measure here:
	// other test packages write at the same time.)
	deadline := time.Now().Add(5 * time.Second)
	for {
		held := ""
		files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), img) {
				held = f + ": " + strings.TrimSpace(string(b))
			}
		}
		if held == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("LEAK: the sandbox's disk is still attached after destroy: %s", held)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Descriptor exhaustion stops at RLIMIT_NOFILE, which cannot be raised.
func TestEscapeResNoFile(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := escSandbox(t, withProbe(t))
	pr := mustProbe(t, sb, "nofile")
	if pr.OK || pr.Errno != "EMFILE" {
		t.Errorf("nofile: want EMFILE, got %s", pr)
	}
	if pr.N > DefaultNoFile || pr.N < 100 {
		t.Errorf("opened %d descriptors, want at most RLIMIT_NOFILE %d", pr.N, DefaultNoFile)
	}
	assertDenied(t, mustProbe(t, sb, "rlimit-raise"), errPerm...)
	r := run(t, sb, runtime.ExecRequest{Argv: []string{"/bin/bash", "-c", `ulimit -n; ulimit -Hn; ulimit -c; ulimit -u`}})
	// RLIMIT_NPROC caps commands on v2; on v1 their own pids cgroup does,
	// and the rlimit is a backstop above it.
	nproc := DefaultPids
	if newTestBackend(t).CgroupMode() == "v1" {
		nproc += agentPidsReserve
	}
	if f := strings.Fields(r.Stdout); len(f) != 4 || f[0] != strconv.Itoa(DefaultNoFile) || f[1] != strconv.Itoa(DefaultNoFile) || f[2] != "0" || f[3] != strconv.Itoa(nproc) {
		t.Errorf("rlimits nofile soft/hard, core, nproc: %q", r.Stdout)
	}
}

// Spinning every core under a CPU limit of 0.5 uses about half a CPU.
func TestEscapeResCPU(t *testing.T) {
	needRuntime(t)
	// Not parallel: a loaded host would make the lower bound meaningless.
	sb := escSandbox(t, func(s *runtime.Spec) {
		withProbe(t)(s)
		s.Limits.CPUs = 0.5
	})
	s := impl(t, sb)
	before, err := s.Cgroup().Stats()
	if err != nil {
		t.Fatal(err)
	}
	threads := strconv.Itoa(max(2, goruntime.NumCPU()))
	pr, res, ok := runProbe(t, sb, "spin", "2", threads)
	after, _ := s.Cgroup().Stats()
	if !ok || !pr.OK {
		t.Fatalf("spin: %s %+v", pr, res.Status)
	}
	wall := res.Status.Duration
	used := time.Duration(after.CPUUsageNS - before.CPUUsageNS)
	userSys := res.Status.UserTime + res.Status.SystemTime
	t.Logf("spin %s threads: wall %s, cgroup cpu %s, rusage %s", threads, wall, used, userSys)
	limit := time.Duration(0.5 * 1.3 * float64(wall))
	if used > limit || userSys > limit {
		t.Errorf("CPU quota not enforced: %s of CPU (cgroup) / %s (rusage) in %s wall, limit 0.5 CPU", used, userSys, wall)
	}
	if used < time.Duration(0.2*float64(wall)) {
		t.Errorf("the spin used only %s of CPU in %s: the test is void", used, wall)
	}
}

// Gigabytes on stdout are capped, counted and marked truncated, and the
// daemon's memory stays flat.
func TestEscapeResOutput(t *testing.T) {
	needRuntime(t)
	// Not parallel: it measures this process's heap.
	sb := escSandbox(t, nil)
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				var m goruntime.MemStats
				goruntime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
	}()
	const total = 2 << 30
	const limit = 1 << 20
	res := run(t, sb, runtime.ExecRequest{Argv: []string{"head", "-c", strconv.Itoa(total), "/dev/zero"}, OutputLimit: limit})
	close(stop)
	wg.Wait()
	st := res.Status
	if !st.StdoutTruncated || st.StdoutBytes <= limit {
		t.Errorf("want stdout truncated and counted past the limit, got %+v", st)
	}
	if st.StdoutBytes != total {
		t.Errorf("StdoutBytes = %d, want %d (everything the command wrote)", st.StdoutBytes, total)
	}
	if n := len(res.Stdout); n < limit || n > limit+200 {
		t.Errorf("captured %d bytes of stdout, want the %d-byte limit plus a marker", n, limit)
	}
	if !strings.Contains(res.Stdout[max(0, len(res.Stdout)-200):], "truncated") {
		t.Errorf("no truncation marker at the end of the output")
	}
	if peak > 64<<20 {
		t.Errorf("heap in use peaked at %d MiB (base %d MiB) while 2GiB went through stdout", peak>>20, base>>20)
	}
	t.Logf("heap in use: base %d MiB, peak %d MiB; %s for 2GiB", base>>20, peak>>20, st.Duration)
}

// Threat model, Resources: sandboxes' disks are never in memory (their
// contents would count against no memory limit), and a disk image left
// by a crash before its attach is reaped.
func TestDiskDir(t *testing.T) {
	needRuntime(t)
	t.Setenv("AIRLOCK_DISKS_IN_MEMORY", "")
	mem := t.TempDir()
	if err := syscall.Mount("airlock-test", mem, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mem, syscall.MNT_DETACH) })
	_, err := New(Config{StateDir: filepath.Join(testRoot, "state"), DiskDir: mem, CgroupParent: cgroupParent})
	if err == nil || !strings.Contains(err.Error(), "in memory") {
		t.Errorf("a disk dir on a tmpfs: %v, want a refusal", err)
	}
	b, err := New(Config{StateDir: filepath.Join(testRoot, "state"), CgroupParent: cgroupParent})
	if err != nil {
		t.Fatal(err)
	}
	left, fresh := b.diskImage("0123456789ab"), b.diskImage("ba9876543210")
	for _, p := range []string{left, fresh} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-3 * time.Minute)
	if err := os.Chtimes(left, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reap(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("a leftover disk image was not reaped: %v", err)
	}
	// A young one may be another airlock's (same data dir, other state
	// dir) in the making.
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a young disk image was reaped: %v", err)
	}
	_ = os.Remove(fresh)
}

// holdNet is a runtime.Network whose proxy holds every connection open
// until the sandbox's side closes it, as an upstream that never answers
// would, and counts what the backend refused (runtime.ProxyRefusals).
type holdNet struct {
	open, most, refusals atomic.Int64
	mu                   sync.Mutex
	reason               string
}

func (n *holdNet) ProxyConn(c net.Conn, pid int) {
	defer c.Close()
	if o := n.open.Add(1); o > n.most.Load() {
		n.most.Store(o) // (racy max: only a witness)
	}
	defer n.open.Add(-1)
	_, _ = io.Copy(io.Discard, c)
}

func (n *holdNet) DNS(context.Context, []byte, int) ([]byte, error) {
	return nil, errors.New("no DNS here")
}

func (n *holdNet) ProxyRefused(pid int, reason string) {
	n.refusals.Add(1)
	n.mu.Lock()
	n.reason = reason
	n.mu.Unlock()
}

// A command that opens thousands of idle proxy connections must not take
// the agent (PID 1) down: each one used to cost the agent a read of all
// of /proc/net/tcp and of every /proc/*/fd, all at once, until the
// sandbox hit its memory limit and died. The agent stays up within a
// modest memory limit, the sandbox keeps running and executing, and the
// connections beyond the sandbox's cap are refused, with a reason, and
// reported for the record.
func TestEscapeResProxyConnFlood(t *testing.T) {
	needRuntime(t)
	const conns, capConns = 3000, 100
	hn := &holdNet{}
	sb := escSandbox(t, func(s *runtime.Spec) {
		withProbe(t)(s)
		s.Network = hn
		s.MaxProxyConns = capConns
		s.Limits.MemoryBytes = 160 << 20
	})
	s := impl(t, sb)
	start := time.Now()
	res, err := execWait(sb, runtime.ExecRequest{Argv: []string{"/workspace/probe", "proxy-flood", strconv.Itoa(conns), "15s", strconv.Itoa(capConns)}})
	select {
	case <-sb.Done():
		t.Fatalf("the sandbox died under %d idle proxy connections after %s (%v; %s; agent: %s)", conns, time.Since(start).Round(time.Millisecond), err, memNote(s), initLogHead(s))
	default:
	}
	t.Logf("memory: %s", memNote(s))
	var pr probeResult
	if err != nil || json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &pr) != nil {
		t.Fatalf("the probe gave no result: %v, %+v, %q %q", err, res.Status, res.Stdout, res.Stderr)
	}
	t.Logf("flood: %s in %s", pr, time.Since(start).Round(time.Millisecond))
	if !pr.OK {
		t.Fatalf("the probe could not open its connections: %s", pr)
	}
	if pr.N > capConns {
		t.Errorf("%d connections still open, beyond the cap of %d: %s", pr.N, capConns, pr)
	}
	if m := hn.most.Load(); m > capConns {
		t.Errorf("the host served %d connections at once, beyond the cap of %d", m, capConns)
	}
	if !strings.Contains(pr.Detail, "open proxy connections") && !strings.Contains(pr.Detail, "busy") {
		t.Errorf("the refusals do not say why: %s", pr)
	}
	if hn.refusals.Load() == 0 {
		t.Errorf("no refusal was reported to the Network for the record")
	}
	// The agent still works: a command runs, and new connections are
	// served once the flood is gone.
	if r, err := execWait(sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo alive"}}); err != nil || strings.TrimSpace(r.Stdout) != "alive" {
		t.Fatalf("exec after the flood: %q, %v (agent: %s)", r.Stdout, err, initLogHead(s))
	}
	select {
	case <-sb.Done():
		t.Fatalf("the sandbox died after the flood (agent: %s)", initLogHead(s))
	default:
	}
}

// memNote says what the sandbox's memory group saw.
func memNote(s *sandbox) string {
	st, err := s.Cgroup().Stats()
	if err != nil {
		return "memory stats: " + err.Error()
	}
	return fmt.Sprintf("memory peak %d MiB, now %d MiB, %d OOM kills", st.MemoryPeak>>20, st.MemoryCurrent>>20, st.OOMKills)
}
