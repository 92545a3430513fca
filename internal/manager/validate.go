package manager

import (
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/reqcheck"
)

// checkExec validates an exec request before anything is recorded or
// asked of the policy: strings the kernel would cut at a NUL, and
// durations and sizes in range (callers converting a request's counts
// use reqcheck.Seconds and Millis first, so a wrapped value never arrives here).
func checkExec(req sandbox.ExecRequest) error {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return fmt.Errorf("argv must name a command: %w", errdefs.ErrInvalid)
	}
	for i, a := range req.Argv {
		if err := reqcheck.NoNUL(fmt.Sprintf("argv[%d]", i), a); err != nil {
			return err
		}
	}
	if err := reqcheck.NoNUL("cwd", req.Cwd); err != nil {
		return err
	}
	if err := reqcheck.Env(req.Env); err != nil {
		return err
	}
	switch {
	case req.Timeout < 0 || req.Timeout > reqcheck.MaxDuration:
		return fmt.Errorf("timeout_ms: want 0 to %d: %w", int64(reqcheck.MaxDuration/time.Millisecond), errdefs.ErrInvalid)
	case req.OutputLimit < 0:
		return fmt.Errorf("output_limit: %d must not be negative: %w", req.OutputLimit, errdefs.ErrInvalid)
	case req.ApprovalWait < 0 || req.ApprovalWait > sandbox.MaxApprovalWait:
		return fmt.Errorf("approval_wait_seconds: want 0 to %d: %w", int64(sandbox.MaxApprovalWait/time.Second), errdefs.ErrInvalid)
	}
	return nil
}

// MaxLifetime is the daemon's bound on a sandbox's life (0: none), for
// the doors that check a request before they hand it over.
func (m *Manager) MaxLifetime() time.Duration { return m.cfg.MaxLifetime }

func envNames(env []string) []string {
	var names []string
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			names = append(names, k)
		}
	}
	return names
}
