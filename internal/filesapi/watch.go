package filesapi

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// WatchDir watches dir (judged as a read of it) through the backend's
// watcher. A change is passed on only when the policy would let the
// caller read its path: the names of files it may not read (a secret
// file written) are not told either. Those checks are quiet, not on the
// record: a watch sees every change, and a refusal is not the caller's
// act.
func (f *policedFiles) WatchDir(ctx context.Context, dir string, recursive bool) (<-chan runtime.WatchBatch, error) {
	dir, err := reqcheck.AbsPath(dir)
	if err != nil {
		return nil, err
	}
	if err := f.check(ctx, "watch", dir, false); err != nil {
		return nil, err
	}
	dw, ok := f.Files.(runtime.DirWatcher)
	if !ok {
		return nil, fmt.Errorf("this sandbox's backend cannot watch directories: %w", errdefs.ErrUnsupported)
	}
	in, err := dw.WatchDir(ctx, dir, recursive)
	if err != nil {
		return nil, err
	}
	out := make(chan runtime.WatchBatch, cap(in))
	go func() {
		defer close(out)
		for b := range in {
			kept := b.Events[:0]
			for _, e := range b.Events {
				if f.mayRead(e.Path) {
					kept = append(kept, e)
				}
			}
			if len(kept) == 0 && !b.Lost {
				continue
			}
			b.Events = kept
			select {
			case out <- b:
			case <-ctx.Done():
				for range in { // until the backend closes it
				}
				return
			}
		}
	}()
	return out, nil
}

// mayRead is the policy's decision on reading p, as the file API's read
// asks it, without the record or the approvals' lifts.
func (f *policedFiles) mayRead(p string) bool {
	cmd := policy.Command{Argv: []string{"files:read", p}, Classes: []policy.Class{policy.Read}, Why: "file API watch"}
	return f.pol.Decide(policy.FileAnalysis(cmd)).Action == policy.Allow
}
