//go:build !linux

package landlock

import (
	"fmt"
	"runtime"
)

// ABI reports ErrUnsupported: Landlock exists only on Linux.
func ABI() (int, error) {
	return 0, fmt.Errorf("landlock: %w on %s", ErrUnsupported, runtime.GOOS)
}

// RestrictThread reports ErrUnsupported: Landlock exists only on Linux.
func RestrictThread(cfg Config) (Applied, error) {
	return Applied{}, fmt.Errorf("landlock: %w on %s", ErrUnsupported, runtime.GOOS)
}
