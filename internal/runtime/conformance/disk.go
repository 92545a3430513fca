package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// testDiskUsage: a DiskMeter reports the disk that holds /workspace and
// the home: about the disk limit in size, and what a file of known size
// written there adds (its removal frees) seen at once. A backend that
// declares it has no such figures is not a DiskMeter or answers
// unsupported.
func testDiskUsage(t *testing.T, f Factory, declared string) {
	sb := create(t, f, nil)
	dm, ok := sb.(runtime.DiskMeter)
	if declared != "" {
		if ok {
			if u, err := dm.DiskUsage(context.Background()); !errors.Is(err, errdefs.ErrUnsupported) {
				t.Errorf("declared no disk figures (%s), but DiskUsage = %+v %v, want unsupported", declared, u, err)
			}
		}
		t.Logf("declared difference: %s", declared)
		return
	}
	if !ok {
		t.Fatal("the backend is not a runtime.DiskMeter and declares no difference")
	}
	read := func() runtime.DiskUsage {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		u, err := dm.DiskUsage(ctx)
		if err != nil {
			t.Fatalf("disk usage: %v", err)
		}
		return u
	}
	before := read()
	lim := sb.Info().Limits.DiskBytes
	if before.TotalBytes <= lim/2 || before.TotalBytes > lim || before.UsedBytes <= 0 || before.AvailBytes > before.TotalBytes-before.UsedBytes ||
		before.Inodes <= 0 || before.InodesFree >= before.Inodes {
		t.Errorf("disk usage %+v, want a disk of about the limit (%d bytes)", before, lim)
	}
	const ws, home = 8 << 20, 4 << 20
	if r := shell(t, sb, `head -c 8388608 /dev/zero > /workspace/big && head -c 4194304 /dev/zero > "$HOME/big"`); r.st.Code != 0 {
		t.Fatalf("write: %+v %s", r.st, r.err)
	}
	after := read()
	if grew := after.UsedBytes - before.UsedBytes; grew < ws+home || grew > ws+home+1<<20 {
		t.Errorf("used %d -> %d (%+d), want the %d bytes written (and at most 1 MiB of metadata)", before.UsedBytes, after.UsedBytes, grew, ws+home)
	}
	if after.TotalBytes != before.TotalBytes || before.AvailBytes-after.AvailBytes < ws+home || before.InodesFree-after.InodesFree < 2 {
		t.Errorf("after the writes %+v, before %+v", after, before)
	}
	shell(t, sb, `rm /workspace/big "$HOME/big"`)
	if freed := read(); freed.UsedBytes > before.UsedBytes+1<<20 {
		t.Errorf("used %d after removing the files, %d before", freed.UsedBytes, before.UsedBytes)
	}
}

// testPageCache: a Meter's page cache is part of its memory, and grows
// with a file written in the sandbox. A backend that declares it cannot
// tell its page cache apart reports UnknownBytes.
func testPageCache(t *testing.T, f Factory, declared string) {
	sb := create(t, f, nil)
	m, ok := sb.(runtime.Meter)
	if !ok {
		t.Skip("the backend does not meter its sandboxes")
	}
	before, err := m.Usage()
	if err != nil {
		t.Fatalf("usage: %v", err)
	}
	if declared != "" {
		if before.PageCacheBytes != runtime.UnknownBytes {
			t.Errorf("declared no page cache (%s), but it is %d, want UnknownBytes", declared, before.PageCacheBytes)
		}
		t.Logf("declared difference: %s", declared)
		return
	}
	if before.PageCacheBytes < 0 || before.PageCacheBytes > before.MemoryBytes {
		t.Errorf("page cache %d of memory %d", before.PageCacheBytes, before.MemoryBytes)
	}
	shell(t, sb, "head -c 16777216 /dev/zero > /workspace/cached")
	after, err := m.Usage()
	// most of it: a busy host may have reclaimed some already
	if err != nil || after.PageCacheBytes-before.PageCacheBytes < 12<<20 || after.PageCacheBytes > after.MemoryBytes {
		t.Errorf("page cache %d -> %d of memory %d (%v), want the 16 MiB file's", before.PageCacheBytes, after.PageCacheBytes, after.MemoryBytes, err)
	}
}
