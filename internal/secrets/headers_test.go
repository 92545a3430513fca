package secrets

import (
	"errors"
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// A grant names the headers its value may go in: broker mode only, never
// a cookie or a header the proxy owns.
func TestGrantHeaders(t *testing.T) {
	got, err := grantHeaders("broker", []string{"x-api-key", "X-Api-Key", "authorization"})
	if err != nil || !slices.Equal(got, []string{"X-Api-Key", "Authorization"}) {
		t.Errorf("broker headers: %v %v", got, err)
	}
	if got, err := grantHeaders("broker", nil); err != nil || got != nil {
		t.Errorf("no headers: %v %v", got, err)
	}
	for _, tc := range []struct {
		mode string
		hs   []string
	}{
		{"env", []string{"X-Api-Key"}},
		{"broker", []string{"Cookie"}},
		{"broker", []string{"set-cookie"}},
		{"broker", []string{"Host"}},
		{"broker", []string{"X-A: b"}},
		{"broker", []string{""}},
	} {
		if _, err := grantHeaders(tc.mode, tc.hs); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s %q: %v, want invalid", tc.mode, tc.hs, err)
		}
	}
}
