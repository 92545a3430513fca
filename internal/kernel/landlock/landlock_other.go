//go:build !linux

package landlock

import (
	"fmt"
	"os"
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

// Ruleset is unavailable off Linux.
type Ruleset struct{}

// Prepare always fails off Linux.
func Prepare(Config) (*Ruleset, error) { return nil, fmt.Errorf("landlock: %w", ErrUnsupported) }

// PrepareWrites always fails off Linux.
func PrepareWrites([]*os.File) (*Ruleset, error) {
	return nil, fmt.Errorf("landlock: %w", ErrUnsupported)
}

// Applied is empty off Linux.
func (*Ruleset) Applied() Applied { return Applied{} }

// Close does nothing.
func (*Ruleset) Close() error { return nil }

// RestrictThread always fails off Linux.
func (*Ruleset) RestrictThread() (Applied, error) {
	return Applied{}, fmt.Errorf("landlock: %w", ErrUnsupported)
}
