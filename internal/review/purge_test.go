package review

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
)

// A purge is recorded first, then removes the result directories of
// tasks finished before its age (not of newer ones, nor their records)
// and the stored output and blobs older than it.
func TestPurgeRemovesOldResults(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	r := newRig(t, func(c *manager.Config) { c.Now = func() time.Time { return now } })
	id := r.sandbox(t)
	r.sh(t, id, "echo some output")
	for task, when := range map[string]time.Time{"t-000000000001": now.Add(-48 * time.Hour), "t-000000000002": now.Add(-time.Minute)} {
		if err := r.st.PutTask(ctx, finished(task, id, when)); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(r.dir, task, "result"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.rv.Purge(ctx, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.TaskResults != 1 || !res.Before.Equal(now.Add(-24*time.Hour)) {
		t.Errorf("purge: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "t-000000000001", "result")); !os.IsNotExist(err) {
		t.Errorf("an old result kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "t-000000000002", "result")); err != nil {
		t.Errorf("a new result removed: %v", err)
	}
	if ev := r.events(t, "", audit.PurgeKind); len(ev) != 1 || ev[0]["older_than"] != "24h0m0s" {
		t.Errorf("purge record: %v", ev)
	}
	// Everything is older than a purge of a nanosecond from later on.
	now = now.Add(time.Hour)
	if res, err := r.rv.Purge(ctx, time.Nanosecond); err != nil || res.Outputs == 0 || res.TaskResults != 1 {
		t.Errorf("purge of all: %+v %v", res, err)
	}
	if _, err := r.rv.Purge(ctx, 0); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("purge of no age: %v", err)
	}
	if _, err := New(Config{}).Purge(ctx, time.Hour); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("purge before attach: %v", err)
	}
}

// Without a task directory there are no results to remove.
func TestPurgeWithoutTaskDir(t *testing.T) {
	r := &Review{}
	if n, err := r.removeResults([]string{"t-000000000001"}); n != 0 || err != nil {
		t.Errorf("no task dir: %d %v", n, err)
	}
}
