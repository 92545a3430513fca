package landlock

import (
	"strings"
	"testing"
)

func TestHandledFS(t *testing.T) {
	const (
		v1 = uint64(0x1fff) // EXECUTE .. MAKE_SYM
		v2 = v1 | AccessFSRefer
		v3 = v2 | AccessFSTruncate
		v5 = v3 | AccessFSIoctlDev
	)
	tests := []struct {
		abi  int
		want uint64
	}{
		{-1, 0}, {0, 0}, {1, v1}, {2, v2}, {3, v3}, {4, v3}, {5, v5}, {6, v5}, {7, v5}, {99, v5},
	}
	for _, tt := range tests {
		if got := handledFS(tt.abi); got != tt.want {
			t.Errorf("handledFS(%d) = %s, want %s", tt.abi, FormatAccessFS(got), FormatAccessFS(tt.want))
		}
	}
}

func TestScopedFor(t *testing.T) {
	tests := []struct {
		abi  int
		want bool
		out  uint64
	}{
		{1, true, 0}, {5, true, 0}, {6, false, 0}, {6, true, 3}, {7, true, 3}, {7, false, 0},
	}
	for _, tt := range tests {
		if got := scopedFor(tt.abi, tt.want); got != tt.out {
			t.Errorf("scopedFor(%d, %t) = %#x, want %#x", tt.abi, tt.want, got, tt.out)
		}
	}
}

func TestRulesetAttrSize(t *testing.T) {
	tests := []struct {
		abi  int
		want uintptr
	}{
		{1, 8}, {2, 8}, {3, 8}, {4, 16}, {5, 16}, {6, 24}, {7, 24}, {42, 24},
	}
	for _, tt := range tests {
		if got := rulesetAttrSize(tt.abi); got != tt.want {
			t.Errorf("rulesetAttrSize(%d) = %d, want %d", tt.abi, got, tt.want)
		}
	}
}

func TestRuleAccess(t *testing.T) {
	const ro = AccessFSExecute | AccessFSReadFile | AccessFSReadDir
	tests := []struct {
		name      string
		abi       int
		readWrite bool
		isDir     bool
		want      uint64
	}{
		{"ro dir v1", 1, false, true, ro},
		{"ro dir v7", 7, false, true, ro},
		{"ro file v7", 7, false, false, AccessFSExecute | AccessFSReadFile},
		{"rw dir v1", 1, true, true, 0x1fff},
		{"rw dir v2", 2, true, true, 0x1fff | AccessFSRefer},
		{"rw dir v3", 3, true, true, 0x1fff | AccessFSRefer | AccessFSTruncate},
		{"rw dir v5", 5, true, true, 0xffff},
		{"rw dir v7", 7, true, true, 0xffff},
		{"rw file v1", 1, true, false, AccessFSExecute | AccessFSReadFile | AccessFSWriteFile},
		{"rw file v3", 3, true, false, AccessFSExecute | AccessFSReadFile | AccessFSWriteFile | AccessFSTruncate},
		{"rw file v5", 5, true, false, AccessFSExecute | AccessFSReadFile | AccessFSWriteFile | AccessFSTruncate | AccessFSIoctlDev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handled := handledFS(tt.abi)
			got := ruleAccess(handled, tt.readWrite, tt.isDir)
			if got != tt.want {
				t.Errorf("ruleAccess = %s, want %s", FormatAccessFS(got), FormatAccessFS(tt.want))
			}
			if got&^handled != 0 {
				t.Errorf("rule grants unhandled rights %s", FormatAccessFS(got&^handled))
			}
			if !tt.isDir && got&^accessFile != 0 {
				t.Errorf("file rule grants directory-only rights %s", FormatAccessFS(got&^accessFile))
			}
		})
	}
}

func TestFormatAccessFS(t *testing.T) {
	tests := []struct {
		mask uint64
		want string
	}{
		{0, "none"},
		{AccessFSExecute | AccessFSReadDir, "execute|read_dir"},
		{AccessFSIoctlDev | 1<<20, "ioctl_dev|0x100000"},
	}
	for _, tt := range tests {
		if got := FormatAccessFS(tt.mask); got != tt.want {
			t.Errorf("FormatAccessFS(%#x) = %q, want %q", tt.mask, got, tt.want)
		}
	}
	if got := FormatAccessFS(0xffff); strings.Count(got, "|") != 15 || strings.Contains(got, "0x") {
		t.Errorf("FormatAccessFS(0xffff) = %q, want 16 names", got)
	}
}

func TestCheckPaths(t *testing.T) {
	tests := []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{ReadOnly: []string{"/"}, ReadWrite: []string{"/tmp", "/dev/null"}}, true},
		{Config{ReadOnly: []string{""}}, false},
		{Config{ReadOnly: []string{"usr"}}, false},
		{Config{ReadWrite: []string{"./tmp"}}, false},
	}
	for _, tt := range tests {
		if err := checkPaths(tt.cfg); (err == nil) != tt.ok {
			t.Errorf("checkPaths(%+v) = %v, want ok=%t", tt.cfg, err, tt.ok)
		}
	}
}

func TestAccessWrite(t *testing.T) {
	if leaked := accessWrite & (AccessFSExecute | AccessFSReadFile | AccessFSReadDir | AccessFSIoctlDev); leaked != 0 {
		t.Errorf("accessWrite handles %s: a write layer would change reads, execution or ioctls", FormatAccessFS(leaked))
	}
	if want := accessReadWrite &^ (accessReadOnly | AccessFSIoctlDev); accessWrite != want {
		t.Errorf("accessWrite = %s, want every right that changes the filesystem: %s", FormatAccessFS(accessWrite), FormatAccessFS(want))
	}
	if got, want := accessWrite&accessFile, AccessFSWriteFile|AccessFSTruncate; got != want {
		t.Errorf("file rule of a write layer = %s, want %s", FormatAccessFS(got), FormatAccessFS(want))
	}
	if h := handledFS(MinWritesABI) & accessWrite; h != accessWrite {
		t.Errorf("ABI %d does not handle %s", MinWritesABI, FormatAccessFS(accessWrite&^h))
	}
}
