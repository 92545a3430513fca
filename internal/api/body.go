package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Bounds on how slowly a request body may arrive. http.Server's
// ReadTimeout would bound the whole request, cutting legitimate long
// uploads; these bound each wait instead, so a client that trickles a
// body (a byte now and then) cannot hold a connection slot for long.
const (
	// BodyIdleTimeout: the longest one read of a body may wait for bytes.
	BodyIdleTimeout = 30 * time.Second
	// BodyMinRate: past BodyRateGrace, a body must have come at this
	// average rate (bytes per second) or more.
	BodyMinRate   = 1024
	BodyRateGrace = time.Minute
)

// errSlowBody: a request body came too slowly; the connection is closed.
var errSlowBody = errors.New("request body arrives too slowly")

// BodyGuard wraps h so that every request body it reads must keep
// coming: each read waits at most idle for bytes, and past grace the body
// must have averaged minRate bytes a second. A body that does not is an
// error to the handler and the connection is closed. Between reads the
// connection has no read deadline, so a handler that streams a long
// answer after reading its body (an exec) is not cut. What the server
// reads of a body the handler left unread is bounded by idle as well.
func BodyGuard(h http.Handler, idle time.Duration, minRate int64, grace time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &guardedBody{rc: rc, body: r.Body, idle: idle, minRate: minRate, grace: grace, start: time.Now()}
		}
		h.ServeHTTP(w, r)
		// The server then discards what is left of the body to reuse the
		// connection: not forever. It sets its own deadlines afterwards.
		_ = rc.SetReadDeadline(time.Now().Add(idle))
	})
}

type guardedBody struct {
	rc      *http.ResponseController
	body    io.ReadCloser
	idle    time.Duration
	minRate int64
	grace   time.Duration
	start   time.Time
	n       int64
	failed  error
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.failed != nil {
		return 0, b.failed
	}
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	n, err := b.body.Read(p)
	b.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && isTimeout(err) {
		return n, b.fail(fmt.Errorf("%w: no byte for %s: %w", errSlowBody, b.idle, errdefs.ErrTimeout))
	}
	if el := time.Since(b.start); err == nil && el > b.grace && float64(b.n) < float64(b.minRate)*el.Seconds() {
		return n, b.fail(fmt.Errorf("%w: %d bytes in %s, under %d bytes/s: %w", errSlowBody, b.n, el.Round(time.Second), b.minRate, errdefs.ErrTimeout))
	}
	_ = b.rc.SetReadDeadline(time.Time{})
	return n, err
}

// fail ends the body and the connection: its deadline stays in the past.
func (b *guardedBody) fail(err error) error {
	b.failed = err
	_ = b.rc.SetReadDeadline(time.Now().Add(-time.Second))
	return err
}

func (b *guardedBody) Close() error { return b.body.Close() }

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
