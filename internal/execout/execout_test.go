package execout

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redact"
)

// Write keeps the cap and its slack, drops the rest, and never fails or
// reports a short write (the command's output is not cut by its record).
func TestCappedKeepsCapAndSlack(t *testing.T) {
	c := NewCapped(10)
	big := bytes.Repeat([]byte("x"), Slack+100)
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if n, err := c.Write([]byte("more")); n != 4 || err != nil {
		t.Fatalf("Write past the slack: %d, %v", n, err)
	}
	if got := c.buf.Len(); got != 10+Slack {
		t.Errorf("kept %d bytes, want %d", got, 10+Slack)
	}
	if got := c.Redacted(redact.New()); len(got) != 10 {
		t.Errorf("Redacted: %d bytes, want the cap, 10", len(got))
	}
}

// Past the cap, with no secret at the cut, Redacted keeps exactly the cap.
func TestCappedCutAtCap(t *testing.T) {
	c := NewCapped(5)
	c.Write([]byte("abcdefgh"))
	if got := string(c.Redacted(redact.New())); got != "abcde" {
		t.Errorf("got %q", got)
	}
}

// A checkpoint under the cap but past the hold stores the redacted head;
// the next store (after more output) grows; nothing new, no store.
func TestCheckpointGrows(t *testing.T) {
	const secret = "envsecret-0123456789abcdefXYZ"
	r := redact.New(secret)
	c := NewCapped(1 << 20)
	c.Write([]byte(secret))
	c.Write(bytes.Repeat([]byte("a"), CheckpointHold+100))
	first, ok := c.Checkpoint(r)
	if !ok || strings.Contains(string(first), secret) || !strings.Contains(string(first), "[REDACTED:") {
		t.Fatalf("first checkpoint %v: %.60q", ok, first)
	}
	c.Write(bytes.Repeat([]byte("b"), 1000))
	second, ok := c.Checkpoint(r)
	if !ok || len(second) <= len(first) {
		t.Errorf("second checkpoint %v: %d bytes after %d", ok, len(second), len(first))
	}
	// New bytes that do not move the cut (the cap holds it): no store.
	c2 := NewCapped(10)
	c2.Write(bytes.Repeat([]byte("a"), CheckpointHold+100))
	if b, ok := c2.Checkpoint(r); !ok || len(b) != 10 {
		t.Fatalf("capped checkpoint %v: %d bytes", ok, len(b))
	}
	c2.Write([]byte("z"))
	if _, ok := c2.Checkpoint(r); ok {
		t.Error("a checkpoint whose cut did not move was stored again")
	}
}

// Checkpoints stores each stream's checkpoints while it runs, and stop
// waits for a store under way: nothing is put after it returns.
func TestCheckpointsStoreAndStop(t *testing.T) {
	r := redact.New()
	out, errOut := NewCapped(1<<20), NewCapped(1<<20)
	out.Write(bytes.Repeat([]byte("o"), CheckpointHold+10))
	var mu sync.Mutex
	got := map[string]int{}
	stopped := false
	put := func(stream string, b []byte) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			t.Errorf("put of %s after stop", stream)
		}
		got[stream] = len(b)
	}
	stop := Checkpoints(5*time.Millisecond, r, put, Stream{"stdout", out}, Stream{"stderr", errOut})
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := got["stdout"]
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	mu.Lock()
	stopped = true
	defer mu.Unlock()
	if got["stdout"] != 10 {
		t.Errorf("stdout checkpoint: %d bytes, want 10", got["stdout"])
	}
	if _, ok := got["stderr"]; ok {
		t.Error("stderr (nothing past the hold) was stored")
	}
}

// A gate holds writes until it opens; opening twice is fine.
func TestGate(t *testing.T) {
	g := NewGate()
	var buf bytes.Buffer
	w := g.Writer(&buf)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := w.Write([]byte("hi")); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
		t.Fatal("a write went through a closed gate")
	case <-time.After(20 * time.Millisecond):
	}
	g.Open()
	<-done
	g.Open()
	if buf.String() != "hi" {
		t.Errorf("got %q", buf.String())
	}
}

func TestOrDiscard(t *testing.T) {
	if OrDiscard(nil) != io.Discard {
		t.Error("nil is not io.Discard")
	}
	var buf bytes.Buffer
	if OrDiscard(&buf) != &buf {
		t.Error("a writer was replaced")
	}
}
