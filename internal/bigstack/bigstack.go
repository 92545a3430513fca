// Package bigstack grows the main goroutine's stack to 32 KiB before any
// other package's initialisation, for a program that starts, does one
// deep piece of work and exits (the front's policy check). Go starts the
// goroutine at 2 KiB and doubles it by copying as it deepens: the checks'
// deepest stack (the shell parser's walk, inside the classifier) needs 16
// to 32 KiB, so four copies, each of a deeper stack, and each size's first
// stack carved from a fresh span whose every page the runtime touches.
// One growth to 32 KiB (a size the runtime does not pool) while the stack
// is shallow costs less than any one of those.
//
// It imports nothing, so that it is initialised among the first packages
// (Go initialises, in import-path order, each package whose imports are
// initialised): import it for its side effect, from a main package only.
package bigstack

func init() { grow() }

// grow has a 16 KiB frame: the goroutine's stack grows to fit it at once,
// to 32 KiB (a frame of 16 KiB and what is under it do not fit in 16).
//
//go:noinline
func grow() byte {
	var pad [16 << 10]byte
	return pad[index] // read, so the frame is kept
}

var index = 0
