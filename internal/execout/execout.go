// Package execout keeps what a running command writes, for its record:
// each stream capped (Capped), redacted so that no part of a secret is
// ever kept, checkpointed while the command runs (Checkpoints), and the
// writers that stream it to the caller held behind a Gate until the
// caller has been told the command started.
//
// It is pure: the manager gives it a redactor and a function that stores
// a checkpoint; it does no I/O of its own.
package execout

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/redact"
)

// Redactor is what Capped needs of the daemon's redactor
// (internal/redact): Redact replaces what Find locates, and no finding of
// a known value covers more than LongestMatch bytes.
type Redactor interface {
	Redact(b []byte) ([]byte, bool)
	Find(b []byte) []redact.Finding
	LongestMatch() int
}

// Slack is what a Capped keeps beyond its cap, so that a secret that
// straddles the cap is seen whole by the redactor (a known value's
// longest form, base64 of secrets.MaxValueBytes, is about 87 KiB).
const Slack = 128 << 10

// CheckpointHold is the least a checkpoint holds back of the output's
// tail: a secret may still be arriving there (see Capped.Checkpoint).
const CheckpointHold = 64 << 10

// Capped keeps the first n bytes written to it (and Slack more, for the
// redactor: see Redacted). It is safe for one writer and concurrent
// readers (checkpoints are taken while the command writes).
type Capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   int64
	// ckLen and ckCut: the bytes kept and the cut at the last checkpoint.
	ckLen, ckCut int
}

// NewCapped returns a Capped that keeps n bytes.
func NewCapped(n int64) *Capped { return &Capped{n: n} }

// Write keeps what fits under the cap and its slack and drops the rest;
// it never fails, so the command's output is never cut short by it.
func (c *Capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.n + Slack - int64(c.buf.Len()); room > 0 {
		if int64(len(p)) > room {
			c.buf.Write(p[:room])
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}

// Redacted returns the first n bytes kept, redacted. When the cap cuts a
// secret, the cut moves to before it: a part of a secret is never kept.
func (c *Capped) Redacted(r Redactor) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.buf.Bytes()
	if int64(len(b)) <= c.n {
		out, _ := r.Redact(b)
		return out
	}
	out, _ := r.Redact(b[:cutBefore(r, b, int(c.n))])
	return out
}

// Checkpoint returns what may be stored of the output while the command
// still runs, redacted, and false if that has not changed since the last
// call. The tail is held back (at least CheckpointHold bytes, and at
// least the longest form of any known secret value): a secret still
// arriving there is not found yet. The cut moves to before a secret it
// would split, so no part of one is ever stored.
func (c *Capped) Checkpoint(r Redactor) ([]byte, bool) {
	c.mu.Lock()
	if c.buf.Len() == c.ckLen {
		c.mu.Unlock()
		return nil, false
	}
	c.ckLen = c.buf.Len()
	b := bytes.Clone(c.buf.Bytes())
	c.mu.Unlock()
	cut := min(len(b)-max(CheckpointHold, r.LongestMatch()), int(c.n))
	if cut <= 0 {
		return nil, false
	}
	cut = cutBefore(r, b, cut)
	if cut == c.ckCut {
		return nil, false
	}
	c.ckCut = cut
	out, _ := r.Redact(b[:cut])
	return out, true
}

// cutBefore moves cut to the start of a finding it would split.
func cutBefore(r Redactor, b []byte, cut int) int {
	for _, f := range r.Find(b) {
		if f.Start < cut && f.End > cut {
			cut = f.Start
		}
	}
	return cut
}

// Stream is one named stream of a command's output ("stdout", "stderr").
type Stream struct {
	Name string
	Out  *Capped
}

// Checkpoints calls put with each stream's new checkpoint (see
// Capped.Checkpoint) every interval, so that a daemon that dies keeps
// what it had. put handles its own failure (the caller logs it). stop
// ends the checkpoints and waits for a put under way: the caller's final
// store comes after it.
func Checkpoints(every time.Duration, r Redactor, put func(stream string, b []byte), streams ...Stream) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			for _, s := range streams {
				if b, ok := s.Out.Checkpoint(r); ok {
					put(s.Name, b)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// Gate holds writes until it is opened, so that no output can overtake
// the caller's "started" notice.
type Gate struct {
	ch   chan struct{}
	once sync.Once
}

// NewGate returns a closed gate.
func NewGate() *Gate { return &Gate{ch: make(chan struct{})} }

// Open lets every write through, those waiting first; opening an open
// gate does nothing.
func (g *Gate) Open() { g.once.Do(func() { close(g.ch) }) }

// Writer returns w behind the gate: each write waits until it opens.
func (g *Gate) Writer(w io.Writer) io.Writer { return &gatedWriter{g: g, w: w} }

type gatedWriter struct {
	g *Gate
	w io.Writer
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.g.ch
	return g.w.Write(p)
}

// OrDiscard returns w, or io.Discard for a nil w (a caller that does not
// stream the output).
func OrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
