package clibase

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30s", 30 * time.Second, true},
		{"5m", 5 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"0", 0, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"-2d", -48 * time.Hour, true},
		{"5x", 0, false},
		{"d", 0, false},
		{"5", 0, false},
		{"1e3d", 0, false},
		{"infd", 0, false},
		{"1d-2h", 0, false},
		{"1.2.3d", 0, false},
		{"999999d", 0, false},
		{"", 0, false},
	} {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s, ok %v", c.in, got, err, c.want, c.ok)
		}
		if c.ok && c.in != "" {
			if back, err := ParseDuration(FmtDuration(got)); err != nil || back != got {
				t.Errorf("FmtDuration(%s) = %q reads back as %s, %v", got, FmtDuration(got), back, err)
			}
		}
	}
}
