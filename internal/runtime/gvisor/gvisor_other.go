//go:build !linux

package gvisor

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Config configures the backend.
type Config struct {
	StateDir     string
	CgroupParent string
	Runsc        string
	Platform     string
	DieWithOwner bool
	Logf         func(format string, args ...any)
}

// InstallHint says how to get runsc.
const InstallHint = `gVisor needs Linux`

// Backend is unavailable off Linux.
type Backend struct{}

// New always fails off Linux.
func New(Config) (*Backend, error) {
	return nil, fmt.Errorf("gvisor backend needs Linux: %w", errdefs.ErrUnsupported)
}

// MaybeInit does nothing off Linux.
func MaybeInit() {}

func (*Backend) Name() string                       { return "gvisor" }
func (*Backend) Capabilities() runtime.Capabilities { return runtime.Capabilities{} }
func (*Backend) Create(context.Context, runtime.Spec) (runtime.Sandbox, error) {
	return nil, fmt.Errorf("gvisor backend needs Linux: %w", errdefs.ErrUnsupported)
}
