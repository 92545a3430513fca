package native

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/conformance"
)

func TestConformance(t *testing.T) {
	needRuntime(t)
	conformance.Run(t, func(t *testing.T) (runtime.Backend, runtime.Spec) {
		return newTestBackend(t), hostSpec(t)
	})
}
