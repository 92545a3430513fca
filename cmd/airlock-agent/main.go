// Command airlock-agent is the lean agent: what a sandbox runs as PID 1
// (the native and gVisor backends' init and in-sandbox agent) and a
// paused sandbox's thaw guard, with nothing of the daemon linked in, so
// that it starts like a small Go program. scripts/build.sh embeds it in
// the core (package internal/runtime/agentbin); the backends start it.
package main

import (
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/internal/runtime/gvisor"
	"github.com/airlock-dev/airlock/internal/runtime/native"
)

func main() {
	// Each returns only when this process is not theirs to run.
	native.MaybeInit()
	gvisor.MaybeInit()
	fmt.Fprintln(os.Stderr, "airlock-agent: this is airlock's in-sandbox agent; airlock starts it, not people")
	os.Exit(2)
}
