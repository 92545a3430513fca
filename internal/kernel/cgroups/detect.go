package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// mountinfoPath is where Detect reads the mount table from.
const mountinfoPath = "/proc/self/mountinfo"

// requiredControllers are the controllers a hierarchy must offer for the
// sandbox limits to be enforceable (in this order).
var requiredControllers = []string{"memory", "pids", "cpu"}

// v1Controllers are the v1 hierarchies a group is created in, in the order
// their directories are reported by Group.Paths. memory, pids and cpu are
// required; cpuacct (CPU usage statistics) and freezer (Freeze/Thaw and a
// race-free Kill) are used when mounted.
var v1Controllers = []string{"memory", "pids", "cpu", "cpuacct", "freezer"}

// mountEntry is the part of one /proc/self/mountinfo line this package needs.
type mountEntry struct {
	root       string   // field 4: root of the mount within the filesystem
	mountPoint string   // field 5: mount point, unescaped
	fsType     string   // first field after the "-" separator
	superOpts  []string // third field after the separator, split on ','
}

// parseMountinfo parses the format described in proc(5): "ID PARENT MAJ:MIN
// ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Fields(line)
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 6 || sep < 0 || sep+3 > len(fields) {
			return nil, fmt.Errorf("mountinfo line %d: malformed: %q", lineNo, line)
		}
		e := mountEntry{
			root:       unescapeMountField(fields[3]),
			mountPoint: unescapeMountField(fields[4]),
			fsType:     fields[sep+1],
		}
		if sep+3 < len(fields) {
			e.superOpts = strings.Split(fields[sep+3], ",")
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// unescapeMountField undoes the kernel's octal escaping (\040 for space,
// \011 tab, \012 newline, \134 backslash) of paths in mountinfo.
func unescapeMountField(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// Detect inspects /proc/self/mountinfo and returns the hierarchy to use.
//
// It selects cgroup v2 when a cgroup2 mount lists memory, pids and cpu in
// its cgroup.controllers; otherwise cgroup v1, using the mount point of
// each v1 controller (the "cgroup" mounts whose super options name it).
// If neither is usable the error wraps ErrUnsupported.
func Detect() (*Hierarchy, error) {
	return detect(mountinfoPath, "")
}

// detect is Detect with an injectable mountinfo file and a prefix (fsRoot)
// prepended to every mount point, so tests can describe a host that has a
// different mount table from the one running the test.
func detect(mountinfo, fsRoot string) (*Hierarchy, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("cgroup detect: %w", err)
	}
	defer f.Close()
	mounts, err := parseMountinfo(f)
	if err != nil {
		return nil, fmt.Errorf("cgroup detect: %w", err)
	}

	var v2Notes []string
	v1 := map[string]string{}
	v1Root := map[string]string{}
	for _, m := range mounts {
		dir := m.mountPoint
		if fsRoot != "" {
			dir = filepath.Join(fsRoot, m.mountPoint)
		}
		switch m.fsType {
		case "cgroup2":
			data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
			if err != nil {
				v2Notes = append(v2Notes, fmt.Sprintf("cgroup2 at %s: %v", m.mountPoint, err))
				continue
			}
			avail := strings.Fields(string(data))
			if missing := missingFrom(avail, requiredControllers); len(missing) > 0 {
				v2Notes = append(v2Notes, fmt.Sprintf("cgroup2 at %s lacks %s", m.mountPoint, strings.Join(missing, ",")))
				continue
			}
			return &Hierarchy{mode: V2, root: filepath.Clean(dir)}, nil
		case "cgroup":
			for _, opt := range m.superOpts {
				if !contains(v1Controllers, opt) {
					continue
				}
				// First mount wins, except that a mount of the
				// hierarchy's real root beats an earlier bind mount of
				// a sub-group.
				if _, ok := v1[opt]; ok && (v1Root[opt] == "/" || m.root != "/") {
					continue
				}
				v1[opt] = filepath.Clean(dir)
				v1Root[opt] = m.root
			}
		}
	}

	var missing []string
	for _, c := range requiredControllers {
		if _, ok := v1[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		msg := "no cgroup2 mount with memory, pids and cpu"
		if len(v2Notes) > 0 {
			msg += " (" + strings.Join(v2Notes, "; ") + ")"
		}
		return nil, fmt.Errorf("cgroup detect: %w: %s, and no cgroup v1 mount for %s",
			ErrUnsupported, msg, strings.Join(missing, ","))
	}
	return &Hierarchy{mode: V1, v1: v1}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// missingFrom returns the elements of want that are not in have.
func missingFrom(have, want []string) []string {
	var out []string
	for _, w := range want {
		if !contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// errIsNotExist reports whether err means a file or directory is missing.
func errIsNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
