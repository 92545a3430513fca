package fake

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox's processes are found by a variable in their environment
// (markerVar=token, and execVar=token.n for one command's tree): it
// survives setsid, double forks and leaving the process group, which is
// all the fake needs to end what its tests started. A process can drop
// it; the fake is no boundary.
const (
	markerVar = "AIRLOCK_FAKE_SANDBOX"
	execVar   = "AIRLOCK_FAKE_EXEC"
)

func (s *sandbox) marker() string { return markerVar + "=" + s.token }

// pidsWith lists the live processes whose environment holds kv (a
// zombie's environment reads empty: it is not listed).
func pidsWith(kv string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte("\x00" + kv + "\x00")
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// killAll SIGKILLs the processes that hold kv until none is left (they
// may fork meanwhile) and returns how many it ended.
func killAll(ctx context.Context, kv string) (int, error) {
	killed := map[int]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := pidsWith(kv)
		if len(pids) == 0 {
			return len(killed), nil
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
			killed[pid] = true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return len(killed), fmt.Errorf("processes %v (%s) survive SIGKILL", pids, kv)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stopAll SIGSTOPs the processes that hold kv until each of them is
// stopped (a child forked before its parent stopped is stopped too).
func stopAll(ctx context.Context, kv string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		running := 0
		for _, pid := range pidsWith(kv) {
			if !stopped(pid) {
				running++
				_ = unix.Kill(pid, unix.SIGSTOP)
			}
		}
		if running == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pause: %d processes did not stop", running)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stopped says whether pid is stopped (state T), gone, or held by a
// stopped vfork child: dash runs commands by vfork, and a parent whose
// child was stopped before its exec waits in the kernel (state D) and
// cannot take its own SIGSTOP until the child runs on. It runs no code
// of its own meanwhile, so it counts as stopped.
func stopped(pid int) bool {
	switch state(pid) {
	case 'T', 't', 'Z', 'X', 0:
		return true
	case 'D':
		return hasStoppedChild(pid)
	}
	return false
}

// state is the one-letter state of pid, or 0 if it is gone.
func state(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

func hasStoppedChild(pid int) bool {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil && (state(c) == 'T' || state(c) == 't') {
				return true
			}
		}
	}
	return false
}
