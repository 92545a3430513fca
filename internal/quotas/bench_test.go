package quotas

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"
)

// What the quotas add to an exec's admission: the module's AdmitExec
// under a quota, beside the core's loop over no Admitter (its peer).
func BenchmarkAdmitExec(b *testing.B) {
	ctx := context.Background()
	b.Run("no-module", func(b *testing.B) {
		var s hook.Set
		for b.Loop() {
			_ = s.AdmitExec(ctx, "p")
		}
	})
	b.Run("quota", func(b *testing.B) {
		q, _ := newQuotas(b, Config{Defaults: Limits{ExecsPerMinute: 1 << 40}})
		s := hook.Set{Admit: []hook.Named[hook.Admitter]{{Name: "quotas", Hook: q}}}
		for b.Loop() {
			if err := s.AdmitExec(ctx, "p"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
