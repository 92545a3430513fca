package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// This CI machine: v1 hybrid, cpu and cpuacct mounted separately, a cgroup2
// at /sys/fs/cgroup/unified without controllers.
const mountinfoHybridSeparate = `22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

// A systemd hybrid host (e.g. Ubuntu 20.04): cpu and cpuacct co-mounted,
// optional fields present, a bind mount of a sub-group listed first.
const mountinfoHybridSystemd = `24 29 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
34 24 0:29 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
35 34 0:30 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
36 34 0:31 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd
90 29 0:35 /docker/abc /mnt/mem\040bind rw,relatime - cgroup cgroup rw,memory
39 34 0:34 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,cpu,cpuacct
40 34 0:35 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup rw,memory
41 34 0:36 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:18 - cgroup cgroup rw,pids
42 34 0:37 / /sys/fs/cgroup/freezer rw,nosuid,nodev,noexec,relatime shared:19 - cgroup cgroup rw,freezer
43 34 0:38 / /sys/fs/cgroup/net_cls,net_prio rw,nosuid,nodev,noexec,relatime shared:20 - cgroup cgroup rw,net_cls,net_prio
`

// A pure v2 host (e.g. Debian 12, Fedora).
const mountinfoPureV2 = `22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
23 28 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw
26 23 0:25 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
28 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
`

// setupDetect writes mountinfo and, under a fake filesystem root, the given
// files (path relative to the root -> content).
func setupDetect(t *testing.T, mountinfo string, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	mi := filepath.Join(dir, "mountinfo")
	if err := os.WriteFile(mi, []byte(mountinfo), 0o644); err != nil {
		t.Fatal(err)
	}
	fsRoot := filepath.Join(dir, "root")
	for p, c := range files {
		writeFixture(t, filepath.Join(fsRoot, p), c)
	}
	return mi, fsRoot
}

func TestDetectV1HybridSeparate(t *testing.T) {
	mi, fsRoot := setupDetect(t, mountinfoHybridSeparate, map[string]string{
		"sys/fs/cgroup/unified/cgroup.controllers": "\n", // no controllers
	})
	h, err := detect(mi, fsRoot)
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode() != V1 {
		t.Fatalf("mode %v, want v1", h.Mode())
	}
	for _, c := range v1Controllers {
		if want := filepath.Join(fsRoot, "sys/fs/cgroup", c); h.v1[c] != want {
			t.Errorf("%s at %q, want %q", c, h.v1[c], want)
		}
	}
	if len(h.v1) != len(v1Controllers) {
		t.Errorf("unexpected controllers: %v", h.v1)
	}
	g := h.newGroup("airlock", "x")
	if len(g.Paths()) != 5 {
		t.Errorf("Paths = %v, want 5 directories", g.Paths())
	}
}

func TestDetectV1HybridSystemd(t *testing.T) {
	mi, fsRoot := setupDetect(t, mountinfoHybridSystemd, map[string]string{
		"sys/fs/cgroup/unified/cgroup.controllers": "",
	})
	h, err := detect(mi, fsRoot)
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode() != V1 {
		t.Fatalf("mode %v, want v1", h.Mode())
	}
	cg := filepath.Join(fsRoot, "sys/fs/cgroup")
	want := map[string]string{
		"memory":  filepath.Join(cg, "memory"), // the root mount, not the earlier bind of /docker/abc
		"pids":    filepath.Join(cg, "pids"),
		"cpu":     filepath.Join(cg, "cpu,cpuacct"),
		"cpuacct": filepath.Join(cg, "cpu,cpuacct"),
		"freezer": filepath.Join(cg, "freezer"),
	}
	for c, w := range want {
		if h.v1[c] != w {
			t.Errorf("%s at %q, want %q", c, h.v1[c], w)
		}
	}
	g := h.newGroup("airlock", "x")
	if len(g.Paths()) != 4 {
		t.Errorf("co-mounted cpu,cpuacct should give 4 directories, got %v", g.Paths())
	}
}

func TestDetectPureV2(t *testing.T) {
	mi, fsRoot := setupDetect(t, mountinfoPureV2, map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
	})
	h, err := detect(mi, fsRoot)
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode() != V2 || h.root != filepath.Join(fsRoot, "sys/fs/cgroup") {
		t.Fatalf("got %s, want v2 at %s/sys/fs/cgroup", h, fsRoot)
	}
	g := h.newGroup("airlock", "x")
	if len(g.Paths()) != 1 || g.Paths()[0] != filepath.Join(fsRoot, "sys/fs/cgroup/airlock/x") {
		t.Errorf("Paths = %v", g.Paths())
	}
}

func TestDetectUnsupported(t *testing.T) {
	// v2 without pids and no v1 hierarchies.
	mi, fsRoot := setupDetect(t, mountinfoPureV2, map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "cpu io memory\n",
	})
	_, err := detect(mi, fsRoot)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "lacks pids") {
		t.Errorf("v2 without pids: got %v", err)
	}

	// Hybrid host whose pids hierarchy is not mounted.
	var lines []string
	for _, l := range strings.Split(mountinfoHybridSeparate, "\n") {
		if !strings.Contains(l, "rw,pids") {
			lines = append(lines, l)
		}
	}
	mi, fsRoot = setupDetect(t, strings.Join(lines, "\n"), map[string]string{
		"sys/fs/cgroup/unified/cgroup.controllers": "",
	})
	_, err = detect(mi, fsRoot)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "pids") {
		t.Errorf("v1 without pids: got %v", err)
	}

	// No cgroups at all; an unreadable mountinfo is a plain error.
	mi, fsRoot = setupDetect(t, "27 1 254:0 / / rw - ext4 /dev/vda rw\n", nil)
	if _, err := detect(mi, fsRoot); !errors.Is(err, ErrUnsupported) {
		t.Errorf("no cgroups: got %v", err)
	}
	if _, err := detect(filepath.Join(t.TempDir(), "missing"), ""); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("missing mountinfo: got %v", err)
	}
	mi, fsRoot = setupDetect(t, "garbage line\n", nil)
	if _, err := detect(mi, fsRoot); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("malformed mountinfo: got %v", err)
	}
}

func TestParseMountinfoEscapes(t *testing.T) {
	ms, err := parseMountinfo(strings.NewReader(
		`90 29 0:35 /a\134b /mnt/my\040cg\011x rw,relatime shared:3 master:1 - cgroup cgroup rw,memory` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 {
		t.Fatalf("got %d entries", len(ms))
	}
	m := ms[0]
	if m.mountPoint != "/mnt/my cg\tx" || m.root != `/a\b` || m.fsType != "cgroup" ||
		strings.Join(m.superOpts, ",") != "rw,memory" {
		t.Errorf("parsed %+v", m)
	}
	if got := unescapeMountField(`trailing\04`); got != `trailing\04` {
		t.Errorf("short escape mangled: %q", got)
	}
}

// TestDetectHost only reports what Detect finds on the machine running the
// tests; the real v1 tests check it further.
func TestDetectHost(t *testing.T) {
	h, err := Detect()
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("host: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("host cgroups: %s", h)
}
