package native

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// activityOf runs script and returns its file activity, which must be there.
func activityOf(t *testing.T, sb runtime.Sandbox, script string) *runtime.FileActivity {
	t.Helper()
	r := sh(t, sb, script)
	if r.Status.Code != 0 {
		t.Fatalf("%q: code %d, stderr %q", script, r.Status.Code, r.Stderr)
	}
	if r.Status.Files == nil {
		t.Fatalf("%q: no file activity", script)
	}
	return r.Status.Files
}

func wantActivity(t *testing.T, what string, got, want *runtime.FileActivity) {
	t.Helper()
	if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", *want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, *got, *want)
	}
}

// Each command reports exactly what it wrote, deleted, chmodded and read
// under /workspace and the home directory.
func TestFileActivity(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, nil)
	w := func(s string) string { return "/workspace/" + s }

	got := activityOf(t, sb, "cd /workspace && for f in old gone mode read; do echo x > $f.txt; done && echo x > m1")
	wantActivity(t, "setup", got, &runtime.FileActivity{Written: []string{w("gone.txt"), w("m1"), w("mode.txt"), w("old.txt"), w("read.txt")}})

	got = activityOf(t, sb, "echo a > /workspace/new.txt; echo b >> /workspace/old.txt; rm /workspace/gone.txt; chmod 600 /workspace/mode.txt; "+
		"cat /workspace/read.txt >/dev/null; mkdir -p /workspace/d/e; echo c > /workspace/d/e/f.txt; mv /workspace/m1 /workspace/m2")
	wantActivity(t, "the command", got, &runtime.FileActivity{
		Written: []string{w("d"), w("d/e"), w("d/e/f.txt"), w("m2"), w("new.txt"), w("old.txt")},
		Deleted: []string{w("gone.txt"), w("m1")},
		Chmod:   []string{w("mode.txt")},
		Read:    []string{w("read.txt")},
	})

	// Only reads: no writes; directories listed are not reads.
	got = activityOf(t, sb, "cat /workspace/new.txt /workspace/d/e/f.txt >/dev/null; ls -laR /workspace >/dev/null")
	wantActivity(t, "reads only", got, &runtime.FileActivity{Read: []string{w("d/e/f.txt"), w("new.txt")}})

	// Nothing at all.
	got = activityOf(t, sb, "true")
	wantActivity(t, "nothing", got, &runtime.FileActivity{})

	// The home directory too; git's reads are left out, its writes not.
	got = activityOf(t, sb, "echo h > ~/.h && mkdir -p /workspace/.git/objects && echo o > /workspace/.git/objects/o && cat ~/.h /workspace/.git/objects/o >/dev/null")
	wantActivity(t, "home and git", got, &runtime.FileActivity{Written: []string{"/home/sandbox/.h", w(".git"), w(".git/objects"), w(".git/objects/o")}})
	got = activityOf(t, sb, "cat /workspace/.git/objects/o ~/.h >/dev/null")
	wantActivity(t, "git reads", got, &runtime.FileActivity{Read: []string{"/home/sandbox/.h"}})

	// Made and removed by one command: deleted only. Elsewhere: nothing.
	got = activityOf(t, sb, "echo t > /workspace/tmp.txt && rm /workspace/tmp.txt && echo x > /tmp/elsewhere && cat /etc/hostname >/dev/null")
	wantActivity(t, "temporary file", got, &runtime.FileActivity{Deleted: []string{w("tmp.txt")}})
}

// A tree moved in with one rename is walked: what it holds is written and
// watched from then on; one moved out is no longer watched.
func TestFileActivityTrees(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, nil)
	// /var/tmp is on the same file system as /workspace: mv renames.
	got := activityOf(t, sb, "mkdir -p /var/tmp/t/a/b && echo x > /var/tmp/t/a/b/f && mv /var/tmp/t /workspace/t")
	wantActivity(t, "moved in", got, &runtime.FileActivity{Written: []string{"/workspace/t", "/workspace/t/a", "/workspace/t/a/b", "/workspace/t/a/b/f"}})
	got = activityOf(t, sb, "echo y > /workspace/t/a/b/g")
	wantActivity(t, "write in the moved tree", got, &runtime.FileActivity{Written: []string{"/workspace/t/a/b/g"}})
	got = activityOf(t, sb, "mv /workspace/t /var/tmp/out")
	wantActivity(t, "moved out", got, &runtime.FileActivity{Deleted: []string{"/workspace/t"}})
	got = activityOf(t, sb, "echo z > /var/tmp/out/a/b/h")
	wantActivity(t, "write in a tree moved out", got, &runtime.FileActivity{})
	// Over the cap: 1000 paths, and incomplete.
	got = activityOf(t, sb, "mkdir /workspace/many && cd /workspace/many && i=0; while [ $i -lt 1100 ]; do : > f$i; i=$((i+1)); done")
	if len(got.Written) != 1000 || !got.Incomplete || !slices.IsSorted(got.Written) {
		t.Errorf("1101 files written: %d reported (sorted %v), incomplete %v; want 1000, true", len(got.Written), slices.IsSorted(got.Written), got.Incomplete)
	}
}

// A workspace copied in at create (a tar unpacked by the agent) is
// watched all the way down.
func TestFileActivityWorkspace(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	deep := filepath.Join(dir, "src", "pkg", "sub")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "a.go"), []byte("package sub\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, func(s *runtime.Spec) { s.Workspace = dir })
	got := activityOf(t, sb, "echo // >> /workspace/src/pkg/sub/a.go && touch /workspace/src/pkg/sub/b.go")
	wantActivity(t, "in the copied tree", got, &runtime.FileActivity{Written: []string{"/workspace/src/pkg/sub/a.go", "/workspace/src/pkg/sub/b.go"}})
	// and through the file API
	fs := sb.(runtime.Files)
	ctx := context.Background()
	if err := fs.Mkdir(ctx, "/workspace/api/x/y", true); err != nil {
		t.Fatal(err)
	}
	got = activityOf(t, sb, "touch /workspace/api/x/y/z")
	wantActivity(t, "in a directory made by the file API", got, &runtime.FileActivity{Written: []string{"/workspace/api/x/y/z"}})
}

// Commands that overlap are shared, and each gets the other's changes;
// a command alone is not.
func TestFileActivityShared(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bg, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo bg > /workspace/bg.txt; read x"}, Stdin: slowReader{time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	got := activityOf(t, sb, "echo fg > /workspace/fg.txt")
	if !got.Shared || !slices.Contains(got.Written, "/workspace/fg.txt") {
		t.Errorf("foreground during a background command: %+v; want shared, fg.txt written", *got)
	}
	st, err := bg.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files == nil || !st.Files.Shared || !slices.Equal(st.Files.Written, []string{"/workspace/bg.txt", "/workspace/fg.txt"}) {
		t.Errorf("background command: %+v; want shared, bg.txt and fg.txt written", st.Files)
	}
	got = activityOf(t, sb, "echo alone > /workspace/alone.txt")
	wantActivity(t, "alone", got, &runtime.FileActivity{Written: []string{"/workspace/alone.txt"}})
}

// slowReader gives one line after a delay.
type slowReader struct{ d time.Duration }

func (r slowReader) Read(p []byte) (int, error) {
	time.Sleep(r.d)
	return copy(p, "x\n"), nil
}

// A command that writes a lot, in many small writes, is reported in full:
// the reader keeps up (no overflow) and a run of writes is one path.
func TestFileActivityManyEvents(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, nil)
	// 200 files of 100 writes each: the events are read as they come.
	r := sh(t, sb, "cd /workspace && i=0; while [ $i -lt 200 ]; do j=0; while [ $j -lt 100 ]; do echo $j; j=$((j+1)); done > f$i; i=$((i+1)); done")
	if r.Status.Files == nil || len(r.Status.Files.Written) != 200 || r.Status.Files.Incomplete {
		t.Fatalf("200 files: %+v", r.Status.Files)
	}
	for i, p := range r.Status.Files.Written {
		if _, err := strconv.Atoi(p[len("/workspace/f"):]); err != nil {
			t.Errorf("written[%d] = %q", i, p)
		}
	}
}

// Background commands flooding the event queue do not hold up the exit
// report of another command.
func TestFileActivityFlood(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var bgs []runtime.Process
	for i := range 2 {
		p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", fmt.Sprintf(
			"cd /workspace && mkdir w%d && cd w%d && while :; do for f in a b c d e f g h; do : > $f; echo >> $f; done; done", i, i)}})
		if err != nil {
			t.Fatal(err)
		}
		bgs = append(bgs, p)
	}
	defer func() {
		for _, p := range bgs {
			_ = p.Signal(syscall.SIGKILL)
			_, _ = p.Wait(ctx)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	var worst time.Duration
	overflowed := 0
	for range 20 {
		start := time.Now()
		got := activityOf(t, sb, "echo x > /workspace/fg")
		worst = max(worst, time.Since(start))
		// When the flood overflows inotify's queue, events are lost (the
		// foreground write's among them, possibly) and the report says so.
		if !got.Shared || !slices.Contains(got.Written, "/workspace/fg") && !got.Incomplete {
			t.Fatalf("during a flood: %+v", *got)
		}
		if got.Incomplete {
			overflowed++
		}
	}
	if worst > 2*time.Second {
		t.Errorf("a command took %s during a flood of events", worst)
	}
	t.Logf("slowest command during the flood: %s; %d of 20 reports incomplete (queue overflow)", worst, overflowed)
}

// Answers larger than the agent channel's default socket buffer (about
// 208 KiB) go out: a big directory's listing, and an exit report with a
// lot of file activity. Neither may end the sandbox.
func TestLargeAgentAnswers(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb := newSandbox(t, nil)
	long := strings.Repeat("n", 200)
	r := sh(t, sb, `mkdir /workspace/big && cd /workspace/big && i=0; while [ $i -lt 1200 ]; do : > `+long+`$i; i=$((i+1)); done`)
	if r.Status.Code != 0 || r.Status.Files == nil {
		t.Fatalf("1200 files: %+v %s", r.Status, r.Stderr)
	}
	if n := len(r.Status.Files.Written); n != 1000 && !r.Status.Files.Incomplete {
		t.Errorf("1200 long names: %d written, incomplete=%v; want the list capped or marked incomplete", n, r.Status.Files.Incomplete)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := sb.(runtime.Files).List(ctx, "/workspace/big")
	if err != nil {
		t.Fatalf("list of 1200 long names: %v", err)
	}
	if len(list) != 1200 {
		t.Errorf("list: %d entries, want 1200", len(list))
	}
	// Past the protocol's limit (1 MiB) the answer is an error, and the
	// sandbox lives on.
	if r := sh(t, sb, `cd /workspace/big && i=1200; while [ $i -lt 6000 ]; do : > `+long+`$i; i=$((i+1)); done`); r.Status.Code != 0 {
		t.Fatalf("6000 files: %+v %s", r.Status, r.Stderr)
	}
	list, err = sb.(runtime.Files).List(ctx, "/workspace/big")
	if err == nil && len(list) != 6000 || err != nil && !strings.Contains(err.Error(), "too large") {
		t.Errorf("list of 6000 long names: %d entries, %v; want all of them or a too-large error", len(list), err)
	}
	t.Logf("6000 long names: %d entries, %v", len(list), err)
	if r := sh(t, sb, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("after the large answers: %+v %q", r.Status, r.Stdout)
	}
}
