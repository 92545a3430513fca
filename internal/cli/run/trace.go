package run

import (
	"fmt"
	"os"
	"time"
)

// tracef prints phase timings to stderr when AIRLOCK_TRACE is set; it is
// how the one-shot path's latency is profiled.
var traceStart = time.Now()

func tracef(format string, args ...any) {
	if os.Getenv("AIRLOCK_TRACE") == "" {
		return
	}
	fmt.Fprintf(os.Stderr, "[%7.3fms] %s\n", float64(time.Since(traceStart).Microseconds())/1000, fmt.Sprintf(format, args...))
}
