package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// guardPIDs lists the thaw guards (processes of the host, not of a
// sandbox) whose command line names the env's cgroup parent.
func (e *env) guardPIDs() []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, x := range ents {
		pid, err := strconv.Atoi(x.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + x.Name() + "/cmdline")
		if err != nil || !bytes.HasPrefix(b, []byte("airlock-thaw-guard\x00")) || !bytes.Contains(b, []byte(e.cgroupName)) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

func waitUntil(t *testing.T, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("%s: not after 10s", what)
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// On cgroup v1 a paused sandbox survived a SIGKILLed daemon: the v1
// freezer holds back even SIGKILL, so its processes stayed frozen for
// good (found in a lifecycle review). A thaw guard, started at pause and
// ended by resume, thaws it when the daemon dies; it ignores SIGTERM.
func TestServeSIGKILLWhilePaused(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	code, body := d.post(t, "/v1/sandboxes", `{}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var sb struct {
		ID        string
		Isolation struct{ Cgroup string }
	}
	_ = json.Unmarshal(body, &sb)
	v1 := strings.HasPrefix(sb.Isolation.Cgroup, "v1")
	if v1 {
		// destroy ends the guard of a paused sandbox
		_, body := d.post(t, "/v1/sandboxes", `{}`)
		var other struct{ ID string }
		_ = json.Unmarshal(body, &other)
		if code, body := d.post(t, "/v1/sandboxes/"+other.ID+"/pause", `{}`); code != 200 || len(e.guardPIDs()) != 1 {
			t.Fatalf("pause: %d %s; guards %v", code, body, e.guardPIDs())
		}
		req, _ := http.NewRequest("DELETE", "http://airlock/v1/sandboxes/"+other.ID, nil)
		if resp, err := d.client.Do(req); err != nil || resp.StatusCode != 204 {
			t.Fatalf("destroy a paused sandbox: %v %v", resp, err)
		}
		waitUntil(t, "the thaw guard to exit at destroy", func() bool { return len(e.guardPIDs()) == 0 })
	}
	marker := "paused-marker-" + e.cgroupName
	if code, body := d.post(t, "/v1/sandboxes/"+sb.ID+"/exec", `{"background":true,"argv":["/bin/sh","-c","sleep 1000; : `+marker+`"]}`); code != 202 {
		t.Fatalf("exec: %d %s", code, body)
	}
	waitMarked(t, marker, 1)
	pause := func() {
		t.Helper()
		if code, body := d.post(t, "/v1/sandboxes/"+sb.ID+"/pause", `{}`); code != 200 {
			t.Fatalf("pause: %d %s", code, body)
		}
	}
	pause()
	if v1 {
		if g := e.guardPIDs(); len(g) != 1 {
			t.Errorf("thaw guards while paused on cgroup v1: %v, want one", g)
		}
		// resume ends it
		if code, body := d.post(t, "/v1/sandboxes/"+sb.ID+"/resume", `{}`); code != 200 {
			t.Fatalf("resume: %d %s", code, body)
		}
		waitUntil(t, "the thaw guard to exit at resume", func() bool { return len(e.guardPIDs()) == 0 })
		pause()
		// A stop of the whole service sends SIGTERM to every process: the
		// guard must outlive it, the daemon's death is what it waits for.
		for _, pid := range e.guardPIDs() {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		time.Sleep(200 * time.Millisecond)
		if g := e.guardPIDs(); len(g) != 1 {
			t.Errorf("thaw guards after SIGTERM: %v, want the one", g)
		}
	} else {
		t.Log("cgroup v2: its freezer lets SIGKILL through, no thaw guard is needed")
	}
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	if waitUntil(t, "the paused sandbox's processes to die with the daemon", func() bool { return countMarked(marker) == 0 }) {
		waitUntil(t, "the thaw guard to exit", func() bool { return len(e.guardPIDs()) == 0 })
	}
	// the next start reaps what is left, cleanly
	d2 := e.startDaemon(t)
	resp, err := d2.client.Get("http://airlock/v1/sandboxes/" + sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		State      string `json:"state"`
		StopReason string `json:"stop_reason"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if got.State != "stopped" || got.StopReason != "lost" {
		t.Errorf("after SIGKILL and restart: %+v", got)
	}
	if c := e.census(); c != (native.Census{}) {
		t.Errorf("after restart: leftovers %+v", c)
	}
	_ = d2.cmd.Process.Signal(syscall.SIGTERM)
	_ = d2.cmd.Wait()
	if strings.Contains(d2.log.String(), "reap leftovers") {
		t.Errorf("the reap at the next start failed: %s", d2.log)
	}
}

// The output of a command running when the daemon died was lost (found in
// a lifecycle review): while it runs it is stored every 2 s, redacted,
// but for the tail a secret may still be arriving in; after a crash and a
// restart its stored output holds what was checkpointed.
func TestServeCrashKeepsCheckpointedOutput(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	code, body := d.post(t, "/v1/sandboxes", `{}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var sb struct{ ID string }
	_ = json.Unmarshal(body, &sb)
	const token = "tok-9f8e7d6c5b4a3210"
	// About 200 KB of output naming a secret, then a long wait.
	code, body = d.post(t, "/v1/sandboxes/"+sb.ID+"/exec", `{"background":true,"env":["API_TOKEN=`+token+`"],"argv":["/bin/sh","-c","i=0; while [ $i -lt 4000 ]; do echo \"line $i of the output, with $API_TOKEN in it\"; i=$((i+1)); done; sleep 1000"]}`)
	if code != 202 {
		t.Fatalf("exec: %d %s", code, body)
	}
	var ex struct {
		ExecID string `json:"exec_id"`
	}
	_ = json.Unmarshal(body, &ex)
	output := func(d *daemonProc) string {
		t.Helper()
		resp, err := d.client.Get("http://airlock/v1/sandboxes/" + sb.ID + "/execs/" + ex.ExecID + "/output?stream=stdout")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var running string
	waitUntil(t, "a checkpoint of the running command's output", func() bool {
		running = output(d)
		return len(running) > 100<<10
	})
	if running != "" && (strings.Contains(running, token) || !strings.HasPrefix(running, "line 0 of the output, with [REDACTED:known-secret] in it\n")) {
		t.Errorf("checkpoint not redacted: %.100q", running)
	}
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	d2 := e.startDaemon(t)
	after := output(d2)
	if len(after) < len(running) || !strings.HasPrefix(after, running) {
		t.Errorf("after the crash the stored output holds %d bytes, %d were checkpointed before", len(after), len(running))
	}
	if strings.Contains(after, token) {
		t.Error("the stored output holds the secret")
	}
}
