// Package inline is the classifier's knowledge of programs whose command
// line carries code: sed scripts (sed.go), perl one-liners (perl.go) and
// the interpreters' -e code (interp.go: ruby, php, ts-node, tsx, java).
// tools.go is its handler table.
package inline
