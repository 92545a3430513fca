// Package approvals is the approvals module of the sandbox core
// (hook.Module): commands the policy asks a human about, the human's
// decision, the grants it makes, and the operator's break-glass override.
//
//   - Hold (hook.Holder): a command the policy decided "ask" is kept
//     as a pending approval, with the prompt an approver sees, and waits
//     (bounded) for a human; unanswered in time it expires. The core
//     decides again once it is approved: the module never lets a command
//     run, it only lifts.
//   - Lift (hook.PolicyLift): an approval's grant lets the same
//     command line (or the same held classes) through for a while, in
//     its sandbox only; a break-glass lets everything of one sandbox
//     through, denials included, loudly, for a bounded time.
//   - Approve, Deny: a reviewer's of the approval's project (never of
//     a request its own key made: who.go) or the operator's; BreakGlass:
//     an admin's of the sandbox's project, or the operator's. List and
//     Get show their project's approvals, to an approver (a reviewer, the
//     operator) as the held command would run, to anyone else redacted.
//   - Duplicates: the same caller's identical held command in the same
//     sandbox joins the pending approval (join.go); one decision answers
//     every exec held on it.
//
// Without this module the core denies every "ask" (a daemon without
// approvals). It uses only its hook.Core (store, redactor, audit
// record, clock, the sandbox's state) and the store.
package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// Bounds of the approval path (the wait a caller may ask for is bounded
// by the core's sandbox.MaxApprovalWait).
const (
	// DefaultWait is how long an exec waits for a human when the caller
	// does not say.
	DefaultWait = 5 * time.Minute
	// DefaultGrant and MaxGrant bound how long an approval lets commands
	// through: grants always expire.
	DefaultGrant = 15 * time.Minute
	MaxGrant     = 24 * time.Hour
	// MaxBreakGlass bounds an operator override (default DefaultGrant).
	MaxBreakGlass = 4 * time.Hour
)

// Config configures the module.
type Config struct {
	// Wait is how long a held exec waits for a human by default (0:
	// DefaultWait; at most sandbox.MaxApprovalWait).
	Wait time.Duration
}

// Approvals is the approvals module. Its methods fail (ErrUnsupported)
// until manager.New has attached it.
type Approvals struct {
	wait time.Duration
	c    hook.Core
	st   *store.Store

	mu      sync.Mutex
	waiters map[string]*hold // held execs by approval id
	// holding makes finding a pending duplicate and putting a new
	// approval one step: two holds of one command make one approval.
	holding sync.Mutex
}

var (
	_ hook.Holder     = (*Approvals)(nil)
	_ hook.PolicyLift = (*Approvals)(nil)
)

// New makes the module; attach it through manager.Config.Modules.
func New(cfg Config) *Approvals {
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	return &Approvals{wait: min(cfg.Wait, sandbox.MaxApprovalWait), waiters: map[string]*hold{}}
}

// Name is the module's name.
func (a *Approvals) Name() string { return "approvals" }

// Attach takes the module's handle on the core, and ends the approvals a
// previous daemon left pending: no sandbox is live yet, so none of them
// can ever run its command.
func (a *Approvals) Attach(c hook.Core) error {
	a.c, a.st = c, c.Store()
	a.endLeftovers(context.Background())
	return nil
}

func (a *Approvals) attached() error {
	if a.c == nil {
		return fmt.Errorf("approvals: the module is not attached to a manager: %w", errdefs.ErrUnsupported)
	}
	return nil
}

// hold is what the execs held on one approval wait on: a duplicate of
// a held command joins it (join.go), so one decision ends them all.
type hold struct {
	done  chan struct{} // closed once decided (state set)
	state string
	n     int // execs waiting
}

// waiter is the hold an exec held on approval id waits on (made by the
// first); forget it when the exec stops waiting.
func (a *Approvals) waiter(id string) *hold {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.waiters[id]
	if h == nil {
		h = &hold{done: make(chan struct{})}
		a.waiters[id] = h
	}
	h.n++
	return h
}

// forget is one exec no longer waiting on h; it says whether others
// still do.
func (a *Approvals) forget(id string, h *hold) (others bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h.n--
	if h.n <= 0 && a.waiters[id] == h {
		delete(a.waiters, id)
	}
	return h.n > 0
}

// notify tells the execs held on approval id (if any still wait) that
// it was decided; the first decision told stands.
func (a *Approvals) notify(id, state string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h := a.waiters[id]; h != nil && h.state == "" {
		h.state = state
		close(h.done)
	}
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func appendUniq(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}
