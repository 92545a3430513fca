package hook

import (
	"context"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// The surface a warm pool module (internal/pool) attaches through. The
// core makes a ready sandbox of a shape for it (Core.Prewarm): started on
// its backend, with its network's host side, counted against the
// daemon's caps, but not live, not recorded and never given a command.
// At every Create the core asks the pool for one of the request's shape
// (WarmPool.Take); what the request sets beyond the shape (labels, env,
// policy, egress, the limits a backend can change on a live sandbox) the
// core applies to it at that claim, and a sandbox it cannot apply them to
// is discarded and the Create made as if there were no pool.

// WarmShape is what a pool's sandboxes share: everything that is set
// when a backend creates a sandbox and cannot change after it.
type WarmShape struct {
	Template string // the template's name (resolved: never "")
	Backend  string // the backend's name (resolved: never "")
	// Limits are the limits it was created with (zero fields: the
	// backend's defaults). A request's memory, CPUs and lifetime may
	// differ (runtime.Relimiter applies them at the claim); its other
	// limits may not.
	Limits runtime.Limits
}

// Warm is a ready sandbox the core made for a pool. Exactly one of
// Discard and a claim (the core's, through WarmPool.Take) ends it.
type Warm interface {
	// ID is the sandbox's id (the one it will have once claimed).
	ID() string
	// Shape is the shape it was made for.
	Shape() WarmShape
	// Layers are the template directories it runs on (its root and
	// lower layers), for a hold against the template GC while it waits.
	Layers() []string
	// Done is closed if the sandbox stopped on its own while it waited.
	Done() <-chan struct{}
	// Discard destroys it and gives back what it held of the caps. It
	// is idempotent, and a no-op once it was claimed.
	Discard(ctx context.Context)
}

// WarmPool is a module that keeps ready sandboxes. At most one module may
// be a WarmPool (attach refuses a second).
type WarmPool interface {
	// Take hands out one ready sandbox of shape s, or nil: none is
	// ready. A Warm is handed out at most once; the pool forgets it and
	// makes another in the background.
	Take(s WarmShape) Warm
	// Evict discards one ready sandbox of any shape (false: none is
	// ready), for a create the daemon's caps would refuse while the pools
	// hold them: a pool never stands in the way of a create that fits
	// without it.
	Evict(ctx context.Context) bool
	// Drain stops the pool's refills and discards every ready sandbox;
	// Shutdown calls it before it stops the live ones.
	Drain(ctx context.Context)
}
