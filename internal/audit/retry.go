package audit

import (
	"context"
	"sync/atomic"
	"time"
)

// Retry tries to restart a stopped log (a full disk): at most once a
// second however often it is asked (a daemon's health endpoint and
// every request it refuses ask), and every period in the background
// until Stop. Recover records the outage once it can; then work is taken
// again, without a restart.
type Retry struct {
	log  *Log
	logf func(format string, args ...any)
	last atomic.Int64 // unix nanoseconds of the last try
	stop chan struct{}
}

// NewRetry is the retry of l, logging to logf; not started.
func NewRetry(l *Log, logf func(format string, args ...any)) *Retry {
	return &Retry{log: l, logf: logf}
}

// Try restarts the log if it is stopped and was not tried within the
// last second.
func (r *Retry) Try() {
	if r.log.Err() == nil {
		return
	}
	now := time.Now().UnixNano()
	last := r.last.Load()
	if now-last < int64(time.Second) || !r.last.CompareAndSwap(last, now) {
		return
	}
	if err := r.log.Recover(context.Background()); err != nil {
		r.logf("audit log still stopped: %v", err)
		return
	}
	r.logf("audit log running again (the outage is on the record)")
}

// Start tries every period until Stop; call it once.
func (r *Retry) Start(every time.Duration) {
	stop := make(chan struct{})
	r.stop = stop
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r.Try()
			}
		}
	}()
}

// Stop ends what Start began (none: nothing); a second Stop does nothing.
func (r *Retry) Stop() {
	if r.stop != nil {
		close(r.stop)
		r.stop = nil
	}
}
