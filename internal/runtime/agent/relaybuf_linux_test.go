package agent

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// sizeReader serves data in reads as large as the caller's buffer and
// remembers each buffer's size.
type sizeReader struct {
	r     io.Reader
	sizes []int
}

func (s *sizeReader) Read(p []byte) (int, error) {
	s.sizes = append(s.sizes, len(p))
	return io.ReadFull(s.r, p)
}

// TestCopyPlainGrowsForBulk: a direction whose read fills the small
// buffer goes on with a large one, the bytes arrive intact, and the
// large buffer is given back at the end.
func TestCopyPlainGrowsForBulk(t *testing.T) {
	data := make([]byte, 3<<20+4093)
	rand.NewChaCha8([32]byte{1}).Read(data)
	src := &sizeReader{r: bytes.NewReader(data)}
	var dst bytes.Buffer
	if err := copyPlain(&dst, oneShot{src}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst.Bytes(), data) {
		t.Fatalf("%d bytes arrived, want %d, or they differ", dst.Len(), len(data))
	}
	if len(src.sizes) < 2 || src.sizes[0] != relayBuf || src.sizes[1] != bigRelayBuf {
		t.Errorf("read sizes %v, want %d then %d", src.sizes[:min(3, len(src.sizes))], relayBuf, bigRelayBuf)
	}
	if n := len(bigBufs.tokens); n != 0 {
		t.Errorf("%d large buffers still out after the copy", n)
	}
}

// TestCopyPlainSmallStaysSmall: a direction of short reads (an
// interactive exchange) never takes a large buffer.
func TestCopyPlainSmallStaysSmall(t *testing.T) {
	src := &trickle{left: 5000}
	var dst bytes.Buffer
	if err := copyPlain(&dst, src); err != nil || dst.Len() != 5000 {
		t.Fatalf("%d bytes, %v", dst.Len(), err)
	}
	for _, s := range src.sizes {
		if s != relayBuf {
			t.Fatalf("read sizes %v: a large buffer was taken for short reads", src.sizes)
		}
	}
	if len(bigBufs.tokens) != 0 {
		t.Error("a large buffer is still out")
	}
}

// trickle serves left bytes 100 at a time and remembers each buffer's
// size.
type trickle struct {
	left  int
	sizes []int
}

func (s *trickle) Read(p []byte) (int, error) {
	s.sizes = append(s.sizes, len(p))
	if s.left == 0 {
		return 0, io.EOF
	}
	n := min(100, len(p), s.left)
	s.left -= n
	return n, nil
}

// oneShot turns the io.ErrUnexpectedEOF of a short io.ReadFull into a
// plain short read, as a socket's read is.
type oneShot struct{ r io.Reader }

func (o oneShot) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// TestBigBufsBounded: a command holding many bulk connections makes the
// agent hold at most maxBigRelayBufs large buffers; the rest go on with
// their small ones, and one given back can be taken again.
func TestBigBufsBounded(t *testing.T) {
	p := newBufPool(1<<10, 3)
	var got [][]byte
	for range 5 {
		if b := p.get(); b != nil {
			got = append(got, b)
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d buffers handed out, want 3", len(got))
	}
	p.put(got[0])
	if b := p.get(); b == nil || len(b) != 1<<10 {
		t.Error("no buffer handed out after one was given back")
	}
	if b := p.get(); b != nil {
		t.Error("a fourth buffer handed out")
	}
	p.put(nil) // nothing taken, nothing given back
	if len(p.tokens) != 3 {
		t.Errorf("%d buffers counted out, want 3", len(p.tokens))
	}
}

// shortWriter accepts part of each write and reports no error.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

// TestCopyPlainShortWrite: a writer that takes less than it was given
// without an error ends the copy with io.ErrShortWrite, as io.Copy does.
func TestCopyPlainShortWrite(t *testing.T) {
	if err := copyPlain(shortWriter{}, bytes.NewReader(make([]byte, 10))); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("got %v, want io.ErrShortWrite", err)
	}
}

// fullReader fills the buffers of its first two reads, reporting their
// sizes on sizes, then waits for stop and ends: a bulk connection that
// holds whatever buffer it got.
type fullReader struct {
	stop  <-chan struct{}
	sizes chan int
	reads *int
}

func (f fullReader) Read(p []byte) (int, error) {
	if *f.reads++; *f.reads > 2 {
		<-f.stop
		return 0, io.EOF
	}
	f.sizes <- len(p)
	return len(p), nil
}

// TestManyBulkRelaysHoldBoundedMemory: a command that opens more bulk
// connections than there are large buffers (each direction reading full
// buffers as fast as it can) makes the agent hold maxBigRelayBufs of
// them, no more; the other relays go on with their small buffers, and
// every large one is back once the relays end.
func TestManyBulkRelaysHoldBoundedMemory(t *testing.T) {
	const relays = 3 * maxBigRelayBufs
	stop := make(chan struct{})
	done := make(chan error, relays)
	sizes := make([]chan int, relays)
	for i := range relays {
		sizes[i] = make(chan int, 2)
		go func() { done <- copyPlain(io.Discard, fullReader{stop: stop, sizes: sizes[i], reads: new(int)}) }()
	}
	// Every relay's second read is with whatever buffer its first, full,
	// read got it; then all of them hold it.
	small, big := 0, 0
	for i := range relays {
		<-sizes[i]
		switch <-sizes[i] {
		case relayBuf:
			small++
		case bigRelayBuf:
			big++
		}
	}
	if n := len(bigBufs.tokens); n > maxBigRelayBufs {
		t.Errorf("%d large buffers out at once, at most %d allowed", n, maxBigRelayBufs)
	}
	if big != maxBigRelayBufs || small != relays-maxBigRelayBufs {
		t.Errorf("%d relays read into large buffers and %d into small ones, want %d and %d", big, small, maxBigRelayBufs, relays-maxBigRelayBufs)
	}
	close(stop)
	for range relays {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if n := len(bigBufs.tokens); n != 0 {
		t.Errorf("%d large buffers still out after every relay ended", n)
	}
}
