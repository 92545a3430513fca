package approvals

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
)

type held struct {
	out string
	pe  *sandbox.PolicyError
	err error
}

// holdAll runs line n times at once as the agent, each waiting wait.
func (r *rig) holdAll(t *testing.T, id, line string, n int, wait time.Duration) <-chan held {
	t.Helper()
	done := make(chan held, n)
	for range n {
		go func() {
			out, pe, err := r.sh(t, id, line, wait)
			done <- held{out, pe, err}
		}()
	}
	return done
}

// requests waits for n approval.request events in all.
func (r *rig) requests(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(r.events(t, "approval.request")) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d holds, want %d", len(r.events(t, "approval.request")), n)
		}
	}
}

// Duplicate requests share one approval: the same command held by five
// execs at once is one approval, and one approval answers all five; a
// retry that does not wait gets its id. Another caller's identical
// command is an approval of its own.
func TestDuplicatesShareOneApproval(t *testing.T) {
	r := newRig(t, Config{}, "")
	id := r.sandbox(t)
	const line = "rm -rf junk && echo removed"
	done := r.holdAll(t, id, line, 5, time.Minute)
	r.requests(t, 5)
	ap := r.pending(t, id) // fails unless exactly one
	if _, pe, _ := r.sh(t, id, line, -1); pe == nil || pe.Code != "approval_pending" || pe.Approval != ap.ID {
		t.Fatalf("a retry not waited for: %+v, want approval %s", pe, ap.ID)
	}
	other := sandbox.WithActor(context.Background(), "apikey:k-2")
	_, _, err := r.m.Exec(other, id, sandbox.ExecRequest{Argv: []string{"sh", "-c", line}, NoWait: true}, nil, nil, nil)
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) || pe.Approval == ap.ID || pe.Approval == "" {
		t.Fatalf("another caller's identical command: %v, want an approval of its own", err)
	}
	if _, err := r.a.Approve(operator, ap.ID, ApproveRequest{Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if h := <-done; h.err != nil || !strings.Contains(h.out, "removed") {
			t.Fatalf("a held duplicate after the approval: %+v", h)
		}
	}
	joined := 0
	for _, e := range r.events(t, "approval.request") {
		if strings.Contains(string(e.Payload), `"joined":true`) {
			joined++
		}
	}
	if joined != 5 { // four waiting duplicates and the retry
		t.Errorf("%d requests say they joined, want 5", joined)
	}
}

// A denial answers every duplicate with the reviewer's reason; a
// duplicate that stops waiting leaves the approval to the others, and the
// last one to stop ends it.
func TestDuplicatesDeniedAndGivenUp(t *testing.T) {
	r := newRig(t, Config{}, "")
	id := r.sandbox(t)
	done := r.holdAll(t, id, "rm -rf a", 2, time.Minute)
	r.requests(t, 2)
	ap := r.pending(t, id)
	if _, err := r.a.Deny(operator, ap.ID, "use git clean"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		h := <-done
		if h.pe == nil || h.pe.Code != "approval_denied" || h.pe.Approval != ap.ID || !strings.Contains(h.pe.Message, "use git clean") {
			t.Fatalf("a denied duplicate: %+v", h)
		}
	}
	long := r.holdAll(t, id, "rm -rf b", 1, time.Minute)
	r.requests(t, 3)
	ap = r.pending(t, id)
	if _, pe, err := r.sh(t, id, "rm -rf b", 50*time.Millisecond); !errors.Is(err, errdefs.ErrTimeout) || pe.Approval != ap.ID {
		t.Fatalf("a duplicate that stops waiting: %v", err)
	}
	if cur, _ := r.a.Get(operator, ap.ID); cur.State != store.ApprovalPending {
		t.Fatalf("one duplicate gave up while another waits: %+v", cur)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := r.a.Approve(operator, ap.ID, ApproveRequest{}); err != nil {
			t.Error(err)
		}
	}()
	if h := <-long; h.err != nil {
		t.Fatalf("the duplicate still waiting, approved: %+v", h)
	}
	wg.Wait()
	short := r.holdAll(t, id, "rm -rf c", 2, 100*time.Millisecond)
	r.requests(t, 5)
	for range 2 {
		if h := <-short; !errors.Is(h.err, errdefs.ErrTimeout) {
			t.Fatalf("an unanswered duplicate: %+v", h)
		}
	}
	if l, _ := r.a.List(operator, id, store.ApprovalPending); len(l) != 0 {
		t.Fatalf("the last duplicate stopped waiting, and its approval is still pending: %+v", l)
	}
}
