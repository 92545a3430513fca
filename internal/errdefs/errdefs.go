// Package errdefs defines the small set of error kinds every airlock layer
// uses. Wrap one of these with %w and context; the API layer maps each kind to
// a status code in one place. Any package may import errdefs; it imports
// nothing from airlock.
package errdefs

import (
	"errors"
	"fmt"
)

// The error kinds. Test with errors.Is.
var (
	ErrNotFound      = errors.New("not found")
	ErrConflict      = errors.New("conflict")
	ErrDenied        = errors.New("denied")
	ErrLimitExceeded = errors.New("limit exceeded")
	ErrUnsupported   = errors.New("unsupported")
	ErrInvalid       = errors.New("invalid argument")
	// ErrPending: the request waits for a human (an approval).
	ErrPending = errors.New("pending approval")
	// ErrTimeout: a wait ran out (an approval nobody gave in time).
	ErrTimeout = errors.New("timed out")
)

// Kind returns the name of the first kind err wraps, or "internal".
func Kind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrConflict):
		return "conflict"
	case errors.Is(err, ErrDenied):
		return "denied"
	case errors.Is(err, ErrLimitExceeded):
		return "limit_exceeded"
	case errors.Is(err, ErrUnsupported):
		return "unsupported"
	case errors.Is(err, ErrInvalid):
		return "invalid"
	case errors.Is(err, ErrPending):
		return "pending"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	}
	return "internal"
}

// Wrap returns an error of the given kind with a formatted message.
func Wrap(kind error, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), kind)
}
