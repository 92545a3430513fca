package cgroups

// Tests against FAKE hierarchies: ordinary directories in t.TempDir() made
// with NewHierarchy. They check which files Create writes and with what
// formats, and how Stats parses the kernel's files, but nothing here is
// enforced by a kernel. Real cgroup v2 enforcement cannot be exercised on
// this project's v1-hybrid CI machine (its cgroup2 mount at
// /sys/fs/cgroup/unified has no controllers): v2_real_test.go's tests skip
// there, and test/vm runs them in a VM with a pure v2 kernel.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func writeFixture(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := string(b); got != want {
		t.Errorf("%s = %q, want %q", path, got, want)
	}
}

func fakeV2(t *testing.T) (*Hierarchy, string) {
	t.Helper()
	root := t.TempDir()
	writeFixture(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n")
	writeFixture(t, filepath.Join(root, "cgroup.subtree_control"), "")
	h, err := NewHierarchy(V2, root)
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode() != V2 {
		t.Fatalf("mode %v", h.Mode())
	}
	return h, root
}

func TestV2FakeCreateWritesLimits(t *testing.T) {
	h, root := fakeV2(t)
	g, err := h.Create("airlock", "sb1", Limits{MemoryBytes: 64 << 20, Pids: 16, CPUs: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	gd := filepath.Join(root, "airlock", "sb1")
	if !slices.Equal(g.Paths(), []string{gd}) {
		t.Errorf("Paths() = %v, want [%s]", g.Paths(), gd)
	}
	checkFile(t, filepath.Join(root, "cgroup.subtree_control"), "+memory +pids +cpu")
	checkFile(t, filepath.Join(root, "airlock", "cgroup.subtree_control"), "+memory +pids +cpu")
	checkFile(t, filepath.Join(gd, "memory.max"), "67108864")
	checkFile(t, filepath.Join(gd, "memory.swap.max"), "0")
	checkFile(t, filepath.Join(gd, "pids.max"), "16")
	checkFile(t, filepath.Join(gd, "cpu.max"), "150000 100000")
	if _, err := os.Stat(filepath.Join(gd, "cgroup.subtree_control")); err == nil {
		t.Error("Create enabled controllers in the group itself")
	}

	// Unlimited group; controllers already enabled in the chain are not
	// requested again (the file would be rewritten otherwise).
	writeFixture(t, filepath.Join(root, "airlock", "cgroup.subtree_control"), "memory pids cpu io\n")
	g2, err := h.Create("airlock", "sb2", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(root, "airlock", "cgroup.subtree_control"), "memory pids cpu io\n")
	d2 := g2.Paths()[0]
	checkFile(t, filepath.Join(d2, "memory.max"), "max")
	checkFile(t, filepath.Join(d2, "memory.swap.max"), "max")
	checkFile(t, filepath.Join(d2, "pids.max"), "max")
	checkFile(t, filepath.Join(d2, "cpu.max"), "max 100000")

	// Only the missing controllers are requested.
	writeFixture(t, filepath.Join(root, "cgroup.subtree_control"), "cpu memory\n")
	if _, err := h.Create("other", "x", Limits{CPUs: 0.25}); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(root, "cgroup.subtree_control"), "+pids")
	checkFile(t, filepath.Join(root, "other", "cgroup.subtree_control"), "+memory +pids +cpu")
	checkFile(t, filepath.Join(root, "other", "x", "cpu.max"), "25000 100000")

	names, err := h.List("airlock")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"sb1", "sb2"}) {
		t.Errorf("List = %v", names)
	}
	if _, err := h.Create("airlock", "sb1", Limits{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("duplicate Create: want ErrExist, got %v", err)
	}

	fd, ok := g.CgroupFD()
	if !ok {
		t.Fatal("CgroupFD on v2 returned false")
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("CgroupFD fd is not a directory: %v %o", err, st.Mode)
	}
	unix.Close(fd)
}

func TestV2FakeCreateFailureCleansUp(t *testing.T) {
	h, root := fakeV2(t)
	// An unusable root subtree_control (a directory here) fails Create
	// after it made the parent: the parent must be removed again.
	sc := filepath.Join(root, "cgroup.subtree_control")
	os.Remove(sc)
	if err := os.Mkdir(sc, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create("fresh", "sb", Limits{}); err == nil {
		t.Fatal("Create with broken root subtree_control succeeded")
	}
	if _, err := os.Stat(filepath.Join(root, "fresh")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("parent made by a failed Create left behind: %v", err)
	}
	os.Remove(sc)

	// Make parent/cgroup.subtree_control unusable in the same way.
	if err := os.MkdirAll(filepath.Join(root, "airlock", "cgroup.subtree_control"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := h.Create("airlock", "sb", Limits{})
	if err == nil || !strings.Contains(err.Error(), "cgroup create airlock/sb") {
		t.Fatalf("want create error, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "airlock", "sb")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("group dir left behind: %v", err)
	}
	// airlock existed before, so it must survive.
	if _, err := os.Stat(filepath.Join(root, "airlock")); err != nil {
		t.Errorf("pre-existing parent removed: %v", err)
	}
}

func TestV2FakeStats(t *testing.T) {
	h, _ := fakeV2(t)
	g, err := h.Create("airlock", "s", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d := g.Paths()[0]
	writeFixture(t, filepath.Join(d, "memory.events"), "low 0\nhigh 0\nmax 17\noom 3\noom_kill 2\noom_group_kill 0\n")
	writeFixture(t, filepath.Join(d, "memory.peak"), "104857600\n")
	writeFixture(t, filepath.Join(d, "memory.current"), "52428800\n")
	writeFixture(t, filepath.Join(d, "pids.events"), "max 5\n")
	writeFixture(t, filepath.Join(d, "pids.current"), "3\n")
	writeFixture(t, filepath.Join(d, "cpu.stat"), "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n"+
		"core_sched.force_idle_usec 0\nnr_periods 10\nnr_throttled 4\nthrottled_usec 99\nnr_bursts 0\nburst_usec 0\n")
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{OOMKills: 2, PidsMaxHits: 5, MemoryPeak: 100 << 20, MemoryCurrent: 50 << 20, CPUUsageNS: 1234567000, Pids: 3}
	if st != want {
		t.Errorf("Stats = %+v\nwant    %+v", st, want)
	}
	// LimitHits: the same counters, pids.peak among them when there is one
	writeFixture(t, filepath.Join(d, "pids.peak"), "7\n")
	if lh, err := g.LimitHits(); err != nil || lh != (Stats{OOMKills: 2, PidsMaxHits: 5, PidsPeak: 7}) {
		t.Errorf("LimitHits = %+v, %v", lh, err)
	}
	os.Remove(filepath.Join(d, "pids.peak"))
	if lh, err := g.LimitHits(); err != nil || lh != (Stats{OOMKills: 2, PidsMaxHits: 5}) {
		t.Errorf("LimitHits without pids.peak = %+v, %v", lh, err)
	}

	// memory.peak is optional (kernels before 5.19).
	os.Remove(filepath.Join(d, "memory.peak"))
	st, err = g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	want.MemoryPeak = 0
	if st != want {
		t.Errorf("Stats without memory.peak = %+v", st)
	}

	// Malformed and missing files are errors naming the file.
	writeFixture(t, filepath.Join(d, "pids.events"), "max lots\n")
	if _, err := g.Stats(); err == nil || !strings.Contains(err.Error(), "pids.events") {
		t.Errorf("malformed pids.events: got %v", err)
	}
	writeFixture(t, filepath.Join(d, "pids.events"), "max 5\n")
	writeFixture(t, filepath.Join(d, "cpu.stat"), "user_usec 1\n")
	if _, err := g.Stats(); err == nil || !strings.Contains(err.Error(), "usage_usec") {
		t.Errorf("cpu.stat without usage_usec: got %v", err)
	}
	os.Remove(filepath.Join(d, "memory.current"))
	if _, err := g.Stats(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing memory.current: got %v", err)
	}
}

func TestV2FakeFreezeProcsDestroy(t *testing.T) {
	h, root := fakeV2(t)
	g, err := h.Create("airlock", "f", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d := g.Paths()[0]

	writeFixture(t, filepath.Join(d, "cgroup.events"), "populated 1\nfrozen 1\n")
	if err := g.Freeze(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(d, "cgroup.freeze"), "1")
	if err := g.Thaw(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(d, "cgroup.freeze"), "0")

	// A group that never reports frozen times out.
	defer func(old time.Duration) { freezeTimeout = old }(freezeTimeout)
	freezeTimeout = 50 * time.Millisecond
	writeFixture(t, filepath.Join(d, "cgroup.events"), "populated 1\nfrozen 0\n")
	if err := g.Freeze(); err == nil {
		t.Error("Freeze succeeded although cgroup.events says frozen 0")
	}

	// Procs reads cgroup.procs of the group and of nested groups.
	if err := g.AddProc(4242); err != nil {
		t.Fatal(err)
	}
	if err := g.AddProc(17); err != nil {
		t.Fatal(err)
	}
	writeFixture(t, filepath.Join(d, "nested", "cgroup.procs"), "99\n")
	pids, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pids, []int{17, 99, 4242}) {
		t.Errorf("Procs = %v", pids)
	}
	// An emulated tree never gets its (made-up) pids signalled.
	if err := g.Destroy(); err == nil {
		t.Error("Destroy signalled made-up pids in an emulated tree")
	}
	writeFixture(t, filepath.Join(d, "cgroup.procs"), "")
	writeFixture(t, filepath.Join(d, "nested", "cgroup.procs"), "")
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, g.Paths())
	if err := g.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if err := h.RemoveParent("airlock"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "airlock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("parent not removed: %v", err)
	}
}

func TestV1FakeCreateWritesLimits(t *testing.T) {
	base := t.TempDir()
	for _, c := range v1Controllers {
		if err := os.Mkdir(filepath.Join(base, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h, err := NewHierarchy(V1, base)
	if err != nil {
		t.Fatal(err)
	}
	g, err := h.Create("airlock", "x", Limits{MemoryBytes: 1 << 30, Pids: 100, CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range v1Controllers {
		want = append(want, filepath.Join(base, c, "airlock", "x"))
	}
	if !slices.Equal(g.Paths(), want) {
		t.Errorf("Paths = %v, want %v", g.Paths(), want)
	}
	checkFile(t, filepath.Join(base, "memory/airlock/x/memory.limit_in_bytes"), "1073741824")
	checkFile(t, filepath.Join(base, "memory/airlock/x/memory.memsw.limit_in_bytes"), "1073741824")
	checkFile(t, filepath.Join(base, "pids/airlock/x/pids.max"), "100")
	checkFile(t, filepath.Join(base, "cpu/airlock/x/cpu.cfs_period_us"), "100000")
	checkFile(t, filepath.Join(base, "cpu/airlock/x/cpu.cfs_quota_us"), "200000")

	writeFixture(t, filepath.Join(base, "memory/airlock/x/memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n")
	writeFixture(t, filepath.Join(base, "memory/airlock/x/memory.max_usage_in_bytes"), "33554432\n")
	writeFixture(t, filepath.Join(base, "memory/airlock/x/memory.usage_in_bytes"), "4096\n")
	writeFixture(t, filepath.Join(base, "pids/airlock/x/pids.events"), "max 9\n")
	writeFixture(t, filepath.Join(base, "pids/airlock/x/pids.current"), "2\n")
	writeFixture(t, filepath.Join(base, "cpuacct/airlock/x/cpuacct.usage"), "987654321\n")
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if w := (Stats{OOMKills: 4, PidsMaxHits: 9, MemoryPeak: 32 << 20, MemoryCurrent: 4096, CPUUsageNS: 987654321, Pids: 2}); st != w {
		t.Errorf("Stats = %+v, want %+v", st, w)
	}
	if lh, err := g.LimitHits(); err != nil || lh != (Stats{OOMKills: 4, PidsMaxHits: 9}) {
		t.Errorf("LimitHits = %+v, %v", lh, err)
	}
	writeFixture(t, filepath.Join(base, "pids/airlock/x/pids.events"), "max lots\n")
	if _, err := g.LimitHits(); err == nil || !strings.Contains(err.Error(), "pids.events") {
		t.Errorf("LimitHits of a malformed pids.events: %v", err)
	}
	writeFixture(t, filepath.Join(base, "pids/airlock/x/pids.events"), "max 9\n")

	// cpu and cpuacct mounted together share one directory.
	h2, err := NewHierarchy(V1, "memory="+filepath.Join(base, "memory"), "pids="+filepath.Join(base, "pids"),
		"cpu="+filepath.Join(base, "cpu"), "cpuacct="+filepath.Join(base, "cpu"))
	if err != nil {
		t.Fatal(err)
	}
	g2, err := h2.Create("p2", "y", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g2.Paths()) != 3 {
		t.Errorf("co-mounted cpu,cpuacct: Paths = %v", g2.Paths())
	}
	if err := g2.Freeze(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Freeze without freezer: want ErrUnsupported, got %v", err)
	}
	if _, err := NewHierarchy(V1, "memory=/a", "cpu=/b"); err == nil {
		t.Error("NewHierarchy V1 without pids succeeded")
	}
	if _, err := NewHierarchy(V1, "blkio=/a"); err == nil {
		t.Error("NewHierarchy V1 with unknown controller succeeded")
	}
}

func TestValidation(t *testing.T) {
	h, root := fakeV2(t)
	bad := []struct {
		parent, name string
		lim          Limits
	}{
		{"", "x", Limits{}},
		{"airlock", "", Limits{}},
		{"airlock", "a/b", Limits{}},
		{"a/b", "x", Limits{}},
		{"airlock", "..", Limits{}},
		{"..", "x", Limits{}},
		{"airlock", ".", Limits{}},
		{"airlock", "x\x00", Limits{}},
		{"airlock", strings.Repeat("n", 256), Limits{}},
		{"airlock", "x", Limits{MemoryBytes: -1}},
		{"airlock", "x", Limits{Pids: -1}},
		{"airlock", "x", Limits{CPUs: -0.5}},
		{"airlock", "x", Limits{CPUs: 0.001}},
		{"airlock", "x", Limits{CPUs: 1e300}},
	}
	for _, c := range bad {
		if _, err := h.Create(c.parent, c.name, c.lim); err == nil {
			t.Errorf("Create(%q, %q, %+v) succeeded", c.parent, c.name, c.lim)
		}
	}
	for _, p := range []string{"", "..", "a/b"} {
		if _, err := h.List(p); err == nil {
			t.Errorf("List(%q) succeeded", p)
		}
		if _, err := h.Open(p, "x"); err == nil {
			t.Errorf("Open(%q) succeeded", p)
		}
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("invalid input created %s", e.Name())
		}
	}
	if _, err := NewHierarchy(V2); err == nil {
		t.Error("NewHierarchy(V2) without a path succeeded")
	}
	if _, err := NewHierarchy(Mode(7), "/x"); err == nil {
		t.Error("NewHierarchy with a bad mode succeeded")
	}
	if V1.String() != "v1" || V2.String() != "v2" {
		t.Errorf("Mode strings %v %v", V1, V2)
	}
}

func TestV2FakePidsSub(t *testing.T) {
	h, root := fakeV2(t)
	g, err := h.Create("airlock", "sb1", Limits{Pids: 96})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := g.CreatePidsSub("cmds", 32)
	if err != nil {
		t.Fatal(err)
	}
	gd := filepath.Join(root, "airlock", "sb1")
	checkFile(t, filepath.Join(gd, "cmds", "cgroup.type"), "threaded")
	checkFile(t, filepath.Join(gd, "cgroup.subtree_control"), "+pids")
	checkFile(t, filepath.Join(gd, "cmds", "pids.max"), "32")
	if err := sub.AddThread(1234); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(gd, "cmds", "cgroup.threads"), "1234")
	writeFixture(t, filepath.Join(gd, "cmds", "pids.events"), "max 3\n")
	if n, err := sub.MaxHits(); err != nil || n != 3 {
		t.Errorf("MaxHits = %d, %v; want 3", n, err)
	}
	if _, err := g.CreatePidsSub("cmds", 32); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second CreatePidsSub: want ErrExist, got %v", err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gd); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Destroy left %s: %v", gd, err)
	}
}

// The page cache is v2's "file" and v1's hierarchical "total_cache"
// (the group's own "cache" on kernels without it); a memory.stat that
// has neither is an error naming it, never a 0.
func TestFakePageCache(t *testing.T) {
	h, _ := fakeV2(t)
	g, err := h.Create("airlock", "pc", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d := g.Paths()[0]
	writeFixture(t, filepath.Join(d, "memory.stat"), "anon 4096\nfile 73728\nkernel 8192\nshmem 4096\nfile_mapped 0\n")
	if v, err := g.PageCache(); err != nil || v != 73728 {
		t.Errorf("v2 page cache = %d %v, want 73728", v, err)
	}
	writeFixture(t, filepath.Join(d, "memory.stat"), "anon 4096\nfile_mapped 0\n")
	if _, err := g.PageCache(); err == nil || !strings.Contains(err.Error(), "memory.stat") {
		t.Errorf("v2 memory.stat without file: %v", err)
	}

	base := t.TempDir()
	for _, c := range v1Controllers {
		if err := os.Mkdir(filepath.Join(base, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h1, err := NewHierarchy(V1, base)
	if err != nil {
		t.Fatal(err)
	}
	g1, err := h1.Create("airlock", "pc", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	stat := filepath.Join(base, "memory/airlock/pc/memory.stat")
	for body, want := range map[string]uint64{
		"cache 4096\nrss 8192\nshmem 0\ntotal_cache 12288\ntotal_rss 8192\n": 12288, // the children's too
		"cache 4096\nrss 8192\n": 4096,
	} {
		writeFixture(t, stat, body)
		if v, err := g1.PageCache(); err != nil || v != want {
			t.Errorf("v1 page cache of %q = %d %v, want %d", body, v, err, want)
		}
	}
	for _, body := range []string{"rss 8192\n", "cache lots\n"} {
		writeFixture(t, stat, body)
		if v, err := g1.PageCache(); err == nil || !strings.Contains(err.Error(), "memory.stat") {
			t.Errorf("v1 memory.stat %q: %d %v, want an error naming it", body, v, err)
		}
	}
	os.Remove(stat)
	if _, err := g1.PageCache(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing memory.stat: %v", err)
	}
}
