package main

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// The program's regular expressions are compiled on first use (package
// lazyre); this compiles every one of them, so that an invalid one fails
// here and not in the middle of a request.
func TestEveryLazyRegexpCompiles(t *testing.T) {
	lazyre.CompileAll()
}
