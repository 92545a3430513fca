package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// How a daemon stops its sandboxes at its end (what it does about its
// predecessor at its start is internal/lost's).

// ShutdownParallel is how many sandboxes Shutdown stops at once: each
// stop of a task's sandbox may take its diff (up to tasks.StopDiffTimeout), and
// one after the other they could outlast a service manager's stop timeout.
const ShutdownParallel = 4

// stopAll stops the sandboxes ids, ShutdownParallel at a time.
func (m *Manager) stopAll(ctx context.Context, ids []string, reason string) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, ShutdownParallel)
	for _, id := range ids {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := m.stop(ctx, id, reason); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("stop %s: %w", id, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
