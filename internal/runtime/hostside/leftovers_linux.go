package hostside

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Leftovers lists what sandbox id still holds on the host of this layout:
// its state dir (or .dead- dir), its cgroup, its disk image (a file, or
// this process's descriptor of it), a loop device backed by that image, a host mount under its state dir, and its
// uid slot's lock if slot >= 0 (the lock is then taken for a moment). A
// sandbox that was destroyed, or whose Create failed, has none once its
// loop device has cleared itself, which the kernel may do a little later:
// tests and leak checks use it.
func (l *Layout) Leftovers(id string, slot int) []string {
	var left []string
	dir := filepath.Join(l.SandboxesDir(), id)
	for _, d := range []string{dir, filepath.Join(l.SandboxesDir(), ".dead-"+id)} {
		if _, err := os.Lstat(d); err == nil {
			left = append(left, "state dir "+d)
		}
	}
	if names, err := l.Hier.List(l.CgroupParent); err == nil && slices.Contains(names, id) {
		left = append(left, "cgroup "+l.CgroupParent+"/"+id)
	}
	img := l.DiskImage(id)
	if _, err := os.Lstat(img); err == nil {
		left = append(left, "disk image "+img)
	}
	// the image kept open until the teardown hands it to closeLater
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if t, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.TrimSuffix(t, " (deleted)") == img {
			left = append(left, "descriptor "+fd.Name()+" of disk image "+t)
		}
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), img) {
			left = append(left, "loop device "+filepath.Base(filepath.Dir(filepath.Dir(f)))+" on "+strings.TrimSpace(string(b)))
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
				left = append(left, "mount "+f[4])
			}
		}
	}
	if slot >= 0 && l.SlotDir != "" {
		if f, err := lockSlot(filepath.Join(l.SlotDir, strconv.Itoa(slot)+".lock")); err != nil {
			left = append(left, "uid slot "+strconv.Itoa(slot)+" still locked")
		} else {
			_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
			f.Close()
		}
	}
	return left
}
