package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/termsafe"
)

// progressTick is how often Progress redraws its line (a variable for
// tests).
var progressTick = time.Second

// Progress shows on tty, while a long request is in flight, what it is
// doing and for how long ("airlock: cloning the repository... 3s"),
// redrawn in place with \r, and clears the line when done is called
// (issue 19: a clone, a first diff, an export or a snapshot can take a
// minute with no sign of life). tty is nil when stderr is not a
// terminal: then nothing at all is written, so scripts and logs see
// the same bytes as ever. done waits for the last redraw to end, so
// nothing the caller prints next shares the line.
func Progress(tty io.Writer, what string) (done func()) {
	if tty == nil {
		return func() {}
	}
	what = termsafe.String(what)
	start := time.Now()
	stop, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(progressTick)
		defer t.Stop()
		for {
			fmt.Fprintf(tty, "\r\x1b[Kairlock: %s... %ds", what, int(time.Since(start).Seconds()))
			select {
			case <-stop:
				fmt.Fprint(tty, "\r\x1b[K")
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop); <-ended }) }
}

// Underlying is the writer w escapes into (w itself when it escapes
// nothing): the verbs' stderr is a termsafe.Writer around the terminal,
// and Progress's own bytes (\r, erase line) must reach it as they are;
// what it shows is escaped.
func Underlying(w io.Writer) io.Writer {
	if tw, ok := w.(*termsafe.Writer); ok {
		return tw.W
	}
	return w
}
