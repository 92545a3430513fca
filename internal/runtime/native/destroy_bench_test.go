package native

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// BenchmarkDestroyAfterExec: Destroy of a sandbox that ran /bin/true,
// from the call to its return (everything of it gone: processes,
// cgroups, state dir, uid slot).
func BenchmarkDestroyAfterExec(b *testing.B) {
	be := newTestBackend(b)
	spec := hostSpec(b)
	ctx := context.Background()
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sb, err := be.Create(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/bin/true"}})
		if err != nil {
			b.Fatal(err)
		}
		if st, err := p.Wait(ctx); err != nil || st.Code != 0 {
			b.Fatal(err, st)
		}
		b.StartTimer()
		start := time.Now()
		if err := sb.Destroy(ctx); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(medianMS(ds), "median-ms")
}
