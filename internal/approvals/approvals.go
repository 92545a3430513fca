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
//   - Approve, Deny, BreakGlass: the operator's calls (the API refuses
//     them over TCP: the agent must not approve itself); List and Get
//     show an approver the held command as it would run, anyone else a
//     redacted copy.
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
	waiters map[string]chan string // held execs by approval id
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
	return &Approvals{wait: min(cfg.Wait, sandbox.MaxApprovalWait), waiters: map[string]chan string{}}
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

// waiter is the channel a held exec of approval id is told its decision
// on; forget it when the exec stops waiting.
func (a *Approvals) waiter(id string) chan string {
	ch := make(chan string, 1)
	a.mu.Lock()
	a.waiters[id] = ch
	a.mu.Unlock()
	return ch
}

func (a *Approvals) forget(id string) {
	a.mu.Lock()
	delete(a.waiters, id)
	a.mu.Unlock()
}

// notify tells the exec held for approval id (if one still waits) that
// it was decided.
func (a *Approvals) notify(id, state string) {
	a.mu.Lock()
	ch := a.waiters[id]
	a.mu.Unlock()
	if ch != nil {
		select {
		case ch <- state:
		default:
		}
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
