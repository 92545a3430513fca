package redacted

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// Scrubbed returns a copy of v with every string in it, map keys
// included, passed through the redactor: a walk of the whole value, so
// that a field added later is covered without anyone remembering it.
// What is the daemon's and never agent text is kept as it is: the
// fields' names, times, and fields tagged `redact:"keep"` (ids, states).
// The redactor is the daemon's and any caller teaches it values, so a
// value taught that is also a field's name ("SandboxID"), a piece of
// every timestamp or another sandbox's id must not change other
// records. A string is redacted in the light of its JSON name, as in
// "password=...". A record that cannot be redacted is an error (the
// caller fails closed), never shown as it was: a known secret that is a
// field's whole number (no marker fits there), or a kind the walk does
// not know. A json.RawMessage in v is redacted as RawJSON does (its
// keys shaped like field names kept); a map's keys are user data and
// all redacted.
func Scrubbed[T any](red sandbox.Redactor, v *T) (*T, error) {
	if v == nil {
		return nil, nil
	}
	out := new(T)
	if err := scrub(red, reflect.ValueOf(out).Elem(), reflect.ValueOf(v).Elem(), ""); err != nil {
		return nil, fmt.Errorf("redact record: %w", err)
	}
	return out, nil
}

var (
	timeType   = reflect.TypeFor[time.Time]()
	rawType    = reflect.TypeFor[json.RawMessage]()
	numberType = reflect.TypeFor[json.Number]()
)

// scrub sets dst to src redacted; key is the JSON name src is under ("":
// none, an element of a list).
func scrub(red sandbox.Redactor, dst, src reflect.Value, key string) error {
	switch src.Type() {
	case timeType:
		dst.Set(src)
		return nil
	case rawType:
		if !src.IsNil() {
			doc, err := RawJSON(red, src.Bytes())
			if err != nil {
				return err
			}
			dst.SetBytes(doc)
		}
		return nil
	case numberType:
		return scrubNumber(red, dst, src, key)
	}
	switch src.Kind() {
	case reflect.String:
		s, err := redactString(red, key, src.String())
		dst.SetString(s)
		return err
	case reflect.Bool:
		dst.Set(src)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return scrubNumber(red, dst, src, key)
	case reflect.Pointer:
		if src.IsNil() {
			return nil
		}
		dst.Set(reflect.New(src.Type().Elem()))
		return scrub(red, dst.Elem(), src.Elem(), key)
	case reflect.Slice:
		if src.IsNil() {
			return nil
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			if err := scrub(red, dst.Index(i), src.Index(i), ""); err != nil {
				return err
			}
		}
	case reflect.Map:
		return scrubMap(red, dst, src)
	case reflect.Interface:
		// A value the record holds as any (a payload's map[string]any):
		// walked as what it is.
		if src.IsNil() {
			return nil
		}
		nv := reflect.New(src.Elem().Type()).Elem()
		if err := scrub(red, nv, src.Elem(), key); err != nil {
			return err
		}
		dst.Set(nv)
	case reflect.Struct:
		return scrubStruct(red, dst, src)
	default:
		return fmt.Errorf("cannot redact a %s: %w", src.Type(), errdefs.ErrInvalid)
	}
	return nil
}

// scrubNumber copies a number unless it is a known secret, as its JSON
// encoding shows it.
func scrubNumber(red sandbox.Redactor, dst, src reflect.Value, key string) error {
	if src.Type() == numberType && !json.Valid([]byte(src.String())) {
		return fmt.Errorf("number %q: %w", src.String(), errdefs.ErrInvalid)
	}
	b, err := json.Marshal(src.Interface())
	if err != nil {
		return err
	}
	if s, err := redactString(red, key, string(b)); err != nil || s != string(b) {
		return fmt.Errorf("a secret in a field that cannot hold a marker: %w", errdefs.ErrInvalid)
	}
	dst.Set(src)
	return nil
}

// scrubStruct redacts the exported fields (those JSON carries too) but
// those tagged `redact:"keep"`, copied as they are.
func scrubStruct(red sandbox.Redactor, dst, src reflect.Value) error {
	for i := range src.NumField() {
		f := src.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			name = f.Name
		}
		fred := red
		if f.Tag.Get("redact") == "keep" {
			fred = sandbox.NopRedactor{} // copied (deeply), not redacted
		}
		if err := scrub(fred, dst.Field(i), src.Field(i), name); err != nil {
			return err
		}
	}
	return nil
}

// scrubMap redacts a map with string keys, keys and values (each value
// in the light of its key), in the keys' order: two keys that redact to
// the same marker keep the value of the last.
func scrubMap(red sandbox.Redactor, dst, src reflect.Value) error {
	if src.IsNil() {
		return nil
	}
	if src.Type().Key().Kind() != reflect.String {
		return fmt.Errorf("cannot redact a %s: %w", src.Type(), errdefs.ErrInvalid)
	}
	dst.Set(reflect.MakeMapWithSize(src.Type(), src.Len()))
	keys := src.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		nk := reflect.New(src.Type().Key()).Elem()
		nk.SetString(red.String(k.String()))
		nv := reflect.New(src.Type().Elem()).Elem()
		if err := scrub(red, nv, src.MapIndex(k), k.String()); err != nil {
			return err
		}
		dst.SetMapIndex(nk, nv)
	}
	return nil
}

// redactString is s redacted as the JSON value of key ("": alone), as
// the redactor redacts a document: {"password": "hunter2hunter2"} only
// looks like a secret with both.
func redactString(red sandbox.Redactor, key, s string) (string, error) {
	if key == "" {
		return red.String(s), nil
	}
	doc, err := json.Marshal(map[string]string{key: s})
	if err != nil {
		return "", err
	}
	var m map[string]string
	if err := json.Unmarshal(red.JSON(doc), &m); err != nil || len(m) != 1 {
		return "", fmt.Errorf("redact %s: %w", key, errdefs.ErrInvalid)
	}
	for _, v := range m {
		s = v
	}
	return s, nil
}
