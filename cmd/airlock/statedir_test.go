package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/cli"
)

// newEnvDefaultCgroup is newEnv without AIRLOCK_CGROUP_PARENT: airlock
// picks the cgroup parent from the state dir, as it does for users.
func newEnvDefaultCgroup(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.defaultCgroup = true
	abs, err := filepath.Abs(e.state)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(filepath.Clean(abs)))
	e.cgroupName = "airlock-" + hex.EncodeToString(sum[:6])
	return e
}

// Two daemons on two state dirs, neither told a cgroup parent: the
// second one's start reaps only what its own state dir left, never the
// first one's running sandboxes (native and, where runsc is installed,
// gVisor ones).
func TestTwoStateDirsDoNotReapEachOther(t *testing.T) {
	e1, e2 := newEnvDefaultCgroup(t), newEnvDefaultCgroup(t)
	if e1.cgroupName == e2.cgroupName || e1.cgroupName == "airlock" {
		t.Fatalf("cgroup parents %q and %q", e1.cgroupName, e2.cgroupName)
	}
	withGVisor := false
	if _, err := exec.LookPath(cli.EnvOr("AIRLOCK_RUNSC", "runsc")); err == nil {
		withGVisor = true
	} else if os.Getenv("AIRLOCK_REQUIRE_GVISOR") != "" {
		t.Fatal("runsc is not installed, but AIRLOCK_REQUIRE_GVISOR is set")
	}
	d1 := e1.startDaemon(t)
	sock1 := "--socket=" + d1.sock
	var ids []string
	backends := []string{"native"}
	if withGVisor {
		backends = append(backends, "gvisor")
	}
	for _, be := range backends {
		out, errOut, code := e1.run("", "sandbox", "create", sock1, "--backend", be)
		if code != 0 {
			t.Fatalf("create a %s sandbox: %d %q", be, code, errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	before := e1.census()
	if before.Cgroups == 0 {
		t.Fatalf("the native sandbox's cgroup is not under %s: %+v", e1.cgroupName, before)
	}
	// the second daemon starts (and reaps), makes a sandbox of its own
	d2 := e2.startDaemon(t)
	if out, errOut, code := e2.run("", "sandbox", "create", "--socket="+d2.sock); code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("create on the second daemon: %d %q", code, errOut)
	}
	for i, id := range ids {
		if out, errOut, code := e1.run("", "sandbox", "exec", sock1, id, "--", "echo", "alive"); code != 0 || out != "alive\n" {
			t.Errorf("%s sandbox of the first daemon after the second one started: %d %q %q", backends[i], code, out, errOut)
		}
	}
	if c := e1.census(); c.Cgroups != before.Cgroups {
		t.Errorf("the first daemon's cgroups after the second one started: %+v", c)
	}
}

// airlock reap of one state dir leaves another's running sandbox alone.
func TestReapOfOtherStateDirLeavesSandbox(t *testing.T) {
	e1, e2 := newEnvDefaultCgroup(t), newEnvDefaultCgroup(t)
	d1 := e1.startDaemon(t)
	out, errOut, code := e1.run("", "sandbox", "create", "--socket="+d1.sock)
	id := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("create: %d %q", code, errOut)
	}
	if out, errOut, code := e2.run("", "reap"); code != 0 || !strings.Contains(out, "reaped 0 ") {
		t.Errorf("reap of the other state dir: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := e1.run("", "sandbox", "exec", "--socket="+d1.sock, id, "--", "echo", "alive"); code != 0 || out != "alive\n" {
		t.Errorf("sandbox after another state dir's reap: %d %q %q", code, out, errOut)
	}
}

// withoutEnv drops name from an environment list.
func withoutEnv(env []string, name string) []string {
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}
