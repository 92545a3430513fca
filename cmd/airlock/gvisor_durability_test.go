package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/internal/cli"
)

// needRunsc skips a test without runsc (fails it where gVisor is required).
func needRunsc(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath(cli.EnvOr("AIRLOCK_RUNSC", "runsc")); err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_GVISOR") != "" {
			t.Fatalf("runsc is not installed, but AIRLOCK_REQUIRE_GVISOR is set")
		}
		t.Skip("runsc is not installed (apt-get install -y runsc)")
	}
}

// gvisorCgroupParent is the env's gVisor cgroup parent (AIRLOCK_CGROUP_PARENT
// plus "-gvisor").
func (e *env) gvisorCgroupParent() string { return e.cgroupName + "-gvisor" }

// gvisorPIDs lists the host processes of the env's gVisor sandboxes: the
// members of their cgroups (runsc, the gofer, gVisor's kernel) and any
// process whose command line names the env's gVisor state (a runsc that
// left the group).
func (e *env) gvisorPIDs() []int {
	seen := map[int]bool{}
	for _, ctl := range []string{"freezer", "pids", "memory", "unified", ""} { // "": v2 alone
		root := filepath.Join("/sys/fs/cgroup", ctl, e.gvisorCgroupParent())
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	state := []byte(filepath.Join(e.state, "gvisor") + "/")
	ents, _ := os.ReadDir("/proc")
	for _, x := range ents {
		pid, err := strconv.Atoi(x.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + x.Name() + "/cmdline"); err == nil && bytes.Contains(b, state) {
			seen[pid] = true
		}
	}
	var pids []int
	for pid := range seen {
		pids = append(pids, pid)
	}
	return pids
}

// gvisorCensus is what the env's gVisor sandboxes hold on the host.
type gvisorCensus struct {
	StateDirs, Cgroups, Processes, Mounts, LoopDevices int
}

func (e *env) gvisorCensus() gvisorCensus {
	var c gvisorCensus
	if ents, err := os.ReadDir(filepath.Join(e.state, "gvisor", "sandboxes")); err == nil {
		c.StateDirs = len(ents)
	}
	for _, ctl := range []string{"memory", "pids", "cpu", "freezer", "cpuacct", "unified", ""} {
		if ents, err := os.ReadDir(filepath.Join("/sys/fs/cgroup", ctl, e.gvisorCgroupParent())); err == nil {
			for _, x := range ents {
				if x.IsDir() {
					c.Cgroups++
				}
			}
		}
	}
	c.Processes = len(e.gvisorPIDs())
	// the root lives in runsc's own mount namespace: any process's
	mounts, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	for _, m := range append(mounts, "/proc/self/mountinfo") {
		if b, err := os.ReadFile(m); err == nil && bytes.Contains(b, []byte(e.state)) {
			c.Mounts++
		}
	}
	// the disk's loop device detaches itself with its last user
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.HasPrefix(b, []byte(e.data)) {
			c.LoopDevices++
		}
	}
	return c
}

// A paused gVisor sandbox must die with a SIGKILLed daemon too. It is
// paused with the same cgroup freezer as a native one (the whole group:
// runsc, the gofer, gVisor's kernel), and on cgroup v1 that freezer held
// back runsc's parent-death SIGKILL, so the sandbox stayed frozen for good
// (found in a review). The thaw guard the native backend starts at pause
// now guards a gVisor sandbox as well.
func TestServeSIGKILLWhilePausedGVisor(t *testing.T) {
	needRunsc(t)
	e := newEnv(t)
	t.Cleanup(func() {
		// after newEnv's own cleanup (airlock reap) has run
		if c := e.gvisorCensus(); c != (gvisorCensus{}) {
			t.Errorf("gVisor leftovers after test: %+v", c)
		}
	})
	d := e.startDaemon(t)
	create := func() (id string, v1 bool) {
		t.Helper()
		code, body := d.post(t, "/v1/sandboxes", `{"backend":"gvisor"}`)
		if code != 201 {
			t.Fatalf("create: %d %s", code, body)
		}
		var sb struct {
			ID        string
			Backend   string
			Isolation struct{ Cgroup string }
		}
		_ = json.Unmarshal(body, &sb)
		if sb.Backend != "gvisor" {
			t.Fatalf("create: backend %q, want gvisor: %s", sb.Backend, body)
		}
		return sb.ID, strings.HasPrefix(sb.Isolation.Cgroup, "v1")
	}
	id, v1 := create()
	if code, body := d.post(t, "/v1/sandboxes/"+id+"/exec", `{"background":true,"argv":["/bin/sh","-c","sleep 1000"]}`); code != 202 {
		t.Fatalf("exec: %d %s", code, body)
	}
	pause := func() {
		t.Helper()
		if code, body := d.post(t, "/v1/sandboxes/"+id+"/pause", `{}`); code != 200 {
			t.Fatalf("pause: %d %s", code, body)
		}
	}
	pause()
	freezer := filepath.Join("/sys/fs/cgroup/freezer", e.gvisorCgroupParent(), id, "freezer.state")
	if v1 {
		if b, err := os.ReadFile(freezer); err != nil || strings.TrimSpace(string(b)) != "FROZEN" {
			t.Errorf("%s while paused: %q %v", freezer, b, err)
		}
		if g := e.guardPIDs(); len(g) != 1 {
			t.Errorf("thaw guards of a paused gVisor sandbox on cgroup v1: %v, want one", g)
		}
		// resume ends it, and pause starts a new one
		if code, body := d.post(t, "/v1/sandboxes/"+id+"/resume", `{}`); code != 200 {
			t.Fatalf("resume: %d %s", code, body)
		}
		waitUntil(t, "the thaw guard to exit at resume", func() bool { return len(e.guardPIDs()) == 0 })
		pause()
		// destroy of an other paused sandbox ends its guard, not this one's
		other, _ := create()
		if code, body := d.post(t, "/v1/sandboxes/"+other+"/pause", `{}`); code != 200 {
			t.Fatalf("pause: %d %s", code, body)
		}
		if g := e.guardPIDs(); len(g) != 2 {
			t.Errorf("thaw guards of two paused gVisor sandboxes: %v", g)
		}
		if code, body := d.do(t, "DELETE", "/v1/sandboxes/"+other); code != 204 {
			t.Fatalf("destroy a paused sandbox: %d %s", code, body)
		}
		waitUntil(t, "the other's thaw guard to exit at destroy", func() bool { return len(e.guardPIDs()) == 1 })
	} else {
		t.Log("cgroup v2: its freezer lets SIGKILL through, no thaw guard is needed")
	}
	if len(e.gvisorPIDs()) == 0 {
		t.Fatal("no host process of the gVisor sandbox found while paused")
	}
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	if waitUntil(t, "the paused gVisor sandbox's processes (runsc, gofer, sentry) to die with the daemon", func() bool { return len(e.gvisorPIDs()) == 0 }) {
		waitUntil(t, "the thaw guard to exit", func() bool { return len(e.guardPIDs()) == 0 })
	} else {
		t.Logf("still there: %v; %s: %s", e.gvisorPIDs(), freezer, readTrim(freezer))
	}
	// the next start reaps what is left, cleanly
	d2 := e.startDaemon(t)
	code, body := d2.do(t, "GET", "/v1/sandboxes/"+id)
	var got struct {
		State      string `json:"state"`
		StopReason string `json:"stop_reason"`
	}
	_ = json.Unmarshal(body, &got)
	if code != 200 || got.State != "stopped" || got.StopReason != "lost" {
		t.Errorf("after SIGKILL and restart: %d %+v", code, got)
	}
	if c := e.gvisorCensus(); c != (gvisorCensus{}) {
		t.Errorf("after restart: gVisor leftovers %+v", c)
	}
	_ = d2.cmd.Process.Signal(syscall.SIGTERM)
	_ = d2.cmd.Wait()
	if strings.Contains(d2.log.String(), "reap leftovers") {
		t.Errorf("the reap at the next start failed: %s", d2.log)
	}
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

// do sends a request without a body; it returns the status and the body.
func (d *daemonProc) do(t *testing.T, method, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://airlock"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}
