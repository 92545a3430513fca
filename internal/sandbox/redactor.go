package sandbox

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
)

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

// NopRedactor hides nothing: the core's when none is configured
// (tests of other things).
type NopRedactor struct{}

func (NopRedactor) Add(...string)                  {}
func (NopRedactor) Redact(b []byte) ([]byte, bool) { return b, false }
func (NopRedactor) Find([]byte) []redact.Finding   { return nil }
func (NopRedactor) String(s string) string         { return s }
func (NopRedactor) JSON(b []byte) []byte           { return b }
func (NopRedactor) LongestMatch() int              { return 0 }

// SecretValues are the values of env's secret-named variables (K=V), for
// a redactor to learn. A value longer than MaxLearnedLen is left out
// (token shapes and private keys are still found by their shape); more
// than MaxLearned of them is an ErrInvalid.
func SecretValues(env []string) ([]string, error) {
	var vals []string
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if ok && policy.SecretName(name) && len(val) <= MaxLearnedLen {
			vals = append(vals, val)
		}
	}
	if len(vals) > MaxLearned {
		return nil, fmt.Errorf("%d secret-named variables: at most %d per request (grant secrets with airlock secret instead): %w", len(vals), MaxLearned, errdefs.ErrInvalid)
	}
	return vals, nil
}
