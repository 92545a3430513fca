package redacted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// RawJSON is doc, a JSON document of no known type (an exec's status
// or decision as stored, a payload), redacted by walking it decoded:
// every string value in the light of its key, and a number that is a
// known secret as a string marker (a document has no type for it to
// break). Object keys follow one rule: a key shaped like the daemon's
// own field names (redact.FieldName: lower-case ASCII letters, digits and
// underscores) is the daemon's word and kept as it is, so a value any
// caller teaches the redactor ("analysis", "stdout_bytes") hides no
// field of anyone's record; any other key is user data (a label, a
// path) and redacted like a value. The daemon writes no user data as a
// key of such a document (its maps of user data are typed, and
// Scrubbed redacts every key of those). A document that is not JSON is
// redacted as bytes and returned as a JSON string, as red.JSON does.
func RawJSON(red sandbox.Redactor, doc []byte) ([]byte, error) {
	if !json.Valid(doc) {
		return red.JSON(bytes.Clone(doc)), nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("redact document: %w", errdefs.ErrInvalid)
	}
	v, err := scrubDoc(red, v, "")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("redact document: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// scrubDoc redacts v, decoded with UseNumber, as the value of key.
func scrubDoc(red sandbox.Redactor, v any, key string) (any, error) {
	switch x := v.(type) {
	case string:
		return redactString(red, key, x)
	case json.Number:
		s, err := redactString(red, key, x.String())
		if err != nil || s == x.String() {
			return x, err
		}
		return s, nil
	case []any:
		for i := range x {
			var err error
			if x[i], err = scrubDoc(red, x[i], ""); err != nil {
				return nil, err
			}
		}
		return x, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			nv, err := scrubDoc(red, x[k], k)
			if err != nil {
				return nil, err
			}
			nk := k
			if !redact.FieldName(k) {
				nk = red.String(k)
			}
			out[nk] = nv
		}
		return out, nil
	default: // bool, nil
		return v, nil
	}
}
