package apikeys

import (
	"context"
	"sync"
	"time"
)

// bindings are the requests in progress of each key, so that revoking a
// key (or the end of a rotated key's overlap) ends its streams at once,
// not only its next request.
type bindings struct {
	mu sync.Mutex
	m  map[string]map[*binding]struct{}
}

type binding struct {
	cancel context.CancelCauseFunc
	timer  *time.Timer
}

// errRevoked ends a revoked key's requests.
var errRevoked = context.Canceled

// Bind ties ctx to key k for a request's life: the context ends when the
// key is revoked or expires. done releases it; call it once the request
// is answered.
func (k *Keys) Bind(ctx context.Context, key *Key) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	b := &binding{cancel: cancel}
	k.bound.add(key.ID, b)
	if key.Expires != nil {
		b.timer = time.AfterFunc(time.Until(*key.Expires), func() { cancel(errRevoked) })
	}
	return ctx, func() {
		k.bound.remove(key.ID, b)
		if b.timer != nil {
			b.timer.Stop()
		}
		cancel(nil)
	}
}

// EndRequests ends the requests in progress of key id, one already
// gone from the store (its project removed).
func (k *Keys) EndRequests(id string) { k.bound.revoke(id) }

func (bs *bindings) add(id string, b *binding) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.m == nil {
		bs.m = map[string]map[*binding]struct{}{}
	}
	if bs.m[id] == nil {
		bs.m[id] = map[*binding]struct{}{}
	}
	bs.m[id][b] = struct{}{}
}

func (bs *bindings) remove(id string, b *binding) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	delete(bs.m[id], b)
	if len(bs.m[id]) == 0 {
		delete(bs.m, id)
	}
}

// revoke ends every request in progress of key id.
func (bs *bindings) revoke(id string) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for b := range bs.m[id] {
		b.cancel(errRevoked)
	}
}

// expire ends key id's requests in progress at t.
func (bs *bindings) expire(id string, t time.Time) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for b := range bs.m[id] {
		if b.timer != nil {
			b.timer.Stop()
		}
		c := b.cancel
		b.timer = time.AfterFunc(time.Until(t), func() { c(errRevoked) })
	}
}
