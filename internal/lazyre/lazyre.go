// Package lazyre holds regular expressions that are compiled on first
// use instead of at program start. Every airlock process (the CLI, the
// daemon and each sandbox's init, which re-executes the same binary)
// would otherwise compile every package's expressions before main runs:
// about a millisecond per start, paid twice by each `airlock run`.
package lazyre

import (
	"regexp"
	"sync"
)

var (
	mu  sync.Mutex
	all []func() *regexp.Regexp
)

// New returns a function that compiles expr on its first call (panicking,
// like regexp.MustCompile, if expr is invalid) and returns the same
// *regexp.Regexp on every call.
func New(expr string) func() *regexp.Regexp {
	f := sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
	mu.Lock()
	all = append(all, f)
	mu.Unlock()
	return f
}

// CompileAll compiles every expression made by New so far; a test calls
// it so that an invalid expression fails the build, not its first use.
func CompileAll() {
	mu.Lock()
	fs := append([]func() *regexp.Regexp(nil), all...)
	mu.Unlock()
	for _, f := range fs {
		f()
	}
}
