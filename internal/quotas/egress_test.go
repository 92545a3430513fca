package quotas

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/tenant"
)

// A project's egress bytes a day: refused once its connections moved the
// quota, other projects untouched, usage reported, and the bytes count
// for a rolling day (they leave the count 24 hours after they moved).
func TestEgressBytesPerDay(t *testing.T) {
	q, c := newQuotas(t, Config{Defaults: Limits{EgressBytesPerDay: 1000}})
	ctx := context.Background()
	if err := q.AdmitEgress(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	q.EgressMoved("p", 600)
	c.advance(time.Hour)
	if err := q.AdmitEgress(ctx, "p"); err != nil {
		t.Fatalf("at 600 of 1000: %v", err)
	}
	q.EgressMoved("p", 500) // a connection admitted under the quota ends past it
	qe := quotaErr(t, q.AdmitEgress(ctx, "p"), NameEgressPerDay)
	if qe.Used != 1100 || qe.Limit != 1000 || qe.Project != "p" {
		t.Errorf("refusal: %+v", qe)
	}
	if err := q.AdmitEgress(ctx, "other"); err != nil {
		t.Errorf("another project is refused by p's bytes: %v", err)
	}
	rep, err := q.Usage(ctx, "p")
	if err != nil || rep.Usage.EgressBytesLastDay != 1100 || rep.Quotas.EgressBytesPerDay != 1000 {
		t.Fatalf("usage: %+v, %v", rep, err)
	}
	c.advance(23*time.Hour + 5*time.Minute) // the first 600 bytes are a day old
	if err := q.AdmitEgress(ctx, "p"); err != nil {
		t.Errorf("a day after 600 of the bytes: %v", err)
	}
	if rep, _ := q.Usage(ctx, "p"); rep.Usage.EgressBytesLastDay != 500 {
		t.Errorf("a day later the usage is %d, want 500", rep.Usage.EgressBytesLastDay)
	}
}

// A project's admin may lower the egress quota, never lift it.
func TestEgressQuotaAdminOnlyLowers(t *testing.T) {
	q, _ := newQuotas(t, Config{Defaults: Limits{EgressBytesPerDay: 1000}})
	admin := tenant.With(context.Background(), tenant.Principal{Project: "p", Role: tenant.Admin, KeyID: "k"})
	if _, err := q.SetQuotas(admin, "p", Settings{EgressBytesPerDay: i64(0)}); err == nil {
		t.Error("an admin lifted the egress quota's bound")
	}
	if _, err := q.SetQuotas(admin, "p", Settings{EgressBytesPerDay: i64(2000)}); err == nil {
		t.Error("an admin raised the egress quota")
	}
	rep, err := q.SetQuotas(admin, "p", Settings{EgressBytesPerDay: i64(10)})
	if err != nil || rep.Quotas.EgressBytesPerDay != 10 {
		t.Fatalf("lowering: %+v, %v", rep, err)
	}
}
