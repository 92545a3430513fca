package fake

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/conformance"
)

// The fake passes the suite as a normal user would run it: nothing in
// it needs root.
func TestConformance(t *testing.T) {
	conformance.RunWith(t, func(t *testing.T) (runtime.Backend, runtime.Spec) {
		return New(t.TempDir()), runtime.Spec{RootFS: t.TempDir()}
	}, conformance.Differences{
		conformance.NoIsolation: "the fake backend is for tests only: its commands are host processes of the calling user, on the host's files, /proc, devices and network",
		"PtyLimit":              "the fake's terminals are the host's and it has no per-sandbox maximum: a pty limit is ErrUnsupported",
	})
}
