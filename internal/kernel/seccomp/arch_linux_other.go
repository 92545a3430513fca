//go:build linux && !amd64

package seccomp

// native is nil: there is no profile for this architecture yet, so Program
// returns an error wrapping ErrUnsupported.
var native *archSpec
