package execout

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/redact"
)

// The output of a command running when the daemon died was lost (found in
// a lifecycle review): checkpoints store it while it runs, redacted, but
// never the tail a secret may still be arriving in, and never part of a
// secret.
func TestCheckpointHoldsBackTheTail(t *testing.T) {
	const secret = "envsecret-0123456789abcdefXYZ"
	long := strings.Repeat("L0ng-s3cret/", 40<<10/12) // its hex form is over 64 KiB
	longHex := hex.EncodeToString([]byte(long))
	short, both := redact.New(secret), redact.New(secret, long)
	pad := func(n int) []byte { return bytes.Repeat([]byte("a"), n) }
	cases := []struct {
		name   string
		r      *redact.Redactor
		writes [][]byte
		// the stored checkpoint must not hold this
		partOf string
		minLen int
	}{
		{"under the hold", short, [][]byte{pad(CheckpointHold - 1)}, "", 0},
		{"a secret whole, then more", short, [][]byte{pad(1000), []byte(secret), pad(CheckpointHold + 10)}, secret[:6], 1000},
		{"a secret across the hold's edge", short, [][]byte{pad(1000), []byte(secret), pad(CheckpointHold - 10)}, secret[:6], 1000},
		// 70 KiB of its 80 KiB hex form arrived: a 64 KiB hold would cut
		// inside it and store 6 KiB of it, not found (it is not whole yet).
		// The hold is the longest form the redactor can find (a value's
		// forms spaced out or dumped run to ~240 KiB here), so the output
		// before it is long enough for the checkpoint to store 100 KiB.
		{"a long secret's hex form arriving", both, [][]byte{pad(400 << 10), []byte(longHex[:70<<10])}, longHex[:64], 100 << 10},
	}
	for _, tc := range cases {
		c := NewCapped(1 << 20)
		for _, w := range tc.writes {
			c.Write(w)
		}
		total := c.buf.Len()
		got, ok := c.Checkpoint(tc.r)
		if tc.minLen == 0 {
			if ok || len(got) > 0 {
				t.Errorf("%s: stored %d bytes of %d", tc.name, len(got), total)
			}
			continue
		}
		if !ok || len(got) < tc.minLen {
			t.Errorf("%s: stored %d bytes (%v), want at least %d", tc.name, len(got), ok, tc.minLen)
		}
		if len(got) > total-CheckpointHold && !strings.Contains(string(got), "[REDACTED:") {
			t.Errorf("%s: stored %d of %d bytes: the last %d must be held back", tc.name, len(got), total, CheckpointHold)
		}
		if strings.Contains(string(got), tc.partOf) {
			t.Errorf("%s: stored part of a secret", tc.name)
		}
		if strings.Contains(tc.name, "whole") && !strings.Contains(string(got), "[REDACTED:known-secret]") {
			t.Errorf("%s: the secret is not redacted: %q", tc.name, got[min(len(got), 990):min(len(got), 1100)])
		}
		if _, again := c.Checkpoint(tc.r); again {
			t.Errorf("%s: a second checkpoint with nothing new", tc.name)
		}
	}
}
