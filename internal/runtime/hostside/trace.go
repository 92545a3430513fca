package hostside

import (
	"fmt"
	"os"
	"time"
)

// Trace prints a phase's time since start to stderr, labelled, when
// AIRLOCK_TRACE is set: used to profile sandbox creation.
func Trace(label string, start time.Time, what string) {
	if os.Getenv("AIRLOCK_TRACE") == "" {
		return
	}
	fmt.Fprintf(os.Stderr, "  [%s +%7.3fms] %s\n", label, float64(time.Since(start).Microseconds())/1000, what)
}
