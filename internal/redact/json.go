package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
)

// JSON redacts every string inside a JSON document, keeping it valid JSON; invalid JSON is
// redacted as bytes and then returned as a JSON string.
//
// A key is redacted too unless it is shaped like a field's name (FieldName): lower-case ASCII
// letters, digits and underscores, as every field name airlock writes. Those are kept, since
// any caller can teach the redactor a value (a secret-named variable's), and a value taught
// that is a field's name ("sandbox_id") must not hide that field of every document. A secret
// written as a key in that shape is not found there (it still is as a value).
//
// The document is rewritten token by token rather than decoded and re-encoded, so key order,
// duplicate keys, numbers and layout survive, and two keys that redact to the same marker do
// not collapse into one. A string value is redacted in the light of its key, since
// {"password": "hunter2hunter2"} only looks like a secret with both. A number that holds a
// secret becomes a string, the only place a marker fits.
func (r *Redactor) JSON(doc []byte) []byte {
	if !json.Valid(doc) {
		red, _ := r.Redact(doc)
		return quoteJSON(string(red))
	}
	out := make([]byte, 0, len(doc))
	for i := 0; i < len(doc); {
		switch c := doc[i]; {
		case c == '"':
			j := stringEnd(doc, i)
			s := unquoteJSON(doc[i:j])
			colon := skipSpace(doc, j)
			isKey := colon < len(doc) && doc[colon] == ':'
			if isKey && FieldName(s) {
				out = append(out, doc[i:j]...) // a field's name, not data
			} else {
				out = appendRedacted(out, doc[i:j], s, r.String(s))
			}
			i = j
			if !isKey {
				continue
			}
			// s is a key: redact its value together with it.
			v := skipSpace(doc, colon+1)
			out = append(out, doc[j:v]...)
			i = v
			switch {
			case doc[v] == '"':
				ve := stringEnd(doc, v)
				vs := unquoteJSON(doc[v:ve])
				out = appendRedacted(out, doc[v:ve], vs, r.withKey(s, vs))
				i = ve
			case isNumberStart(doc[v]):
				ve := numberEnd(doc, v)
				out = r.appendNumber(out, doc[v:ve], s, true)
				i = ve
			}
		case isNumberStart(c):
			j := numberEnd(doc, i)
			out = r.appendNumber(out, doc[i:j], "", false)
			i = j
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// withKey redacts val as it would be redacted in "key=val", keeping only val's part.
func (r *Redactor) withKey(key, val string) string {
	pre := len(key) + 1
	text := []byte(key + "=" + val)
	fs := r.Find(text)
	if fs == nil {
		return val
	}
	var kept []Finding
	for _, f := range fs {
		if f.End <= pre {
			continue // in the key, which is redacted on its own
		}
		kept = append(kept, Finding{Kind: f.Kind, Start: max(f.Start, pre) - pre, End: f.End - pre})
	}
	if kept == nil {
		return val
	}
	out, _ := apply([]byte(val), kept)
	return string(out)
}

func (r *Redactor) appendNumber(out, num []byte, key string, keyed bool) []byte {
	red := r.String(string(num))
	if keyed {
		red = r.withKey(key, red)
	}
	if red == string(num) {
		return append(out, num...)
	}
	return append(out, quoteJSON(red)...)
}

// appendRedacted appends the original string token raw unless redaction changed its value.
func appendRedacted(out, raw []byte, was, now string) []byte {
	if was == now {
		return append(out, raw...)
	}
	return append(out, quoteJSON(now)...)
}

// quoteJSON encodes s as a JSON string without HTML escaping, so "<" stays readable.
func quoteJSON(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes; invalid UTF-8 becomes U+FFFD
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// unquoteJSON decodes a string token of a document json.Valid accepted.
func unquoteJSON(raw []byte) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// stringEnd returns the offset just past the string token starting at doc[i].
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(doc)
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

func isNumberStart(c byte) bool { return c == '-' || '0' <= c && c <= '9' }

func numberEnd(doc []byte, i int) int {
	for i < len(doc) && (isNumberStart(doc[i]) || doc[i] == '.' || doc[i] == 'e' || doc[i] == 'E' || doc[i] == '+') {
		i++
	}
	return i
}

// fieldNameRE is the shape of the field names airlock writes in JSON.
var fieldNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// FieldName reports whether a JSON object's key is shaped like a field's name (lower-case
// ASCII letters, digits and underscores, a letter first, at most 64 bytes): JSON keeps such a
// key as it is (see JSON).
func FieldName(key string) bool { return fieldNameRE.MatchString(key) }
