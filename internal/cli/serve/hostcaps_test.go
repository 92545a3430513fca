package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// The figures of the Debian 12 review host.
var reviewHost = HostTables{PidMax: 32768, ThreadsMax: 192724, FileMax: 2466097, NrOpen: 1048576, PtyMax: 4096, PtyReserve: 1024}

func noneExplicit(string) bool { return false }

// The attack of the review: with the old caps one sandbox could ask for
// pid_max processes and 256 sandboxes of the default could hold more
// tasks than the host has, and one sandbox process's nofile times the
// sandboxes exceeded fs.file-max. The derived caps leave the host its
// reserve whatever the sandboxes ask.
func TestFitCapsLeavesTheHostItsTables(t *testing.T) {
	c, msg, err := fitCaps(defaultCaps(), reviewHost, noneExplicit)
	if err != nil {
		t.Fatal(err)
	}
	if c.Host.Pids != 24576 || c.Host.Ptys != 2304 {
		t.Errorf("host budget %+v, want 24576 tasks (pid_max less a quarter), 2304 terminals ((4096-1024) less a quarter)", c.Host)
	}
	if native.HostTasks(c.Limits.Pids) > c.Host.Pids || c.Limits.Pids > c.Host.Pids/4 {
		t.Errorf("a sandbox may ask for %d pids: more than a quarter of the %d tasks sandboxes share", c.Limits.Pids, c.Host.Pids)
	}
	if files := int64(c.Limits.NoFile) * int64(c.Sandboxes); files > HostShare(reviewHost.FileMax) || int64(c.Limits.NoFile) > reviewHost.NrOpen {
		t.Errorf("%d sandboxes of nofile %d hold %d files: more than fs.file-max %d less its reserve", c.Sandboxes, c.Limits.NoFile, files, reviewHost.FileMax)
	}
	if c.Limits.Ptys <= 0 || c.Limits.Ptys > c.Host.Ptys {
		t.Errorf("per-sandbox pty cap %d outside (0, %d]", c.Limits.Ptys, c.Host.Ptys)
	}
	for _, want := range []string{"24576 tasks", "kernel.pid_max 32768", "fs.file-max 2466097"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
}

// An explicit flag above what the host can give is refused, naming the
// host's table; one within it is kept.
func TestFitCapsRefusesExplicitFlagsBeyondTheHost(t *testing.T) {
	for _, tc := range []struct {
		flag string
		set  func(c *manager.Caps)
		want string
	}{
		{"max-pids", func(c *manager.Caps) { c.Limits.Pids = 32768 }, "kernel.pid_max"},
		{"max-nofile", func(c *manager.Caps) { c.Limits.NoFile = 65536 }, "fs.file-max"},
		{"max-ptys", func(c *manager.Caps) { c.Limits.Ptys = 3000 }, "kernel.pty.max"},
	} {
		c := defaultCaps()
		tc.set(&c)
		_, _, err := fitCaps(c, reviewHost, func(f string) bool { return f == tc.flag })
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--"+tc.flag) {
			t.Errorf("--%s beyond the host: %v, want an error naming --%s and %s", tc.flag, err, tc.flag, tc.want)
		}
	}
	c := defaultCaps()
	c.Limits.Pids, c.Limits.NoFile, c.Limits.Ptys = 1000, 2048, 64
	got, _, err := fitCaps(c, reviewHost, func(string) bool { return true })
	if err != nil || got.Limits.Pids != 1000 || got.Limits.NoFile != 2048 || got.Limits.Ptys != 64 {
		t.Errorf("flags within the host: %+v %v, want them kept", got.Limits, err)
	}
}

func TestReadHostTables(t *testing.T) {
	dir := t.TempDir()
	for p, v := range map[string]string{
		"kernel/pid_max": "4194304\n", "kernel/threads-max": "192724\n", "fs/file-max": "18446744073709551615\n",
		"fs/nr_open": "1048576\n", "kernel/pty/max": "4096\n", "kernel/pty/reserve": "1024\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := ReadHostTables(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.PidMax != 4194304 || h.ThreadsMax != 192724 || h.FileMax != 1<<62 || h.PtyReserve != 1024 {
		t.Errorf("tables %+v", h)
	}
	// threads-max bounds tasks when it is the smaller
	c, _, err := fitCaps(defaultCaps(), h, noneExplicit)
	if err != nil || c.Host.Pids != HostShare(192724) {
		t.Errorf("task budget %d (%v), want threads-max's share %d", c.Host.Pids, err, HostShare(192724))
	}
	if err := os.Remove(filepath.Join(dir, "fs/nr_open")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadHostTables(dir); err == nil {
		t.Error("a missing table: no error")
	}
}

// On the review host (kernel.pid_max 32768) the task budget holds 256
// sandboxes of the smallest pids limit: the default --max-sandboxes fits
// and says nothing, 1,000 is warned of with the pid_max that holds them,
// and that pid_max does.
func TestDensityWarningNamesThePidMaxThatHoldsThem(t *testing.T) {
	c, _, err := fitCaps(defaultCaps(), reviewHost, noneExplicit)
	if err != nil {
		t.Fatal(err)
	}
	if w := DensityWarning(c, reviewHost); w != "" {
		t.Errorf("the default %d sandboxes are warned of: %s", c.Sandboxes, w)
	}
	c.Sandboxes = 1000
	w := DensityWarning(c, reviewHost)
	// 1,000 sandboxes of 96 tasks: 96,000 = pid_max less a quarter
	for _, want := range []string{"--max-sandboxes 1000", "at most 256 sandboxes", "kernel.pid_max (now 32768) to at least 128000"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q does not say %q", w, want)
		}
	}
	big := reviewHost
	big.PidMax = 128000
	c2, _, err := fitCaps(manager.Caps{Sandboxes: 1000}, big, noneExplicit)
	if err != nil {
		t.Fatal(err)
	}
	if w := DensityWarning(c2, big); w != "" || c2.Host.Pids/native.HostTasks(native.MinPids) < 1000 {
		t.Errorf("pid_max 128000: budget %d, warning %q; want 1,000 sandboxes held, no warning", c2.Host.Pids, w)
	}
	// past the terminals too: one each, of 2304 ((4096-1024) less a quarter)
	c.Sandboxes = 3000
	w = DensityWarning(c, reviewHost)
	for _, want := range []string{"kernel.pid_max (now 32768) to at least 384000 to hold 3000", "terminals hold at most 2304 sandboxes", "kernel.pty.max (now 4096) to at least 5024 to hold 3000"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q does not say %q", w, want)
		}
	}
	c2.Sandboxes = 0
	if w := DensityWarning(c2, big); !strings.Contains(w, "at most 1000 sandboxes") {
		t.Errorf("--max-sandboxes 0: %q, want the count the host holds", w)
	}
}

// A daemon whose open-file limit cannot hold its sandboxes' descriptors
// is warned of at start, with the limit that would.
func TestFilesWarningNamesTheLimitThatHoldsThem(t *testing.T) {
	if w := FilesWarning(1000, 1<<19); w != "" {
		t.Errorf("1,000 sandboxes under the usual 524288: %q", w)
	}
	w := FilesWarning(1000, 4096)
	for _, want := range []string{"--max-sandboxes 1000", "RLIMIT_NOFILE", "about 480 sandboxes", "at least 8256"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q does not say %q", w, want)
		}
	}
	if w := FilesWarning(0, 1024); w != "" {
		t.Errorf("--max-sandboxes 0: %q", w)
	}
}
