package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"
)

// waitState waits for a sandbox's record to be in state.
func waitState(t *testing.T, m *Manager, id, state string) *sandbox.Sandbox {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sb, err := m.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if sb.State == state {
			return sb
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s is not %s: %+v", id, state, sb)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A sandbox made to pause when its time to live ends is paused then, not
// destroyed: its processes frozen, its state paused, sandbox.pause on the
// record with the reason; it stays paused past that time, and a resume
// gives it its create's time to live again, from the resume.
func TestFakeTierPauseOnExpiry(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{TTLSeconds: 60, PauseOnExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetTTL(ctx, sb.ID, 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	p := waitState(t, m, sb.ID, "paused")
	if p.Expires == nil || p.Expires.After(time.Now()) {
		t.Errorf("paused sandbox's end: %v, want the past end of its time to live", p.Expires)
	}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil); err == nil {
		t.Error("exec in a sandbox paused by its time to live succeeded")
	}
	evs := eventsOf(t, log, sb.ID, "sandbox.pause")
	if len(evs) != 1 {
		t.Fatalf("sandbox.pause events: %d, want 1", len(evs))
	}
	var pl map[string]any
	if err := json.Unmarshal(evs[0].Payload, &pl); err != nil || pl["reason"] != "timeout" || evs[0].Actor != "airlock" {
		t.Errorf("sandbox.pause: %s by %q (%v), want reason timeout by airlock", evs[0].Payload, evs[0].Actor, err)
	}
	time.Sleep(200 * time.Millisecond) // well past its end: still paused
	if got, _ := m.Get(ctx, sb.ID); got.State != "paused" {
		t.Fatalf("after its end: %s, want paused", got.State)
	}
	r, err := m.Resume(ctx, sb.ID)
	if err != nil || r.State != "running" {
		t.Fatalf("resume: %+v %v", r, err)
	}
	if r.Expires == nil || time.Until(*r.Expires) < 55*time.Second || time.Until(*r.Expires) > 61*time.Second {
		t.Errorf("resumed sandbox's end: %v, want its create's 60s from the resume", r.Expires)
	}
	var out bytes.Buffer
	if _, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"echo", "awake"}}, nil, &out, nil); err != nil || st.Code != 0 || out.String() != "awake\n" {
		t.Errorf("exec after resume: %v %+v %q", err, st, out.String())
	}
	// The next end pauses it again (the rule lasts the sandbox's life).
	if _, err := m.SetTTL(ctx, sb.ID, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitState(t, m, sb.ID, "paused")
	if n := len(eventsOf(t, log, sb.ID, "sandbox.pause")); n != 2 {
		t.Errorf("sandbox.pause events: %d, want 2", n)
	}
}

// Without the rule a sandbox's end destroys it, paused or not (as before).
func TestFakeTierExpiryDestroys(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{TTLSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetTTL(ctx, sb.ID, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := waitStopped(t, m, sb.ID); got.StopReason != sandbox.StopExpired {
		t.Errorf("stop reason %q, want expired", got.StopReason)
	}
}

// The daemon's maximum lifetime destroys a sandbox made to pause: at its
// end when the two coincide, and while it is paused by its time to live.
func TestFakeTierPauseOnExpiryMaxLifetime(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeTierManagerWith(t, func(c *Config) { c.MaxLifetime = 700 * time.Millisecond })
	atLimit, err := m.Create(ctx, sandbox.CreateRequest{PauseOnExpiry: true}) // its time to live is the maximum
	if err != nil {
		t.Fatal(err)
	}
	paused, err := m.Create(ctx, sandbox.CreateRequest{PauseOnExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetTTL(ctx, paused.ID, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitState(t, m, paused.ID, "paused")
	for _, id := range []string{atLimit.ID, paused.ID} {
		if got := waitStopped(t, m, id); got.StopReason != sandbox.StopExpired {
			t.Errorf("%s: stop reason %q, want expired", id, got.StopReason)
		}
	}
	if got, _ := m.Get(ctx, atLimit.ID); got.Stopped == nil || got.Stopped.Sub(atLimit.Created) < 650*time.Millisecond {
		t.Errorf("stopped at %v, created %v: before its maximum lifetime", got.Stopped, atLimit.Created)
	}
}
