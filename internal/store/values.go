package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Conversions between the Go values of this package and SQL values. Every
// encoder either returns a value that decodes back to exactly its input or
// an error wrapping errdefs.ErrInvalid: nothing is stored altered.

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errdefs.ErrInvalid)
}

func checkID(what, id string) error {
	if id == "" {
		return invalidf("empty %s id", what)
	}
	return nil
}

// nanos encodes t as nanoseconds since the Unix epoch. The zero time and
// times outside what an int64 of nanoseconds holds (about 1678-2262) are
// refused rather than silently wrapped.
func nanos(what string, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, invalidf("%s time is zero", what)
	}
	n := t.UnixNano()
	if !time.Unix(0, n).Equal(t) {
		return 0, invalidf("%s time %s is outside the storable range", what, t.Format(time.RFC3339Nano))
	}
	return n, nil
}

// optNanos is nanos for an optional time: nil is NULL.
func optNanos(what string, t *time.Time) (any, error) {
	if t == nil {
		return nil, nil
	}
	return nanos(what, *t)
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func fromOptNanos(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}

// rawJSON checks an opaque JSON value and returns it as TEXT, verbatim; an
// empty value is NULL (and reads back as nil).
func rawJSON(what string, m json.RawMessage) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if !json.Valid(m) {
		return nil, invalidf("%s is not valid JSON", what)
	}
	return string(m), nil
}

func toRaw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// stringsJSON encodes a string list as a JSON array; nil is NULL. JSON would
// replace invalid UTF-8, so that is refused.
func stringsJSON(what string, v []string) (any, error) {
	if v == nil {
		return nil, nil
	}
	for i, s := range v {
		if !utf8.ValidString(s) {
			return nil, invalidf("%s[%d] is not valid UTF-8", what, i)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func fromStringsJSON(what string, b []byte) ([]string, error) {
	if b == nil {
		return nil, nil
	}
	v := []string{}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("stored %s: %w", what, err)
	}
	return v, nil
}

// labelsJSON encodes labels as a JSON object; nil is NULL.
func labelsJSON(m map[string]string) (any, error) {
	if m == nil {
		return nil, nil
	}
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, invalidf("label %q is not valid UTF-8", k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func fromLabelsJSON(b []byte) (map[string]string, error) {
	if b == nil {
		return nil, nil
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("stored labels: %w", err)
	}
	return m, nil
}
