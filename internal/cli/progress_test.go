package cli

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// On a terminal the line is drawn at once, redrawn in place and cleared
// at the end; without one nothing is written.
func TestProgress(t *testing.T) {
	defer func(d time.Duration) { progressTick = d }(progressTick)
	progressTick = 10 * time.Millisecond
	var tty lockedBuf
	done := Progress(&tty, "cloning the repository")
	time.Sleep(50 * time.Millisecond)
	done()
	done() // twice is fine
	got := tty.b.String()
	if n := strings.Count(got, "\r\x1b[Kairlock: cloning the repository... 0s"); n < 2 {
		t.Errorf("drawn %d times: %q", n, got)
	}
	if !strings.HasSuffix(got, "0s\r\x1b[K") || strings.Contains(got, "\n") {
		t.Errorf("not redrawn in place and cleared: %q", got)
	}
	size := len(got)
	time.Sleep(30 * time.Millisecond)
	if len(tty.b.String()) != size {
		t.Error("drawn after done")
	}
	var esc lockedBuf
	Progress(&esc, "cloning /tmp/\x1b[2Jrepo")()
	if strings.Contains(esc.b.String(), "\x1b[2J") {
		t.Errorf("the repository's name reached the terminal raw: %q", esc.b.String())
	}
	Progress(nil, "x")() // not a terminal: nothing, and no goroutine to wait for
}
