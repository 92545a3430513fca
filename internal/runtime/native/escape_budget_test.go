package native

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/conformance"
)

// Per-user kernel budgets: a command that uses up every inotify instance,
// inotify watch and queued signal it can get must not use up host root's
// (issue 16: the sandbox's user namespace was owned by host root, which
// every count made inside it was charged to as well).

// holdProbe starts the probe with args in sb and returns its result line
// while the probe still holds what it took; the probe is killed when the
// test ends.
func holdProbe(t *testing.T, sb runtime.Sandbox, args ...string) probeResult {
	t.Helper()
	line, err := conformance.StartHeld(sb, append([]string{"/workspace/probe"}, args...), t.Cleanup)
	var pr probeResult
	if err == nil {
		err = json.Unmarshal([]byte(line), &pr)
	}
	if err != nil {
		t.Fatalf("probe %q: %v", args, err)
	}
	return pr
}

// All the inotify instances a command can make leave host root able to
// make its own, and add a watch.
func TestEscapeResInotifyInstances(t *testing.T) {
	needRuntime(t)
	sb := escSandbox(t, withProbe(t))
	pr := holdProbe(t, sb, "inotify-instances", "4096", "120")
	if testing.Verbose() {
		t.Logf("sandbox: %s", pr)
	}
	if pr.OK || pr.Errno != "EMFILE" || pr.N > maxInotifyInstances {
		t.Errorf("instances in the sandbox: %s; want EMFILE within %d", pr, maxInotifyInstances)
	}
	if err := conformance.HostInotify(t.TempDir()); err != nil {
		t.Errorf("ESCAPE: after a sandbox made %d inotify instances, host root cannot: %v", pr.N, err)
	}
}

// All the inotify watches a command can add leave host root able to add
// its own.
func TestEscapeResInotifyWatches(t *testing.T) {
	needRuntime(t)
	hostMax := procInt(t, "/proc/sys/fs/inotify/max_user_watches")
	if hostMax > 1<<21 {
		t.Skipf("fs.inotify.max_user_watches is %d: too many to use up in a test", hostMax)
	}
	const insts = 32 // within the host's max_user_instances (128 by default)
	dirs := hostMax/insts + 64
	sb := escSandbox(t, withProbe(t))
	pr := holdProbe(t, sb, "inotify-watches", strconv.Itoa(dirs), strconv.Itoa(insts), "120")
	if testing.Verbose() {
		t.Logf("sandbox: %s", pr)
	}
	if pr.OK || pr.Errno != "ENOSPC" || pr.N > 65536 {
		t.Errorf("watches in the sandbox: %s; want ENOSPC within 65536", pr)
	}
	if err := conformance.HostInotify(t.TempDir()); err != nil {
		t.Errorf("ESCAPE: after a sandbox added %d inotify watches, host root cannot: %v", pr.N, err)
	}
}

// A sandbox holding every inotify watch and instance it can get leaves
// another sandbox's agent its own: the other's file activity stays
// complete.
func TestEscapeResInotifyOtherSandbox(t *testing.T) {
	needRuntime(t)
	hostMax := procInt(t, "/proc/sys/fs/inotify/max_user_watches")
	if hostMax > 1<<21 {
		t.Skipf("fs.inotify.max_user_watches is %d: too many to use up in a test", hostMax)
	}
	const insts = 32
	hog := escSandbox(t, withProbe(t))
	w := holdProbe(t, hog, "inotify-watches", strconv.Itoa(hostMax/insts+64), strconv.Itoa(insts), "120")
	i := holdProbe(t, hog, "inotify-instances", "4096", "120")
	if testing.Verbose() {
		t.Logf("hog: %s; %s", w, i)
	}
	other := escSandbox(t, nil)
	r := sh(t, other, "mkdir -p /workspace/d && echo x > /workspace/d/f")
	fa := r.Status.Files
	if fa == nil || fa.Incomplete || !slices.Contains(fa.Written, "/workspace/d/f") {
		t.Errorf("ESCAPE: another sandbox's inotify use made this one's file activity %+v; want complete, with /workspace/d/f", fa)
	}
}

// All the real-time signals a command can queue leave host root able to
// queue its own and make a POSIX timer (both charged to
// RLIMIT_SIGPENDING); the command's own RLIMIT_SIGPENDING is small.
func TestEscapeResSigPending(t *testing.T) {
	needRuntime(t)
	sb := escSandbox(t, withProbe(t))
	pr := holdProbe(t, sb, "sigqueue-rt", strconv.Itoa(1<<18), "120")
	if testing.Verbose() {
		t.Logf("sandbox: %s; host SigQ %s", pr, conformance.HostSigQ())
	}
	if pr.OK || pr.Errno != "EAGAIN" || pr.N > sigPendingMax {
		t.Errorf("signals queued in the sandbox: %s; want EAGAIN within %d", pr, sigPendingMax)
	}
	if err := conformance.HostSignals(); err != nil {
		t.Errorf("ESCAPE: after a sandbox queued %d signals, host root cannot: %v (SigQ %s)", pr.N, err, conformance.HostSigQ())
	}
}

// All the POSIX message queues a command can make (RLIMIT_MSGQUEUE
// bytes) leave host root able to make one. (Today a command cannot make
// any: mq_open is refused with EACCES before any budget is charged.)
func TestEscapeResMqueue(t *testing.T) {
	needRuntime(t)
	sb := escSandbox(t, withProbe(t))
	pr := holdProbe(t, sb, "mqueue-fill", "256", "120")
	if testing.Verbose() {
		t.Logf("sandbox: %s", pr)
	}
	if pr.OK || (pr.Errno != "EMFILE" && !(pr.Errno == "EACCES" && pr.N == 0)) {
		t.Errorf("message queues in the sandbox: %s; want EMFILE (RLIMIT_MSGQUEUE), or EACCES for the first", pr)
	}
	if err := conformance.HostMqueue(); err != nil {
		t.Errorf("ESCAPE: after a sandbox made %d message queues, host root cannot: %v", pr.N, err)
	}
}

func procInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
