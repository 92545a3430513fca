package quotas

import (
	"context"
	"time"
)

// egressSlot is how finely the rolling day of egress bytes is counted:
// a byte counts for 24 hours after its slot began, so the day a refusal
// looks back over is between 23 h 55 min and 24 h long.
const (
	egressSlot  = 5 * time.Minute
	egressSlots = int64(24 * time.Hour / egressSlot)
)

// dayWindow counts bytes per slot over the last day.
type dayWindow struct {
	slots [egressSlots]int64 // the slot each counts (unix time / egressSlot)
	bytes [egressSlots]int64
}

func (w *dayWindow) total(slot int64) int64 {
	var n int64
	for i, s := range w.slots {
		if slot-s < egressSlots && slot >= s {
			n += w.bytes[i]
		}
	}
	return n
}

func (w *dayWindow) add(slot, n int64) {
	i := ((slot % egressSlots) + egressSlots) % egressSlots
	if w.slots[i] != slot {
		w.slots[i], w.bytes[i] = slot, 0
	}
	w.bytes[i] += n
}

func (q *Quotas) egressSlotNow() int64 { return q.now().UnixNano() / int64(egressSlot) }

// AdmitEgress refuses, as an *Error naming egress_bytes_per_day, a new
// egress connection of project once its sandboxes' connections moved its
// quota in the last 24 hours (the egress service also asks it for its
// open tunnels, and cuts one it refuses).
func (q *Quotas) AdmitEgress(ctx context.Context, projectID string) error {
	if err := q.attached(); err != nil {
		return err
	}
	p, err := q.entry(ctx, projectID)
	if err != nil {
		return err
	}
	slot := q.egressSlotNow()
	q.mu.Lock()
	defer q.mu.Unlock()
	lim := p.set.Over(q.cfg.Defaults).EgressBytesPerDay
	if n := p.egress.total(slot); lim > 0 && n >= lim {
		return &Error{Project: projectID, Quota: NameEgressPerDay, Limit: float64(lim), Used: float64(n)}
	}
	return nil
}

// EgressMoved adds n bytes one of project's connections moved (both
// ways) to its rolling day.
func (q *Quotas) EgressMoved(projectID string, n int64) {
	if q.attached() != nil || n <= 0 {
		return
	}
	slot := q.egressSlotNow()
	q.mu.Lock()
	q.ensure(projectID).egress.add(slot, n)
	q.mu.Unlock()
}
