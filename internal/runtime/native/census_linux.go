package native

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Census counts what sandboxes of this backend hold on the host. With no
// sandbox running, every field must be zero: tests and benchmarks compare
// censuses taken before and after to prove nothing leaked.
type Census struct {
	StateDirs int `json:"state_dirs"` // sandbox state directories
	Cgroups   int `json:"cgroups"`    // groups under the cgroup parent
	Processes int `json:"processes"`  // host processes running as a sandbox uid (any airlock)
	Mounts    int `json:"mounts"`     // host mount table entries under the state dir
}

// Census takes a census now.
func (b *Backend) Census() (Census, error) {
	var c Census
	ents, err := os.ReadDir(b.sandboxesDir())
	if err != nil && !os.IsNotExist(err) {
		return c, err
	}
	c.StateDirs = len(ents)
	if names, err := b.hier.List(b.cfg.CgroupParent); err == nil {
		c.Cgroups = len(names)
	}
	c.Processes = countSandboxProcs()
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.Contains(sc.Text(), b.cfg.StateDir) {
				c.Mounts++
			}
		}
		f.Close()
	}
	return c, nil
}

// countSandboxProcs counts host processes whose real uid lies in the
// sandbox uid ranges.
func countSandboxProcs() int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "Uid:") {
				continue
			}
			f := strings.Fields(line)
			if len(f) > 1 {
				if uid, err := strconv.Atoi(f[1]); err == nil && uid >= UIDRangeStart && uid < UIDRangeStart+maxSlots*uidRangeSize {
					n++
				}
			}
			break
		}
	}
	return n
}

// RemoveCgroupParent removes the backend's cgroup parent if it holds no
// sandbox groups (it is recreated on the next Create).
func (b *Backend) RemoveCgroupParent() error {
	return b.hier.RemoveParent(b.cfg.CgroupParent)
}
