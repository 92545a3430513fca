// Package archtest holds the layering test: ARCHITECTURE.md's table
// "Packages and who may import them" is checked against the imports of
// every package in the module (as `go list` reports them), so the table
// is true by construction. It has no code but its tests.
package archtest
