package sandbox

import "github.com/airlock-dev/airlock/internal/redact"

// Redactor hides secrets before anything is stored or shown
// (internal/redact). It learns the values of secret-named variables
// given to sandboxes and commands.
type Redactor interface {
	Add(secrets ...string)
	Redact(b []byte) ([]byte, bool)
	// Find locates what Redact would replace.
	Find(b []byte) []redact.Finding
	String(s string) string
	JSON(doc []byte) []byte
	// LongestMatch is the most bytes one finding of a known value covers.
	LongestMatch() int
}
