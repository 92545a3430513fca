package client

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// When Wait gives up waiting for EOF (a background child holds the pipe),
// what the command already wrote must not be lost, however late the
// copier runs: a read past the deadline returns nothing, so the copier
// drains the pipe itself.
func TestCopyOutDrainsAfterDeadline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // held open, as by a background child
	if _, err := w.Write([]byte("written before the exit\n")); err != nil {
		t.Fatal(err)
	}
	// the deadline is set before the copier ever got to run
	if err := r.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	p := &process{limit: 1 << 20}
	var out bytes.Buffer
	var n int64
	var trunc bool
	p.copies.Add(1)
	done := make(chan struct{})
	go func() { p.copyOut(r, &out, &n, &trunc, "stdout"); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("copyOut did not return after the deadline")
	}
	if out.String() != "written before the exit\n" || n != int64(out.Len()) {
		t.Errorf("got %q (%d bytes)", out.String(), n)
	}
}
