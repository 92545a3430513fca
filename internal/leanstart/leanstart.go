// Package leanstart sets up the runtime for a program that starts, does
// one short piece of work on one goroutine and exits (the front's policy
// check, a process of its own that a hook runs before every command),
// before any other package's initialisation. Import it for its side
// effect, from such a main package only.
//
// One P (GOMAXPROCS 1): with two, each goroutine the runtime and the
// standard library start while packages initialise (finalizers, cleanups)
// woke an idle thread on the other CPU to run it: context switches, TLB
// shootdowns, and those threads' stacks and caches touched, about a fifth
// of the check's page faults and CPU time.
//
// A 32 KiB main stack: Go starts the goroutine at 2 KiB and doubles it by
// copying as it deepens; the check's deepest stack (the shell parser's
// walk, inside the classifier) needs 16 to 32 KiB, so four copies, each of
// a deeper stack, and each size's first stack carved from a fresh span
// whose every page the runtime touches. One growth to 32 KiB (a size the
// runtime does not pool) while the stack is shallow costs less than any
// one of those.
//
// It imports only runtime, so that it is initialised among the first
// packages (Go initialises, in import-path order, each package whose
// imports are initialised).
package leanstart

import "runtime"

func init() {
	runtime.GOMAXPROCS(1)
	grow()
}

// grow has a 16 KiB frame: the goroutine's stack grows to fit it at once,
// to 32 KiB (a frame of 16 KiB and what is under it do not fit in 16).
//
//go:noinline
func grow() byte {
	var pad [16 << 10]byte
	return pad[index] // read, so the frame is kept
}

var index = 0
