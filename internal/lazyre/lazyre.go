// Package lazyre holds regular expressions that are compiled on first
// use instead of at program start. Every airlock process (the CLI, the
// daemon and each sandbox's init, which re-executes the same binary)
// would otherwise compile every package's expressions before main runs:
// about a millisecond per start, paid twice by each `airlock run`.
package lazyre

import (
	"regexp"
	"strconv"
	"sync"
)

var (
	mu  sync.Mutex
	all []func() *regexp.Regexp
)

// New returns a function that compiles expr on its first call (panicking,
// like regexp.MustCompile, if expr is invalid, and on every later call)
// and returns the same *regexp.Regexp on every call. It allocates twice:
// the process's init runs every package's New, and sync.OnceValue's
// closures made that several allocations each.
func New(expr string) func() *regexp.Regexp {
	l := &lazy{expr: expr}
	f := l.get
	mu.Lock()
	all = append(all, f)
	mu.Unlock()
	return f
}

type lazy struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

func (l *lazy) get() *regexp.Regexp {
	l.once.Do(l.compile)
	if l.re == nil { // the first call panicked
		panic("regexp: Compile(" + strconv.Quote(l.expr) + "): invalid expression")
	}
	return l.re
}

func (l *lazy) compile() { l.re = regexp.MustCompile(l.expr) }

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
