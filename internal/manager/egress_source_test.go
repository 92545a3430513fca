package manager

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

type pidProcess int

func (p pidProcess) PID() int                                       { return int(p) }
func (pidProcess) Signal(os.Signal) error                           { return nil }
func (pidProcess) Wait(context.Context) (runtime.ExitStatus, error) { return runtime.ExitStatus{}, nil }

// A command's first connection can reach the manager before Exec has
// noted the command (between the backend's start and the entry in
// running): the connection waits for it, so the record names its exec
// (a CI flake: "egress event without its exec").
func TestEgressSourceWaitsForAStartingExec(t *testing.T) {
	m := &Manager{live: map[string]*live{}, running: map[string]*runningExec{}}
	ls := &live{taskID: "t-1", starting: 1}
	m.live["sb-1"] = ls
	c := &core{m: m}
	got := make(chan string, 1)
	go func() { _, execID := c.ExecOf("sb-1", 42); got <- execID }()
	time.Sleep(50 * time.Millisecond)
	m.mu.Lock()
	m.running["e-1"] = &runningExec{p: pidProcess(42), sandboxID: "sb-1"}
	ls.starting--
	m.mu.Unlock()
	select {
	case id := <-got:
		if id != "e-1" {
			t.Fatalf("connection attributed to exec %q, want e-1", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("source did not return")
	}

	// Nothing starting: a connection of no known command does not wait.
	start := time.Now()
	if taskID, execID := c.ExecOf("sb-1", 7); execID != "" || taskID != "t-1" {
		t.Fatalf("unknown pid: task %q exec %q", taskID, execID)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("unknown pid with nothing starting waited %v", d)
	}
}
