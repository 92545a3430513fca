//go:build !linux

package seccomp

import (
	"fmt"
	"runtime"
)

// SockFilter mirrors the Linux classic-BPF instruction so that the API
// compiles everywhere; seccomp itself exists only on Linux.
type SockFilter struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}

// Program returns an error wrapping ErrUnsupported: seccomp is Linux-only.
func Program() ([]SockFilter, error) {
	return nil, fmt.Errorf("seccomp: not available on %s: %w", runtime.GOOS, ErrUnsupported)
}

// InstallThread returns an error wrapping ErrUnsupported: seccomp is
// Linux-only.
func InstallThread(prog []SockFilter) error {
	return fmt.Errorf("seccomp: not available on %s: %w", runtime.GOOS, ErrUnsupported)
}
