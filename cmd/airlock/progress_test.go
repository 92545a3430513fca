package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/testpty"
	"golang.org/x/sys/unix"
)

// The long steps (task start's clone, diff, export, finish, sandbox
// snapshot) show what they are doing on a terminal, redrawn in place and
// cleared at the end (issue 19); off a terminal they write exactly what
// they always did (nothing on stderr), so scripts see the same bytes.
func TestLongStepsShowProgressOnATerminal(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	sock := "--socket=" + d.sock
	repo := gitRepoOf(t, map[string]string{"a.txt": "a\n"})
	steps := []struct {
		shows string
		args  func(id, sb string) []string
	}{
		{"cloning ", func(_, _ string) []string { return []string{"task", "start", sock, "--repo", repo} }},
		{"diffing the workspace", func(id, _ string) []string { return []string{"task", "diff", sock, id} }},
		{"making the review bundle", func(id, _ string) []string {
			return []string{"task", "export", sock, id, "-o", filepath.Join(t.TempDir(), "b.tar.gz")}
		}},
		{"snapshotting ", func(_, sb string) []string {
			return []string{"sandbox", "snapshot", sock, sb, "snap-" + filepath.Base(t.TempDir())}
		}},
		{"finishing the task", func(id, _ string) []string { return []string{"task", "finish", sock, id} }},
	}
	for _, onTerm := range []bool{false, true} {
		out, _, _ := e.run("", "sandbox", "create", sock)
		sb := strings.TrimSpace(out)
		id := ""
		for _, s := range steps {
			args := s.args(id, sb)
			var code int
			var stdout, shown string
			if onTerm {
				code, stdout, shown = runOnTerminal(t, e, args...)
			} else {
				stdout, shown, code = e.run("", args...)
			}
			if code != 0 {
				t.Fatalf("%v: exit %d %q", args[:2], code, shown)
			}
			if id == "" {
				id = strings.TrimSpace(stdout)
			}
			switch {
			case !onTerm && shown != "":
				t.Errorf("%v off a terminal wrote to stderr: %q", args[:2], shown)
			case onTerm && (!strings.HasPrefix(shown, "\r\x1b[Kairlock: "+s.shows) || !strings.HasSuffix(shown, "s\r\x1b[K") || strings.Contains(shown, "\n")):
				t.Errorf("%v on a terminal showed %q", args[:2], shown)
			case strings.Contains(stdout, "\r") || strings.Contains(stdout, "airlock: "):
				t.Errorf("%v: progress on stdout: %q", args[:2], stdout)
			}
		}
	}
}

// runOnTerminal runs airlock with stderr on a terminal (stdout a pipe)
// and returns the exit code, stdout and what the terminal showed.
func runOnTerminal(t *testing.T, e *env, args ...string) (int, string, string) {
	t.Helper()
	master, slave := testpty.Open(t)
	cmd := e.cmd(args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, slave
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	// What it wrote waits in the pty (far less than its buffer), passed
	// on to the master a little later: read while it comes, without
	// blocking (the master's read deadline does not hold here).
	fd := int(master.Fd())
	var shown bytes.Buffer
	buf := make([]byte, 4096)
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(pfd, 500); n <= 0 || err != nil {
			break
		}
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		shown.Write(buf[:n])
	}
	return code, stdout.String(), shown.String()
}
