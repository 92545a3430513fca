package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// write writes data to the interface file dir/file with a single write(2),
// as cgroupfs expects. The error names the file and value and wraps the
// errno (so errors.Is(err, unix.EINVAL) works). On an emulated hierarchy
// missing files are created, and cgroup.procs is appended to so that it
// accumulates pids like the real file.
func (h *Hierarchy) write(dir, file, data string) error {
	p := filepath.Join(dir, file)
	flags := os.O_WRONLY | os.O_TRUNC
	if h.emulate {
		flags |= os.O_CREATE
		if file == "cgroup.procs" {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
			data += "\n"
		}
	}
	f, err := os.OpenFile(p, flags, 0o644)
	if err == nil {
		_, err = f.Write([]byte(data))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("write %s %q: %w", p, strings.TrimSpace(data), err)
	}
	return nil
}

func readString(dir, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	return string(b), err
}

func fileExists(dir, file string) bool {
	_, err := os.Stat(filepath.Join(dir, file))
	return err == nil
}

// readUint reads a file holding a single unsigned number ("max" is
// reported as the largest value).
func readUint(dir, file string) (uint64, error) {
	s, err := readString(dir, file)
	if err != nil {
		return 0, err
	}
	v, err := parseUintValue(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", filepath.Join(dir, file), err)
	}
	return v, nil
}

func parseUintValue(s string) (uint64, error) {
	if s == "max" {
		return ^uint64(0), nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// readKeyed reads a flat-keyed file ("key value" lines, e.g. memory.events,
// pids.events, cpu.stat, memory.oom_control) and returns the value of key.
// An absent key is 0 unless required is set.
func readKeyed(dir, file, key string, required bool) (uint64, error) {
	s, err := readString(dir, file)
	if err != nil {
		return 0, err
	}
	v, found, err := parseKeyed(s, key)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", filepath.Join(dir, file), err)
	}
	if !found && required {
		return 0, fmt.Errorf("parse %s: no %q line", filepath.Join(dir, file), key)
	}
	return v, nil
}

func parseKeyed(s, key string) (uint64, bool, error) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != key {
			continue
		}
		v, err := parseUintValue(f[1])
		if err != nil {
			return 0, true, fmt.Errorf("key %s: %w", key, err)
		}
		return v, true, nil
	}
	return 0, false, nil
}
