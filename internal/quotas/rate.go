package quotas

import (
	"math"
	"sync"
	"time"
)

// Rate is the daemon's request rate per API key (airlock serve
// --key-rate, --key-burst): PerSecond on average, Burst at once. Zero
// PerSecond bounds nothing.
type Rate struct {
	PerSecond float64
	Burst     int // 0: PerSecond rounded up (at least 1)
}

// KeyRates is a token bucket per API key id. Only keys the API found
// valid reach it, so it holds one bucket per key at most.
type KeyRates struct {
	rate  Rate
	now   func() time.Time
	mu    sync.Mutex
	keys  map[string]*bucket
	burst float64
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewKeyRates makes the buckets of r (nil when r bounds nothing); now
// nil is time.Now.
func NewKeyRates(r Rate, now func() time.Time) *KeyRates {
	if r.PerSecond <= 0 || math.IsNaN(r.PerSecond) {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	burst := float64(r.Burst)
	if burst <= 0 {
		burst = max(1, math.Ceil(r.PerSecond))
	}
	return &KeyRates{rate: r, now: now, keys: map[string]*bucket{}, burst: burst}
}

// Allow takes one request of key id from its bucket; false: it is empty,
// and wait is how long until a token is back.
func (k *KeyRates) Allow(id string) (ok bool, wait time.Duration) {
	if k == nil {
		return true, 0
	}
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	b := k.keys[id]
	if b == nil {
		b = &bucket{tokens: k.burst, at: now}
		k.keys[id] = b
	}
	if el := now.Sub(b.at).Seconds(); el > 0 {
		b.tokens = min(k.burst, b.tokens+el*k.rate.PerSecond)
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / k.rate.PerSecond * float64(time.Second))
}

// Limit is the rate's figures, for an answer that refuses.
func (k *KeyRates) Limit() (perSecond float64, burst int) {
	if k == nil {
		return 0, 0
	}
	return k.rate.PerSecond, int(k.burst)
}
