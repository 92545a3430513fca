package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/wire"
)

// A snapshot writes sparse files dense: one of a 16 MiB sandbox wrote
// 629 MB to the host (found in a lifecycle review). Over the sandbox's
// disk size + 64 MiB it fails with 429 and leaves nothing behind.
func TestSnapshotOfSparseFilesIsCapped(t *testing.T) {
	d := newDaemon(t)
	var sb sandbox.Sandbox
	if code := d.do("POST", "/v1/sandboxes", map[string]any{"limits": runtime.Limits{DiskBytes: 16 << 20}}, &sb); code != 201 {
		t.Fatalf("create: %d", code)
	}
	// Eight sparse files of 15 MiB each (each under the file size limit),
	// 120 MiB read dense, on a disk of 16 MiB.
	_, events, _ := d.exec(sb.ID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do truncate -s 15M /workspace/sparse$i || exit 1; done; du -sk /workspace"}})
	if out, errOut, exit := collect(events); exit == nil || exit.Status == nil || exit.Status.Code != 0 {
		t.Fatalf("make sparse files: %q %q %+v", out, errOut, exit)
	}
	var e wire.Error
	if code := d.do("POST", "/v1/sandboxes/"+sb.ID+"/snapshot", map[string]string{"name": "sparse"}, &e); code != 429 || e.Code != "limit_exceeded" || !strings.Contains(e.Message, "disk size (16 MiB) + 64 MiB") {
		t.Fatalf("snapshot of 120 MiB of sparse files in a 16 MiB sandbox: %d %+v, want 429 saying what was too large", code, e)
	}
	snapDir := filepath.Join(filepath.Dir(d.dbPath), "snapshots", "sparse")
	if ents, err := os.ReadDir(filepath.Dir(snapDir)); err != nil || len(ents) != 0 {
		t.Errorf("a failed snapshot left files behind: %v %v", ents, err)
	}
	var tpls struct{ Templates []sandbox.TemplateInfo }
	if d.do("GET", "/v1/templates", nil, &tpls); len(tpls.Templates) != 1 {
		t.Errorf("templates after a failed snapshot: %+v", tpls.Templates)
	}
	// Within the cap the same sandbox snapshots as usual.
	d.exec(sb.ID, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "rm /workspace/sparse[2-8]"}})
	var snap snapshots.Snapshot
	if code := d.do("POST", "/v1/sandboxes/"+sb.ID+"/snapshot", map[string]string{"name": "sparse"}, &snap); code != 201 || snap.SeedBytes < 15<<20 {
		t.Errorf("snapshot within the cap: %d %+v", code, snap)
	}
}
