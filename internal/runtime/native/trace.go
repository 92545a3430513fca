package native

import (
	"time"

	"github.com/airlock-dev/airlock/internal/runtime/hostside"
)

// trace prints phase timings to stderr when AIRLOCK_TRACE is set; used to
// profile sandbox creation.
func trace(start time.Time, what string) { hostside.Trace("native", start, what) }
