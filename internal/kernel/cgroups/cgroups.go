// Package cgroups puts each sandbox in its own control group and enforces
// memory, pids and cpu limits on cgroup v1 and v2. Detect reads
// /proc/self/mountinfo to choose the mode: v2 when a cgroup2 mount offers
// the memory, pids and cpu controllers, otherwise the per-controller v1
// hierarchies. A Group can also be frozen, killed as a whole and destroyed,
// and reports OOM kills, pids-limit hits, memory and CPU usage.
package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by errors about missing cgroup support: no
// usable hierarchy (Detect) or a feature the hierarchy lacks (e.g. Freeze
// without a v1 freezer mount).
var ErrUnsupported = errors.New("cgroups unsupported")

// Mode is the cgroup version a Hierarchy uses.
type Mode int

const (
	// V1 uses the separately mounted v1 controller hierarchies.
	V1 Mode = iota + 1
	// V2 uses the unified cgroup2 hierarchy.
	V2
)

func (m Mode) String() string {
	switch m {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Limits are the resource limits of one group. The zero value of each field
// means "no limit".
type Limits struct {
	// MemoryBytes limits memory. v1: memory.limit_in_bytes and, when the
	// kernel accounts swap, memory.memsw.limit_in_bytes with the same value
	// (so the group cannot use swap); v2: memory.max and memory.swap.max=0.
	MemoryBytes int64
	// Pids limits the number of tasks (pids.max).
	Pids int64
	// CPUs limits CPU time as a number of CPUs: 1.5 is 150% of one CPU.
	// Written as a CFS quota per 100ms period (v1 cpu.cfs_quota_us and
	// cpu.cfs_period_us, v2 cpu.max). Must be 0 or at least 0.01.
	CPUs float64
}

// Stats are the counters of one group.
type Stats struct {
	OOMKills      uint64 // processes killed by the OOM killer in the group
	PidsMaxHits   uint64 // forks refused because of the pids limit
	MemoryPeak    uint64 // bytes; 0 if the kernel does not report it
	MemoryCurrent uint64 // bytes
	CPUUsageNS    uint64 // total CPU time consumed, nanoseconds
	Pids          uint64 // tasks currently in the group
	PidsPeak      uint64 // most tasks ever in the group; 0 if the kernel does not report it
}

// CPU quota parameters.
const (
	cpuPeriodUS   = 100000
	minCPUQuotaUS = 1000 // the kernel refuses CFS quotas below 1ms
)

// Timeouts; variables so tests can shorten them.
var (
	freezeTimeout = 5 * time.Second
	killTimeout   = 10 * time.Second
	rmdirTimeout  = 2 * time.Second
)

// Hierarchy is a detected (or explicitly configured) cgroup layout. It is
// immutable and safe for concurrent use.
type Hierarchy struct {
	mode Mode
	root string            // V2: the cgroup2 directory groups are created under
	v1   map[string]string // V1: controller -> mount point
	// emulate is set by NewHierarchy: the tree is an ordinary directory
	// tree standing in for cgroupfs, so interface files that do not exist
	// are created on write and directories are removed recursively.
	emulate bool
}

// NewHierarchy returns a Hierarchy rooted at explicit paths instead of the
// detected mounts. It is meant for tests: the paths may be ordinary
// directories, in which case interface files are created when written
// (nothing enforces anything) and Destroy removes directories recursively.
//
// For V2, paths is the single directory groups are created under. For V1,
// paths is either one base directory holding a sub-directory per controller
// (<base>/memory, <base>/pids, <base>/cpu, <base>/cpuacct, <base>/freezer)
// or a list of "controller=dir" entries, which must include memory, pids
// and cpu (cpuacct and freezer are optional).
func NewHierarchy(mode Mode, paths ...string) (*Hierarchy, error) {
	switch mode {
	case V2:
		if len(paths) != 1 || paths[0] == "" {
			return nil, fmt.Errorf("cgroup hierarchy: v2 needs exactly one root path, got %q", paths)
		}
		return &Hierarchy{mode: V2, root: filepath.Clean(paths[0]), emulate: true}, nil
	case V1:
		h := &Hierarchy{mode: V1, v1: map[string]string{}, emulate: true}
		if len(paths) == 1 && !strings.Contains(paths[0], "=") {
			if paths[0] == "" {
				return nil, fmt.Errorf("cgroup hierarchy: empty v1 base path")
			}
			for _, c := range v1Controllers {
				h.v1[c] = filepath.Join(paths[0], c)
			}
			return h, nil
		}
		for _, p := range paths {
			ctrl, dir, ok := strings.Cut(p, "=")
			if !ok || dir == "" || !contains(v1Controllers, ctrl) {
				return nil, fmt.Errorf("cgroup hierarchy: bad v1 path %q (want controller=dir with controller one of %s)",
					p, strings.Join(v1Controllers, ","))
			}
			h.v1[ctrl] = filepath.Clean(dir)
		}
		for _, c := range requiredControllers {
			if _, ok := h.v1[c]; !ok {
				return nil, fmt.Errorf("cgroup hierarchy: v1 needs a %s path: %w", c, ErrUnsupported)
			}
		}
		return h, nil
	}
	return nil, fmt.Errorf("cgroup hierarchy: unknown mode %v", mode)
}

// Mode returns the cgroup version in use.
func (h *Hierarchy) Mode() Mode { return h.mode }

// String describes the hierarchy, e.g. "v2 /sys/fs/cgroup" or
// "v1 cpu=/sys/fs/cgroup/cpu memory=/sys/fs/cgroup/memory ...".
func (h *Hierarchy) String() string {
	if h.mode == V2 {
		return "v2 " + h.root
	}
	var parts []string
	for _, c := range v1Controllers {
		if d, ok := h.v1[c]; ok {
			parts = append(parts, c+"="+d)
		}
	}
	return "v1 " + strings.Join(parts, " ")
}

// bases returns the hierarchy roots groups live under, deduplicated (v1
// controllers mounted together share one), each with the controllers it
// serves.
func (h *Hierarchy) bases() []base {
	if h.mode == V2 {
		return []base{{dir: h.root, ctrls: append([]string(nil), v1Controllers...)}}
	}
	var out []base
	for _, c := range v1Controllers {
		d, ok := h.v1[c]
		if !ok {
			continue
		}
		found := false
		for i := range out {
			if out[i].dir == d {
				out[i].ctrls = append(out[i].ctrls, c)
				found = true
			}
		}
		if !found {
			out = append(out, base{dir: d, ctrls: []string{c}})
		}
	}
	return out
}

type base struct {
	dir   string
	ctrls []string
}

// Group is one sandbox's control group: one directory per hierarchy. Its
// methods are safe for concurrent use.
type Group struct {
	h            *Hierarchy
	parent, name string
	dirs         []string          // unique directories, in bases() order
	ctrl         map[string]string // controller -> directory
}

func (h *Hierarchy) newGroup(parent, name string) *Group {
	g := &Group{h: h, parent: parent, name: name, ctrl: map[string]string{}}
	for _, b := range h.bases() {
		d := filepath.Join(b.dir, parent, name)
		g.dirs = append(g.dirs, d)
		for _, c := range b.ctrls {
			g.ctrl[c] = d
		}
	}
	return g
}

// validName accepts a single, plain path component.
func validName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty %s", what)
	case s == "." || s == "..":
		return fmt.Errorf("invalid %s %q", what, s)
	case strings.ContainsAny(s, "/\x00"):
		return fmt.Errorf("invalid %s %q: must be a single path component", what, s)
	case len(s) > 255:
		return fmt.Errorf("invalid %s: longer than 255 bytes", what)
	}
	return nil
}

func (lim Limits) validate() error {
	if lim.MemoryBytes < 0 {
		return fmt.Errorf("negative memory limit %d", lim.MemoryBytes)
	}
	if lim.Pids < 0 {
		return fmt.Errorf("negative pids limit %d", lim.Pids)
	}
	if math.IsNaN(lim.CPUs) || math.IsInf(lim.CPUs, 0) || lim.CPUs < 0 {
		return fmt.Errorf("invalid cpu limit %v", lim.CPUs)
	}
	if lim.CPUs > 0 {
		q := lim.CPUs * cpuPeriodUS
		if q < minCPUQuotaUS-0.5 {
			return fmt.Errorf("cpu limit %v too small (minimum %.2f)", lim.CPUs, float64(minCPUQuotaUS)/cpuPeriodUS)
		}
		if q > math.MaxInt64/4 {
			return fmt.Errorf("cpu limit %v too large", lim.CPUs)
		}
	}
	return nil
}

// cpuQuotaUS returns the CFS quota for lim.CPUs, or -1 for no limit.
func (lim Limits) cpuQuotaUS() int64 {
	if lim.CPUs == 0 {
		return -1
	}
	q := int64(math.Round(lim.CPUs * cpuPeriodUS))
	if q < minCPUQuotaUS {
		q = minCPUQuotaUS
	}
	return q
}

// Create makes the group "<parent>/<name>" in every hierarchy it needs
// (v1: memory, pids, cpu, plus cpuacct if mounted separately and freezer if
// mounted; v2: one directory, after enabling memory, pids and cpu in the
// cgroup.subtree_control of the root and of parent). The parent is created
// if missing. It then writes lim. On error everything Create made is
// removed again. It fails with an error wrapping fs.ErrExist if the group
// already exists.
func (h *Hierarchy) Create(parent, name string, lim Limits) (_ *Group, err error) {
	if err := validName("parent", parent); err != nil {
		return nil, fmt.Errorf("cgroup create %s/%s: %w", parent, name, err)
	}
	if err := validName("name", name); err != nil {
		return nil, fmt.Errorf("cgroup create %s/%s: %w", parent, name, err)
	}
	if err := lim.validate(); err != nil {
		return nil, fmt.Errorf("cgroup create %s/%s: %w", parent, name, err)
	}
	g := h.newGroup(parent, name)

	var madeParents, madeGroups []string
	defer func() {
		if err == nil {
			return
		}
		for i := len(madeGroups) - 1; i >= 0; i-- {
			_ = h.removeDir(madeGroups[i])
		}
		for i := len(madeParents) - 1; i >= 0; i-- {
			_ = h.removeEmptyParent(madeParents[i])
		}
	}()
	wrap := func(err error) error {
		return fmt.Errorf("cgroup create %s/%s: %w", parent, name, err)
	}

	for _, b := range h.bases() {
		pdir := filepath.Join(b.dir, parent)
		if err := os.Mkdir(pdir, 0o755); err == nil {
			madeParents = append(madeParents, pdir)
		} else if !errors.Is(err, fs.ErrExist) {
			return nil, wrap(err)
		}
		if h.mode == V2 {
			if err := h.enableControllers(b.dir, pdir); err != nil {
				return nil, wrap(err)
			}
		}
		gdir := filepath.Join(pdir, name)
		if err := os.Mkdir(gdir, 0o755); err != nil {
			return nil, wrap(err)
		}
		madeGroups = append(madeGroups, gdir)
	}
	if err := g.setLimits(lim); err != nil {
		return nil, wrap(err)
	}
	return g, nil
}

// enableControllers makes sure memory, pids and cpu are enabled in the
// subtree_control of root and parent, so that parent's children get them.
func (h *Hierarchy) enableControllers(root, parent string) error {
	for _, dir := range []string{root, parent} {
		cur, err := readString(dir, "cgroup.subtree_control")
		if err != nil && !(h.emulate && errIsNotExist(err)) {
			return err
		}
		var enabled []string
		for _, f := range strings.Fields(cur) {
			// The kernel lists "memory pids"; an emulated file may still
			// hold the "+memory +pids" that was written to it.
			enabled = append(enabled, strings.TrimPrefix(f, "+"))
		}
		missing := missingFrom(enabled, requiredControllers)
		if len(missing) == 0 {
			continue
		}
		req := "+" + strings.Join(missing, " +")
		if err := h.write(dir, "cgroup.subtree_control", req); err != nil {
			return err
		}
	}
	return nil
}

// Open returns the existing group "<parent>/<name>", e.g. to reap it after a
// crash. It succeeds if the group directory exists in at least one
// hierarchy (a half-created or half-destroyed group can still be
// destroyed); otherwise the error wraps fs.ErrNotExist.
func (h *Hierarchy) Open(parent, name string) (*Group, error) {
	if err := validName("parent", parent); err != nil {
		return nil, fmt.Errorf("cgroup open %s/%s: %w", parent, name, err)
	}
	if err := validName("name", name); err != nil {
		return nil, fmt.Errorf("cgroup open %s/%s: %w", parent, name, err)
	}
	g := h.newGroup(parent, name)
	var firstErr error
	for _, d := range g.dirs {
		fi, err := os.Stat(d)
		if err == nil && fi.IsDir() {
			return g, nil
		}
		if err == nil {
			err = fmt.Errorf("%s: not a directory", d)
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("cgroup open %s/%s: %w", parent, name, firstErr)
}

// List returns the sorted names of the groups under parent, over all
// hierarchies. A missing parent yields an empty list.
func (h *Hierarchy) List(parent string) ([]string, error) {
	if err := validName("parent", parent); err != nil {
		return nil, fmt.Errorf("cgroup list %s: %w", parent, err)
	}
	seen := map[string]bool{}
	for _, b := range h.bases() {
		ents, err := os.ReadDir(filepath.Join(b.dir, parent))
		if errIsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cgroup list %s: %w", parent, err)
		}
		for _, e := range ents {
			if e.IsDir() {
				seen[e.Name()] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// RemoveParent removes the (empty) parent directory from every hierarchy.
// Missing directories are fine; a parent that still holds groups is an
// error.
func (h *Hierarchy) RemoveParent(parent string) error {
	if err := validName("parent", parent); err != nil {
		return fmt.Errorf("cgroup remove %s: %w", parent, err)
	}
	var errs []error
	for _, b := range h.bases() {
		if err := h.removeEmptyParent(filepath.Join(b.dir, parent)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cgroup remove %s: %w", parent, err)
	}
	return nil
}

func (h *Hierarchy) removeEmptyParent(dir string) error {
	ents, err := os.ReadDir(dir)
	if errIsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			return &fs.PathError{Op: "rmdir", Path: dir, Err: unix.ENOTEMPTY}
		}
	}
	return h.removeDir(dir)
}

// removeDir removes one cgroup directory, retrying briefly while the kernel
// reports it busy. A missing directory is not an error.
func (h *Hierarchy) removeDir(dir string) error {
	if h.emulate {
		return os.RemoveAll(dir)
	}
	deadline := time.Now().Add(rmdirTimeout)
	delay := time.Millisecond
	for {
		err := unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.EBUSY || time.Now().After(deadline) {
			return &fs.PathError{Op: "rmdir", Path: dir, Err: err}
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// Name returns the group's name.
func (g *Group) Name() string { return g.name }

// Parent returns the group's parent name.
func (g *Group) Parent() string { return g.parent }

// Mode returns the cgroup version of the group's hierarchy.
func (g *Group) Mode() Mode { return g.h.mode }

// Paths returns the group's directories, one per hierarchy (v1: in the
// order memory, pids, cpu, cpuacct, freezer, skipping absent or co-mounted
// ones; v2: a single directory).
func (g *Group) Paths() []string { return append([]string(nil), g.dirs...) }

func (g *Group) String() string { return g.parent + "/" + g.name }

// SetLimits (re)writes all limits of the group; zero fields remove a limit.
func (g *Group) SetLimits(lim Limits) error {
	if err := lim.validate(); err != nil {
		return fmt.Errorf("cgroup set limits %s: %w", g, err)
	}
	if err := g.setLimits(lim); err != nil {
		return fmt.Errorf("cgroup set limits %s: %w", g, err)
	}
	return nil
}

func (g *Group) setLimits(lim Limits) error {
	if g.h.mode == V2 {
		return g.setLimitsV2(lim)
	}
	return g.setLimitsV1(lim)
}

func (g *Group) setLimitsV2(lim Limits) error {
	d := g.dirs[0]
	mem, swap := "max", "max"
	if lim.MemoryBytes > 0 {
		mem, swap = strconv.FormatInt(lim.MemoryBytes, 10), "0"
	}
	if err := g.h.write(d, "memory.max", mem); err != nil {
		return err
	}
	// memory.swap.max is missing when the kernel does not account swap.
	if g.h.emulate || fileExists(d, "memory.swap.max") {
		if err := g.h.write(d, "memory.swap.max", swap); err != nil {
			return err
		}
	}
	pids := "max"
	if lim.Pids > 0 {
		pids = strconv.FormatInt(lim.Pids, 10)
	}
	if err := g.h.write(d, "pids.max", pids); err != nil {
		return err
	}
	quota := "max"
	if q := lim.cpuQuotaUS(); q > 0 {
		quota = strconv.FormatInt(q, 10)
	}
	return g.h.write(d, "cpu.max", quota+" "+strconv.Itoa(cpuPeriodUS))
}

func (g *Group) setLimitsV1(lim Limits) error {
	md := g.ctrl["memory"]
	mem := "-1"
	if lim.MemoryBytes > 0 {
		mem = strconv.FormatInt(lim.MemoryBytes, 10)
	}
	if g.h.emulate || fileExists(md, "memory.memsw.limit_in_bytes") {
		// The kernel insists memsw.limit >= limit at all times: lowering
		// must write limit first, raising memsw first. Try the former and
		// fall back to the latter.
		err := g.h.write(md, "memory.limit_in_bytes", mem)
		if err == nil {
			err = g.h.write(md, "memory.memsw.limit_in_bytes", mem)
		} else if errors.Is(err, unix.EINVAL) {
			if err = g.h.write(md, "memory.memsw.limit_in_bytes", mem); err == nil {
				err = g.h.write(md, "memory.limit_in_bytes", mem)
			}
		}
		if err != nil {
			return err
		}
	} else if err := g.h.write(md, "memory.limit_in_bytes", mem); err != nil {
		return err
	}

	pids := "max"
	if lim.Pids > 0 {
		pids = strconv.FormatInt(lim.Pids, 10)
	}
	if err := g.h.write(g.ctrl["pids"], "pids.max", pids); err != nil {
		return err
	}

	cd := g.ctrl["cpu"]
	if err := g.h.write(cd, "cpu.cfs_period_us", strconv.Itoa(cpuPeriodUS)); err != nil {
		return err
	}
	return g.h.write(cd, "cpu.cfs_quota_us", strconv.FormatInt(lim.cpuQuotaUS(), 10))
}

// AddProc moves process pid (all its threads) into the group in every
// hierarchy. On v2 prefer starting the process directly in the group with
// CgroupFD; on v1 the caller must make sure the process does not fork
// before AddProc returns.
func (g *Group) AddProc(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("cgroup add %s: invalid pid %d", g, pid)
	}
	for _, d := range g.dirs {
		if err := g.h.write(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroup add %s: pid %d: %w", g, pid, err)
		}
	}
	return nil
}

// Procs returns the sorted pids of the processes in the group, over all
// hierarchies, including processes in descendant groups.
func (g *Group) Procs() ([]int, error) {
	pids, err := g.procs(false)
	if err != nil {
		return nil, fmt.Errorf("cgroup procs %s: %w", g, err)
	}
	return pids, nil
}

// procs collects the pids of the group and its descendants. With
// tolerateMissing, missing directories count as empty.
func (g *Group) procs(tolerateMissing bool) ([]int, error) {
	seen := map[int]bool{}
	for _, d := range g.dirs {
		dirs, err := subtree(d)
		if err != nil {
			if tolerateMissing && errIsNotExist(err) {
				continue
			}
			return nil, err
		}
		for _, sd := range dirs {
			data, err := readString(sd, "cgroup.procs")
			if err != nil {
				if errIsNotExist(err) && (tolerateMissing || sd != d || g.h.emulate) {
					continue // removed meanwhile, or an emulated tree
				}
				if sd != d && errors.Is(err, unix.EOPNOTSUPP) {
					// a v2 threaded child: its processes are listed
					// by the root of its threaded subtree
					continue
				}
				return nil, err
			}
			for _, f := range strings.Fields(data) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					return nil, fmt.Errorf("parse %s: %w", filepath.Join(sd, "cgroup.procs"), err)
				}
				seen[pid] = true
			}
		}
	}
	out := make([]int, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Ints(out)
	return out, nil
}

// subtree returns dir and all directories below it, children after their
// parents.
func subtree(dir string) ([]string, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "stat", Path: dir, Err: unix.ENOTDIR}
	}
	out := []string{dir}
	for i := 0; i < len(out); i++ {
		ents, err := os.ReadDir(out[i])
		if err != nil {
			if i > 0 && errIsNotExist(err) {
				continue
			}
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, filepath.Join(out[i], e.Name()))
			}
		}
	}
	return out, nil
}

// Stats reads the group's counters.
func (g *Group) Stats() (Stats, error) {
	var (
		s   Stats
		err error
	)
	if g.h.mode == V2 {
		s, err = g.statsV2()
	} else {
		s, err = g.statsV1()
	}
	if err != nil {
		return Stats{}, fmt.Errorf("cgroup stats %s: %w", g, err)
	}
	return s, nil
}

// LimitHits is Stats with only the counters that say a limit was hit
// (OOMKills, PidsMaxHits, PidsPeak; the rest zero): three reads instead
// of Stats' seven or eight, for what runs twice around every command.
func (g *Group) LimitHits() (Stats, error) {
	var s Stats
	var err error
	md, pd, oom := g.dirs[0], g.dirs[0], "memory.events"
	if g.h.mode != V2 {
		md, pd, oom = g.ctrl["memory"], g.ctrl["pids"], "memory.oom_control"
	}
	if s.OOMKills, err = readKeyed(md, oom, "oom_kill", false); err == nil {
		s.PidsMaxHits, err = readKeyed(pd, "pids.events", "max", false)
	}
	if err == nil {
		// pids.peak: newer kernels only (Stats reads 0 without it too)
		if s.PidsPeak, err = readUint(pd, "pids.peak"); errIsNotExist(err) {
			s.PidsPeak, err = 0, nil
		}
	}
	if err != nil {
		return Stats{}, fmt.Errorf("cgroup limit counters %s: %w", g, err)
	}
	return s, nil
}

func (g *Group) statsV2() (Stats, error) {
	var s Stats
	d := g.dirs[0]
	var err error
	if s.OOMKills, err = readKeyed(d, "memory.events", "oom_kill", false); err != nil {
		return s, err
	}
	if fileExists(d, "memory.peak") { // since Linux 5.19
		if s.MemoryPeak, err = readUint(d, "memory.peak"); err != nil {
			return s, err
		}
	}
	if s.MemoryCurrent, err = readUint(d, "memory.current"); err != nil {
		return s, err
	}
	if s.PidsMaxHits, err = readKeyed(d, "pids.events", "max", false); err != nil {
		return s, err
	}
	if s.Pids, err = readUint(d, "pids.current"); err != nil {
		return s, err
	}
	if fileExists(d, "pids.peak") {
		if s.PidsPeak, err = readUint(d, "pids.peak"); err != nil {
			return s, err
		}
	}
	usec, err := readKeyed(d, "cpu.stat", "usage_usec", true)
	if err != nil {
		return s, err
	}
	s.CPUUsageNS = usec * 1000
	return s, nil
}

func (g *Group) statsV1() (Stats, error) {
	var s Stats
	var err error
	md := g.ctrl["memory"]
	// "oom_kill N" appeared in Linux 4.13; older kernels report 0.
	if s.OOMKills, err = readKeyed(md, "memory.oom_control", "oom_kill", false); err != nil {
		return s, err
	}
	if s.MemoryPeak, err = readUint(md, "memory.max_usage_in_bytes"); err != nil {
		return s, err
	}
	if s.MemoryCurrent, err = readUint(md, "memory.usage_in_bytes"); err != nil {
		return s, err
	}
	pd := g.ctrl["pids"]
	if s.PidsMaxHits, err = readKeyed(pd, "pids.events", "max", false); err != nil {
		return s, err
	}
	if s.Pids, err = readUint(pd, "pids.current"); err != nil {
		return s, err
	}
	if fileExists(pd, "pids.peak") {
		if s.PidsPeak, err = readUint(pd, "pids.peak"); err != nil {
			return s, err
		}
	}
	if ad, ok := g.ctrl["cpuacct"]; ok {
		if s.CPUUsageNS, err = readUint(ad, "cpuacct.usage"); err != nil {
			return s, err
		}
	}
	return s, nil
}

// PageCache reads the group's page cache in bytes (memory.stat: v2's
// "file", v1's hierarchical "total_cache", else its "cache"): the
// contents of files held in memory, tmpfs and shared memory included,
// part of MemoryCurrent. It is apart from Stats, which every command
// pays for, because memory.stat is the largest file the kernel makes.
func (g *Group) PageCache() (uint64, error) {
	var (
		v   uint64
		err error
	)
	if g.h.mode == V2 {
		v, err = readKeyed(g.dirs[0], "memory.stat", "file", true)
	} else {
		v, err = pageCacheV1(g.ctrl["memory"])
	}
	if err != nil {
		return 0, fmt.Errorf("cgroup page cache %s: %w", g, err)
	}
	return v, nil
}

// pageCacheV1 prefers total_cache, which counts the group's children as
// memory.usage_in_bytes does; cache alone is the group's own.
func pageCacheV1(dir string) (uint64, error) {
	s, err := readString(dir, "memory.stat")
	if err != nil {
		return 0, err
	}
	for _, key := range []string{"total_cache", "cache"} {
		v, found, err := parseKeyed(s, key)
		if err != nil {
			return 0, fmt.Errorf("parse %s: %w", filepath.Join(dir, "memory.stat"), err)
		}
		if found {
			return v, nil
		}
	}
	return 0, fmt.Errorf("parse %s: no \"total_cache\" or \"cache\" line", filepath.Join(dir, "memory.stat"))
}

// Freeze stops every process in the group and waits until the kernel
// reports the group frozen. v1 needs a mounted freezer hierarchy.
func (g *Group) Freeze() error {
	if err := g.freeze(freezeTimeout); err != nil {
		return fmt.Errorf("cgroup freeze %s: %w", g, err)
	}
	return nil
}

// Thaw resumes a frozen group.
func (g *Group) Thaw() error {
	if err := g.thaw(); err != nil {
		return fmt.Errorf("cgroup thaw %s: %w", g, err)
	}
	return nil
}

// V1FreezerState returns the path of the group's v1 freezer.state file,
// for a process outside the daemon that must be able to thaw the group
// (a v1 freezer holds back even SIGKILL). It returns false on v2, whose
// freezer lets fatal signals through, and on v1 without a freezer.
func (g *Group) V1FreezerState() (string, bool) {
	if g.h.mode == V2 {
		return "", false
	}
	fd, ok := g.ctrl["freezer"]
	if !ok {
		return "", false
	}
	return filepath.Join(fd, "freezer.state"), true
}

func (g *Group) canFreeze() bool {
	if g.h.mode == V2 {
		return true
	}
	_, ok := g.ctrl["freezer"]
	return ok
}

func (g *Group) freeze(timeout time.Duration) error {
	var dir, file, req string
	var frozen func() (bool, error)
	if g.h.mode == V2 {
		dir, file, req = g.dirs[0], "cgroup.freeze", "1"
		frozen = func() (bool, error) {
			v, err := readKeyed(dir, "cgroup.events", "frozen", true)
			return v == 1, err
		}
	} else {
		fd, ok := g.ctrl["freezer"]
		if !ok {
			return fmt.Errorf("no v1 freezer hierarchy mounted: %w", ErrUnsupported)
		}
		dir, file, req = fd, "freezer.state", "FROZEN"
		frozen = func() (bool, error) {
			st, err := readString(dir, "freezer.state")
			return strings.TrimSpace(st) == "FROZEN", err
		}
	}
	if err := g.h.write(dir, file, req); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		ok, err := frozen()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			_ = g.thaw()
			return fmt.Errorf("not frozen after %v (a task may be stuck in the kernel)", timeout)
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
		// Re-request: tasks that were forking or in uninterruptible
		// sleep may have escaped the first attempt.
		if err := g.h.write(dir, file, req); err != nil {
			return err
		}
	}
}

func (g *Group) thaw() error {
	if g.h.mode == V2 {
		return g.h.write(g.dirs[0], "cgroup.freeze", "0")
	}
	fd, ok := g.ctrl["freezer"]
	if !ok {
		return fmt.Errorf("no v1 freezer hierarchy mounted: %w", ErrUnsupported)
	}
	return g.h.write(fd, "freezer.state", "THAWED")
}

// Kill SIGKILLs every process in the group (and its descendant groups) and
// waits until the group is empty. On v2 with cgroup.kill (Linux 5.14+) the
// kernel does it atomically; otherwise Kill repeatedly freezes the group
// (so nothing can fork or exit-and-recycle its pid meanwhile), signals every
// listed pid and thaws, until nothing is left. A group whose directories are
// gone counts as empty. Kill fails if the group does not empty in time.
func (g *Group) Kill() error {
	if err := g.kill(); err != nil {
		return fmt.Errorf("cgroup kill %s: %w", g, err)
	}
	return nil
}

func (g *Group) kill() error {
	deadline := time.Now().Add(killTimeout)
	if g.h.mode == V2 && !g.h.emulate && fileExists(g.dirs[0], "cgroup.kill") {
		if err := g.h.write(g.dirs[0], "cgroup.kill", "1"); err != nil && !errIsNotExist(err) {
			return err
		}
	}
	delay := time.Millisecond
	for {
		pids, err := g.procs(true)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if g.h.emulate {
			// The pids in an emulated tree are just text; never signal them.
			return fmt.Errorf("emulated hierarchy lists processes %v: refusing to signal them", pids)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still has processes %v after %v", pids, killTimeout)
		}
		frozen := false
		if g.canFreeze() {
			// Best effort: a failure to freeze (e.g. a task stuck in
			// D state) must not stop us from signalling.
			frozen = g.freeze(time.Second) == nil
			if frozen {
				if pids, err = g.procs(true); err != nil {
					_ = g.thaw()
					return err
				}
			}
		}
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && err != unix.ESRCH {
				if frozen {
					_ = g.thaw()
				}
				return fmt.Errorf("kill %d: %w", pid, err)
			}
		}
		if frozen {
			// SIGKILLed v1-frozen tasks only die once thawed.
			if err := g.thaw(); err != nil && !errIsNotExist(err) {
				return err
			}
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// Destroy kills every process in the group and removes its directories
// (including any descendant groups) from every hierarchy. It is idempotent:
// missing directories are fine.
func (g *Group) Destroy() error {
	if err := g.kill(); err != nil {
		return fmt.Errorf("cgroup destroy %s: %w", g, err)
	}
	var errs []error
	for _, d := range g.dirs {
		if g.h.emulate {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		dirs, err := subtree(d)
		if errIsNotExist(err) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- { // children first
			if err := g.h.removeDir(dirs[i]); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cgroup destroy %s: %w", g, err)
	}
	return nil
}

// CgroupFD opens the group directory with O_PATH|O_DIRECTORY|O_CLOEXEC for
// syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}, which starts a child
// directly inside the group (clone3 CLONE_INTO_CGROUP). The caller owns and
// must close the fd. It returns false on v1 (where CLONE_INTO_CGROUP does
// not apply) or if the directory cannot be opened.
func (g *Group) CgroupFD() (int, bool) {
	if g.h.mode != V2 {
		return -1, false
	}
	fd, err := unix.Open(g.dirs[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false
	}
	return fd, true
}

// PidsSub is a child of a group that counts and caps the processes of
// single threads moved into it: every process such a thread forks starts
// there. It lets a sandbox count and cap its commands apart from its
// agent, whose other threads stay in the parent group. v1: a child in the
// pids hierarchy (threads move with the "tasks" file). v2: a threaded
// child (cgroup.type "threaded"; threads move with "cgroup.threads"), which
// makes the group the root of a threaded subtree with only the pids
// controller enabled below it; the group keeps its own processes, and its
// memory and cpu limits cover the child. Destroy and Kill of the parent
// group cover it.
type PidsSub struct {
	g       *Group
	dir     string
	threads string // the interface file threads are written to
}

// CreatePidsSub makes the child group name with pids.max = max (> 0).
func (g *Group) CreatePidsSub(name string, max int64) (*PidsSub, error) {
	if err := validName("sub-group", name); err != nil {
		return nil, err
	}
	if max <= 0 {
		return nil, fmt.Errorf("cgroup %s: pids sub-group needs a positive max, got %d", g, max)
	}
	pd, ok := g.ctrl["pids"]
	if !ok {
		return nil, fmt.Errorf("cgroup %s: no pids controller: %w", g, ErrUnsupported)
	}
	dir := filepath.Join(pd, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup %s: pids sub-group: %w", g, err)
	}
	sub := &PidsSub{g: g, dir: dir, threads: "tasks"}
	var err error
	if g.h.mode == V2 {
		sub.threads = "cgroup.threads"
		// Threaded first: pids (a threaded controller) may then be
		// enabled below a group that has processes of its own.
		err = g.h.write(dir, "cgroup.type", "threaded")
		if err == nil {
			err = g.h.write(pd, "cgroup.subtree_control", "+pids")
		}
	}
	if err == nil {
		err = g.h.write(dir, "pids.max", strconv.FormatInt(max, 10))
	}
	if err != nil {
		_ = g.h.removeDir(dir)
		return nil, fmt.Errorf("cgroup %s: pids sub-group: %w", g, err)
	}
	return sub, nil
}

// AddThread moves one thread (a tid, host pid namespace) into the group.
func (p *PidsSub) AddThread(tid int) error {
	if tid <= 0 {
		return fmt.Errorf("cgroup pids sub-group: invalid tid %d", tid)
	}
	if err := p.g.h.write(p.dir, p.threads, strconv.Itoa(tid)); err != nil {
		return fmt.Errorf("cgroup pids sub-group: tid %d: %w", tid, err)
	}
	return nil
}

// MaxHits counts forks refused because the sub-group was full.
func (p *PidsSub) MaxHits() (uint64, error) {
	return readKeyed(p.dir, "pids.events", "max", false)
}
