package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// HostTables are the sizes of the host-wide tables that every sandbox and
// the host itself draw on, as /proc/sys says at the daemon's start.
type HostTables struct {
	PidMax, ThreadsMax int64 // kernel.pid_max, kernel.threads-max: tasks
	FileMax, NrOpen    int64 // fs.file-max: open files; fs.nr_open: most per process
	PtyMax, PtyReserve int64 // kernel.pty.max, kernel.pty.reserve (the initial devpts's)
}

// ReadHostTables reads the tables' sizes under procSys (/proc/sys).
func ReadHostTables(procSys string) (HostTables, error) {
	var h HostTables
	for _, f := range []struct {
		path string
		v    *int64
	}{
		{"kernel/pid_max", &h.PidMax}, {"kernel/threads-max", &h.ThreadsMax},
		{"fs/file-max", &h.FileMax}, {"fs/nr_open", &h.NrOpen},
		{"kernel/pty/max", &h.PtyMax}, {"kernel/pty/reserve", &h.PtyReserve},
	} {
		b, err := os.ReadFile(filepath.Join(procSys, f.path))
		if err != nil {
			return h, fmt.Errorf("host limits: %w", err)
		}
		// file-max can be ULONG_MAX: more than int64, which is no bound
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return h, fmt.Errorf("host limits: %s: %w", f.path, err)
		}
		*f.v = int64(min(v, 1<<62))
	}
	return h, nil
}

// HostShare is what sandboxes together may take of a table of n entries:
// the host keeps a quarter for itself.
func HostShare(n int64) int64 { return n - n/4 }

// fitCaps bounds the daemon's caps by the host's tables, so that its
// sandboxes together cannot exhaust them: the budgets of tasks and
// terminals, reserved by each Create (manager.HostBudget), and per-sandbox
// caps within them; open files, which no kernel counter bounds per
// sandbox, by a per-process cap of the files' share over --max-sandboxes.
// A flag set explicitly (explicit reports which) above what the host can
// give is an error; a default above it is lowered. It returns the caps
// and a line saying what was derived.
func fitCaps(c manager.Caps, h HostTables, explicit func(flag string) bool) (manager.Caps, string, error) {
	c.Host.Pids = HostShare(min(h.PidMax, h.ThreadsMax))
	c.Host.Ptys = max(HostShare(h.PtyMax-h.PtyReserve), 1)
	n := int64(max(c.Sandboxes, 1))
	files := min(h.NrOpen, HostShare(h.FileMax)/n)
	// largest that fits: a native sandbox's tasks are its pids and the
	// agent's reserve
	pids := c.Host.Pids - native.HostTasks(0)
	for _, f := range []struct {
		flag        string
		v           *int64
		most, lower int64
		why         string
	}{
		{"max-pids", &c.Limits.Pids, pids, c.Host.Pids / 4, "kernel.pid_max and threads-max less a quarter kept for the host"},
		{"max-ptys", &c.Limits.Ptys, min(c.Host.Ptys, native.MaxPtys), c.Host.Ptys / 4, "kernel.pty.max less kernel.pty.reserve and a quarter kept for the host"},
	} {
		switch {
		case explicit(f.flag) && *f.v > f.most:
			return c, "", fmt.Errorf("--%s %d: this host can give a sandbox at most %d (%s)", f.flag, *f.v, f.most, f.why)
		case !explicit(f.flag) && (*f.v == 0 || *f.v > f.lower):
			*f.v = max(f.lower, 1)
		}
	}
	switch {
	case explicit("max-nofile") && int64(c.Limits.NoFile) > files:
		return c, "", fmt.Errorf("--max-nofile %d: this host can give a sandbox process at most %d open files (fs.nr_open, or fs.file-max less a quarter kept for the host over --max-sandboxes %d)", c.Limits.NoFile, files, n)
	case c.Limits.NoFile == 0 || int64(c.Limits.NoFile) > files:
		c.Limits.NoFile = uint64(max(files, 1))
	}
	msg := fmt.Sprintf("host budget for all sandboxes: %d tasks, %d terminals; per sandbox at most %d pids, %d terminals, %d open files per process (kernel.pid_max %d, threads-max %d, fs.file-max %d, fs.nr_open %d, kernel.pty.max %d less %d reserved, --max-sandboxes %d)",
		c.Host.Pids, c.Host.Ptys, c.Limits.Pids, c.Limits.Ptys, c.Limits.NoFile, h.PidMax, h.ThreadsMax, h.FileMax, h.NrOpen, h.PtyMax, h.PtyReserve, c.Sandboxes)
	return c, msg, nil
}

// DensityWarning says, when the host's budgets cannot hold
// --max-sandboxes sandboxes (any number, when it is 0) even of the
// smallest limits, how many they hold and what would hold them: each
// Create reserves its sandbox's most tasks (pids) and terminals (ptys),
// so past that count creates are refused however idle the sandboxes
// are. Only the operator can raise the tables; "" when they fit.
func DensityWarning(c manager.Caps, h HostTables) string {
	var out []string
	smallest := native.HostTasks(native.MinPids)
	if w := budgetWarning(c.Sandboxes, c.Host.Pids, smallest, "kernel.pid_max", h.PidMax, 0); w != "" {
		out = append(out, fmt.Sprintf("this host's tasks hold at most %d sandboxes, even of the smallest pids limit (%d pids, %d host tasks each, reserved at create): %s (threads-max %d must allow it too)",
			c.Host.Pids/smallest, native.MinPids, smallest, w, h.ThreadsMax))
	}
	// the smallest sandbox has one terminal
	if w := budgetWarning(c.Sandboxes, c.Host.Ptys, 1, "kernel.pty.max", h.PtyMax, h.PtyReserve); w != "" {
		out = append(out, fmt.Sprintf("this host's terminals hold at most %d sandboxes, even of one pty each: %s", c.Host.Ptys, w))
	}
	if len(out) == 0 {
		return ""
	}
	if c.Sandboxes > 0 {
		return fmt.Sprintf("--max-sandboxes %d: %s", c.Sandboxes, strings.Join(out, "; "))
	}
	return strings.Join(out, "; ")
}

// budgetWarning says how to raise the host table named table (now its
// size, of which reserve is not the sandboxes') so that its share holds
// n sandboxes of each entries (n 0: more than now), or "" when it holds
// them already.
func budgetWarning(n int, share, each int64, table string, now, reserve int64) string {
	if share <= 0 || (n > 0 && int64(n) <= share/each) {
		return ""
	}
	if n == 0 {
		return fmt.Sprintf("raise %s (now %d) to hold more", table, now)
	}
	// HostShare(p) >= want: p - p/4 >= want
	want := int64(n) * each
	need := want + want/3
	for HostShare(need) < want {
		need++
	}
	return fmt.Sprintf("raise %s (now %d) to at least %d to hold %d", table, now, need+reserve, n)
}

// DaemonFilesPerSandbox bounds the descriptors the daemon holds for one
// idle sandbox: five measured (the sandbox's lock, its uid slot's lock,
// the agent's channel, two pidfds of its init), with room for what an
// exec or a file transfer holds while it runs.
const DaemonFilesPerSandbox = 8

// daemonFilesBase is what the daemon holds of its own: database,
// listeners, logs, clients' connections.
const daemonFilesBase = 256

// FilesWarning says, when the daemon's own open-file limit (nofile, its
// RLIMIT_NOFILE after the Go runtime raised it to the hard limit) cannot
// hold --max-sandboxes sandboxes, how many it holds: past that, creates
// and execs fail with "too many open files". "" when it fits, or when
// the count is unbounded (0), which no limit holds.
func FilesWarning(sandboxes int, nofile uint64) string {
	if sandboxes <= 0 {
		return ""
	}
	need := uint64(daemonFilesBase + sandboxes*DaemonFilesPerSandbox)
	if nofile >= need {
		return ""
	}
	holds := (int64(nofile) - daemonFilesBase) / DaemonFilesPerSandbox
	return fmt.Sprintf("--max-sandboxes %d: this daemon may open %d files (its hard RLIMIT_NOFILE), which holds about %d sandboxes (%d descriptors each): raise the hard limit to at least %d (LimitNOFILE= of its unit, ulimit -Hn)",
		sandboxes, nofile, max(holds, 0), DaemonFilesPerSandbox, need)
}
