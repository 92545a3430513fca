package audit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// The log is one chain for every project (issue 22): each event carries
// its project, and what a key reads of the log is its project's only.

// maxProjectCache bounds the sandbox -> project map; past it the map
// starts over (a lookup is one indexed query).
const maxProjectCache = 4096

// projectCache remembers sandboxes' projects, which never change (the
// store refuses an update of one).
type projectCache struct {
	st *store.Store
	mu sync.Mutex
	m  map[string]string
}

// of is the project of an event of sandboxID made for ctx: the
// sandbox's, else (no sandbox, or one not recorded yet) the principal's
// ("" for the operator and the daemon itself).
func (c *projectCache) of(ctx context.Context, sandboxID string) string {
	if sandboxID != "" && c.st != nil {
		c.mu.Lock()
		p, ok := c.m[sandboxID]
		c.mu.Unlock()
		if ok {
			return p
		}
		p, err := c.st.OwnerOf(context.WithoutCancel(ctx), string(tenant.Sandbox), sandboxID)
		if err == nil {
			c.mu.Lock()
			if c.m == nil || len(c.m) >= maxProjectCache {
				c.m = map[string]string{}
			}
			c.m[sandboxID] = p
			c.mu.Unlock()
			return p
		}
	}
	return tenant.Of(ctx).Project
}

// scoped confines f to the project ctx sees (tenant.Scope); ok is false
// when f asks for another project than a key's own, which then sees
// nothing (as for a project that does not exist).
func scoped(ctx context.Context, f store.AuditFilter) (store.AuditFilter, bool) {
	sc := tenant.Scope(ctx)
	if sc == "" {
		return f, true
	}
	if f.Project != "" && f.Project != sc {
		return f, false
	}
	f.Project = sc
	return f, true
}

// Query returns events in sequence order: for a key, its project's only
// (store.AuditFilter.Project); the operator names one or sees all.
func (l *Log) Query(ctx context.Context, f store.AuditFilter) ([]*Event, error) {
	l.async.wait()
	f, ok := scoped(ctx, f)
	if !ok {
		return []*Event{}, nil
	}
	rows, err := l.st.AuditEvents(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]*Event, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

// Blob returns a blob's content. A key gets it only when an event of
// its project refers to it (a reference Record made, not text that looks
// like one); any other blob is answered as one that is not there.
func (l *Log) Blob(ctx context.Context, hash string) ([]byte, error) {
	if sc := tenant.Scope(ctx); sc != "" {
		ok, err := l.referenced(ctx, sc, hash)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("store: audit blob %s: %w", hash, errdefs.ErrNotFound)
		}
	}
	return l.st.AuditBlob(ctx, hash)
}

// referenced says whether an event of project refers to blob hash: one
// written since events had a project is in the store's reference table;
// one written before (a sandbox's of project) is searched for.
func (l *Log) referenced(ctx context.Context, project, hash string) (bool, error) {
	l.async.wait()
	if ok, err := l.st.AuditBlobReferenced(ctx, project, hash); ok || err != nil {
		return ok, err
	}
	f := store.AuditFilter{Project: project, Unstamped: true, Contains: BlobRef(hash), Limit: 500}
	for {
		rows, err := l.st.AuditEvents(ctx, f)
		if err != nil {
			return false, err
		}
		for _, r := range rows {
			if slices.Contains(blobRefs(r.Payload), hash) {
				return true, nil
			}
			f.AfterSeq = r.Seq
		}
		if len(rows) < f.Limit {
			return false, nil
		}
	}
}

// blobHashes are the hashes of an event's blobs, sorted.
func blobHashes(blobs map[string][]byte) []string {
	if len(blobs) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(blobs))
}
