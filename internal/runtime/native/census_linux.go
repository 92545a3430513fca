package native

import (
	"bufio"
	"os"
	"strings"

	"github.com/airlock-dev/airlock/internal/runtime/hostside"
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
	n, err := b.lay.Count()
	if err != nil {
		return Census{}, err
	}
	c := Census{StateDirs: n.StateDirs, Cgroups: n.Cgroups, Processes: hostside.SlotProcesses()}
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

// RemoveCgroupParent removes the backend's cgroup parent if it holds no
// sandbox groups (it is recreated on the next Create).
func (b *Backend) RemoveCgroupParent() error { return b.lay.RemoveCgroupParent() }
