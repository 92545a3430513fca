package conformance

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// testRename: Files.Rename moves a file, making the destination's
// parents, replaces a file there, moves a symlink rather than what it
// names, and stays in the sandbox's root (a climbing destination lands
// inside it).
func testRename(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	fs := files(t, sb)
	ctx := context.Background()
	if _, err := fs.WriteFile(ctx, "/workspace/a", strings.NewReader("one"), 0o644, false); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename(ctx, "/workspace/a", "/workspace/new/deep/b"); err != nil {
		t.Fatalf("rename: %v", err)
	}
	var buf bytes.Buffer
	if _, err := fs.ReadFile(ctx, "/workspace/new/deep/b", &buf, 0); err != nil || buf.String() != "one" {
		t.Errorf("moved: %v %q", err, buf.String())
	}
	if _, err := fs.Stat(ctx, "/workspace/a"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("source after the move: %v, want not found", err)
	}
	if err := fs.Rename(ctx, "/workspace/nope", "/workspace/x"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a missing source: %v, want not found", err)
	}
	if _, err := fs.WriteFile(ctx, "/workspace/c", strings.NewReader("two"), 0o644, false); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename(ctx, "/workspace/c", "/workspace/new/deep/b"); err != nil {
		t.Fatalf("rename over a file: %v", err)
	}
	buf.Reset()
	if _, err := fs.ReadFile(ctx, "/workspace/new/deep/b", &buf, 0); err != nil || buf.String() != "two" {
		t.Errorf("replaced: %v %q", err, buf.String())
	}
	// (the link comes in a tar: the fake's commands do not run in its root)
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/etc/hostname", Mode: 0o777})
	_ = tw.Close()
	if err := fs.Untar(ctx, "/workspace", &tb); err != nil {
		t.Fatalf("untar a symlink: %v", err)
	}
	if err := fs.Rename(ctx, "/workspace/link", "/workspace/link2"); err != nil {
		t.Fatalf("rename a symlink: %v", err)
	}
	if fi, err := fs.Stat(ctx, "/workspace/link2"); err != nil || fi.Type != "symlink" || fi.Target != "/etc/hostname" {
		t.Errorf("moved symlink: %+v %v", fi, err)
	}
	// (paths are resolved in the sandbox's root: ".." stops at it)
	if err := fs.Rename(ctx, "/workspace/link2", "/../../../workspace/link3"); err != nil {
		t.Fatalf("rename with a climbing destination: %v", err)
	}
	if fi, err := fs.Stat(ctx, "/workspace/link3"); err != nil || fi.Type != "symlink" {
		t.Errorf("the climbing destination: %+v %v", fi, err)
	}
	// Across the sandbox's filesystems (the backends' /workspace and
	// /tmp; the fake has one): done, or refused saying so, never
	// reported as a denial.
	err := fs.Rename(ctx, "/workspace/link3", "/tmp/link4")
	switch {
	case err == nil:
		if _, serr := fs.Stat(ctx, "/tmp/link4"); serr != nil {
			t.Errorf("rename to /tmp succeeded, but: %v", serr)
		}
	case !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "different filesystems"):
		t.Errorf("rename from /workspace to /tmp: %v, want done, or invalid naming the filesystems", err)
	}
}

// testDirWatch: a DirWatcher reports the changes beneath a watched
// directory of /workspace or the home as they happen, refuses other
// directories as unsupported, and closes its channel when the watch's
// context ends.
func testDirWatch(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	dw, ok := sb.(runtime.DirWatcher)
	if !ok {
		t.Skip("the backend does not watch directories")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Nothing outside the watched trees: not by name, nor by a name that
	// only starts like one, nor by climbing out of one.
	for _, dir := range []string{"/tmp", "/", "/workspacex", "/home"} {
		if _, err := dw.WatchDir(ctx, dir, true); !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("watch %s: %v, want unsupported", dir, err)
		}
	}
	for _, dir := range []string{"/workspace/../etc", "workspace", "/workspace/"} {
		if _, err := dw.WatchDir(ctx, dir, true); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("watch %q: %v, want invalid", dir, err)
		}
	}
	ch, err := dw.WatchDir(ctx, "/workspace", true)
	if err != nil {
		t.Fatalf("watch /workspace: %v", err)
	}
	// A new directory's watch is added once it is seen: what was made in
	// it before is found by its scan and reported as created (a write
	// made then is part of that create), and an entry seen both by the
	// watch and by the scan may come twice in a row. Never out of order,
	// never lost: creates, renames and removes are all there.
	shell(t, sb, "mkdir /workspace/d && echo x > /workspace/d/f && mv /workspace/d/f /workspace/g && rm /workspace/g")
	readEvents(t, ch, false, []string{"create /workspace/d", "create /workspace/d/f", "rename /workspace/d/f", "create /workspace/g", "remove /workspace/g"})
	// In a directory watched all along, writes are reported too.
	shell(t, sb, "echo x > /workspace/h && echo y >> /workspace/h && rm /workspace/h")
	readEvents(t, ch, true, []string{"create /workspace/h", "write /workspace/h", "remove /workspace/h"})
	cancel()
	select {
	case _, open := <-ch:
		for open {
			_, open = <-ch
		}
	case <-time.After(10 * time.Second):
		t.Error("the channel stayed open after the watch's context ended")
	}
}

// testUsage: a Meter reports the memory a sandbox uses and the CPU time
// its commands spend.
func testUsage(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	m, ok := sb.(runtime.Meter)
	if !ok {
		t.Skip("the backend does not meter its sandboxes")
	}
	before, err := m.Usage()
	if err != nil || before.MemoryBytes <= 0 || before.Pids <= 0 {
		t.Fatalf("usage: %+v %v", before, err)
	}
	shell(t, sb, "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	after, err := m.Usage()
	if err != nil || after.CPUTime-before.CPUTime < 10*time.Millisecond {
		t.Errorf("CPU time %v -> %v (%v), want the loop's", before.CPUTime, after.CPUTime, err)
	}
}

// readEvents reads ch until want's last event and checks the events up
// to it are want (repeats in a row folded; writes left out unless
// writes).
func readEvents(t *testing.T, ch <-chan runtime.WatchBatch, writes bool, want []string) {
	t.Helper()
	var got []string
	deadline := time.After(10 * time.Second)
	for !slices.Contains(got, want[len(want)-1]) {
		select {
		case b := <-ch:
			for _, e := range b.Events {
				ev := e.Op + " " + e.Path
				if e.Op == "write" && !writes || len(got) > 0 && got[len(got)-1] == ev {
					continue
				}
				got = append(got, ev)
			}
		case <-deadline:
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	if last := slices.Index(got, want[len(want)-1]); !slices.Equal(got[:last+1], want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
