package pool

import (
	"context"
	"slices"
	"time"
)

// maxRetry bounds the wait after failed fills (a cap reached, a backend
// that fails): the pool tries again, never faster than it can fail.
const maxRetry = 30 * time.Second

// run fills p up to its target, one sandbox at a time, until Drain.
func (ps *Pools) run(p *pool) {
	defer ps.wg.Done()
	tick := time.NewTicker(ps.cfg.Idle)
	defer tick.Stop()
	var wait time.Duration
	for {
		if !ps.needs(p) {
			select {
			case <-p.kick:
			case <-tick.C:
				ps.lower(p)
			case <-ps.ctx.Done():
				return
			}
			continue
		}
		if ps.fill(p) == nil {
			wait = 0
			continue
		}
		wait = min(max(2*wait, ps.cfg.Retry), maxRetry)
		select {
		case <-time.After(wait):
		case <-ps.ctx.Done():
			return
		}
	}
}

// needs says whether p is short of its target, and counts the fill it
// then makes.
func (ps *Pools) needs(p *pool) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.draining || len(p.ready) >= p.st.Target {
		return false
	}
	p.st.Filling++
	return true
}

// fill makes one ready sandbox of p's shape.
func (ps *Pools) fill(p *pool) error {
	w, err := ps.core.Prewarm(ps.ctx, p.shape)
	release := func() {}
	if err == nil && ps.cfg.Hold != nil {
		if release, err = ps.cfg.Hold(w.Layers()); err != nil {
			w.Discard(context.Background())
		}
	}
	ps.mu.Lock()
	p.st.Filling--
	if err != nil && ps.draining {
		ps.mu.Unlock()
		return err // cut short by Drain: no failure of the pool's
	}
	if err != nil {
		p.st.Failed++
		p.st.LastError = err.Error()
		ps.mu.Unlock()
		ps.core.Logf("pool %s@%s: fill: %v", p.shape.Template, p.shape.Backend, err)
		return err
	}
	if ps.draining {
		p.st.Discarded++
		ps.mu.Unlock()
		w.Discard(context.Background())
		release()
		return context.Canceled
	}
	e := &entry{w: w, release: release, taken: make(chan struct{}), created: make(chan struct{})}
	p.ready = append(p.ready, e)
	p.st.Created++
	p.st.LastError = ""
	ps.mu.Unlock()
	go ps.watch(p, e)
	return nil
}

// watch lets go of e's layers once it is claimed and live, or gone; a
// ready sandbox that stops on its own leaves the pool (which refills).
func (ps *Pools) watch(p *pool, e *entry) {
	defer e.release()
	select {
	case <-e.w.Done():
		ps.mu.Lock()
		i := slices.Index(p.ready, e)
		if i >= 0 {
			p.ready = slices.Delete(p.ready, i, i+1)
			p.st.Discarded++
		}
		ps.mu.Unlock()
		if i >= 0 {
			e.w.Discard(context.Background()) // gives back its caps
			poke(p.kick)
		}
		return
	case <-e.taken:
	}
	select {
	case <-e.created:
	case <-e.w.Done():
		ps.mu.Lock()
		delete(ps.claimed, e.w.ID())
		ps.mu.Unlock()
	}
}

// lower lowers a target raised by misses when none came for Idle, and
// destroys the ready sandboxes beyond it (newest first).
func (ps *Pools) lower(p *pool) {
	ps.mu.Lock()
	if p.st.Target <= p.st.Min || time.Since(p.miss) < ps.cfg.Idle {
		ps.mu.Unlock()
		return
	}
	p.st.Target--
	var extra []*entry
	if n := len(p.ready) - p.st.Target; n > 0 {
		extra = slices.Clone(p.ready[len(p.ready)-n:])
		p.ready = p.ready[:len(p.ready)-n]
		p.st.Discarded += int64(n)
	}
	ps.mu.Unlock()
	for _, e := range extra {
		e.w.Discard(context.Background())
	}
}
