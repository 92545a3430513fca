package gvisor

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/conformance"
)

func TestConformance(t *testing.T) {
	needGVisor(t)
	conformance.RunWith(t, func(t *testing.T) (runtime.Backend, runtime.Spec) {
		return newTestBackend(t), hostSpec(t)
	}, conformance.Differences{
		"WriteScope": "gVisor implements no Landlock, which enforces write scopes: RestrictWrites is ErrUnsupported",
		"PtyLimit":   "gVisor's terminals are its own, not the host's pool, and runsc has no per-sandbox maximum (it ignores devpts max=): a pty limit is ErrUnsupported",
		"PageCache":  "gVisor keeps the commands' memory and its cache of their files in one memory file, which the host counts as page cache, and the host's cache of the disk is the gofer's: neither is the sandbox's page cache, so it is UnknownBytes",
	})
}
