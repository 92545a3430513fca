package native

import (
	"fmt"
	"os"
	"time"
)

// trace prints phase timings to stderr when AIRLOCK_TRACE is set; used to
// profile sandbox creation.
func trace(start time.Time, what string) {
	if os.Getenv("AIRLOCK_TRACE") == "" {
		return
	}
	fmt.Fprintf(os.Stderr, "  [native +%7.3fms] %s\n", float64(time.Since(start).Microseconds())/1000, what)
}
