package execout

import (
	"bytes"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/redact"
)

// A secret the stored-output cap cuts is not kept in part: the cut moves
// to before it.
func TestCappedNeverKeepsPartOfASecret(t *testing.T) {
	const secret = "envsecret-0123456789abcdefXYZ"
	r := redact.New(secret)
	for _, before := range []int{0, 50, 90, 99, 100, 130} {
		c := NewCapped(100)
		c.Write(bytes.Repeat([]byte("a"), before))
		c.Write([]byte(secret))
		c.Write([]byte("tail"))
		got := string(c.Redacted(r))
		if len(got) > 100 {
			t.Errorf("%d bytes before the secret: kept %d bytes, cap 100", before, len(got))
		}
		for n := 6; n <= len(secret); n++ {
			if strings.Contains(got, secret[:n]) {
				t.Errorf("%d bytes before the secret: kept %q, which holds %q", before, got, secret[:n])
				break
			}
		}
		if before+len(secret) <= 100 && !strings.Contains(got, "[REDACTED:") {
			t.Errorf("%d bytes before the secret: %q, want it redacted", before, got)
		}
	}
	// Under the cap nothing moves.
	c := NewCapped(100)
	c.Write([]byte("short"))
	if got := string(c.Redacted(r)); got != "short" {
		t.Errorf("under the cap: %q", got)
	}
}
