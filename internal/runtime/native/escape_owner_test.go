package native

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Every per-user count made inside a sandbox is charged also to its user
// namespace's owner: the owner must be the sandbox's own host uid, never
// host root (whose budgets would then be every sandbox's), and creating
// the sandbox must leave every thread of this process as it was.
func TestEscapeResNamespaceOwner(t *testing.T) {
	needRuntime(t)
	before := taskCreds(t)
	dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := impl(t, escSandbox(t, nil))
	owner, err := nsOwner(s.initPID)
	if err != nil {
		t.Fatal(err)
	}
	if owner != s.uidBase {
		t.Errorf("ESCAPE: the sandbox's user namespace is owned by host uid %d, want its own uid %d", owner, s.uidBase)
	}
	// The init runs as the sandbox's root, every id of it.
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.initPID), "status"))
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(s.uidBase)
	for _, k := range []string{"Uid:", "Gid:"} {
		if f := statusField(string(st), k); len(f) != 4 || f[0] != want || f[1] != want || f[2] != want || f[3] != want {
			t.Errorf("init %s %v, want %s four times", k, f, want)
		}
	}
	// This process: every thread's ids and capabilities as before.
	for tid, c := range taskCreds(t) {
		if b, ok := before[tid]; ok && b != c {
			t.Errorf("thread %s changed: %q, was %q", tid, c, b)
		}
		if f := strings.Fields(c); len(f) < 4 || f[1] != "0" {
			t.Errorf("thread %s is not root any more: %q", tid, c)
		}
	}
	if d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); d != dumpable {
		t.Errorf("dumpable is %d, was %d", d, dumpable)
	}
}

// taskCreds maps each thread of this process to its ids and capabilities.
func taskCreds(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "status"))
		if err != nil {
			continue // exited meanwhile
		}
		var c []string
		for _, k := range []string{"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapAmb:"} {
			c = append(c, strings.Join(statusField(string(b), k), " "))
		}
		m[e.Name()] = strings.Join(c, " | ")
	}
	return m
}

// statusField is the values of a /proc/PID/status line.
func statusField(status, key string) []string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			return strings.Fields(v)
		}
	}
	return nil
}
