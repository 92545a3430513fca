package watch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
	"golang.org/x/sys/unix"
)

func TestActivityAdd(t *testing.T) {
	var a Activity
	a.add(actWritten, "/w/new")
	a.add(actDeleted, "/w/new") // created, then deleted: deleted only
	a.add(actDeleted, "/w/again")
	a.add(actWritten, "/w/again") // deleted, made again: written
	a.add(actRead, "/w/r")
	a.add(actRead, "/w/rw")
	a.add(actWritten, "/w/rw") // read and written: written
	a.add(actRead, "/w/rw")
	a.add(actChmod, "/w/c")
	a.add(actRead, "/w/c")
	a.add(actWritten, "/w/wc")
	a.add(actChmod, "/w/wc") // written and chmodded: written
	a.add(actChmod, "/w/rc")
	a.add(actDeleted, "/w/rc")
	a.add(actChmod, "/w/rc") // an attribute event after the removal
	got := a.Result()
	want := &proto.FileActivity{
		Written: []string{"/w/again", "/w/rw", "/w/wc"},
		Deleted: []string{"/w/new", "/w/rc"},
		Chmod:   []string{"/w/c"},
		Read:    []string{"/w/r"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("activity:\n got %+v\nwant %+v", got, want)
	}
	if (&Activity{}).Result().Written != nil {
		t.Error("no activity: want empty lists")
	}
}

func TestActivityCaps(t *testing.T) {
	var a Activity
	for i := range maxActivity + 5 {
		a.add(actWritten, fmt.Sprintf("/w/%05d", i))
	}
	a.add(actRead, "/w/r")
	r := a.Result()
	if len(r.Written) != maxActivity || !r.Incomplete || len(r.Read) != 1 {
		t.Errorf("over the cap: %d written, incomplete %v, %d read; want %d, true, 1", len(r.Written), r.Incomplete, len(r.Read), maxActivity)
	}
	if !slices.IsSorted(r.Written) {
		t.Error("written not sorted")
	}
	// Long names: the exit message must stay within its budget.
	var b Activity
	long := "/w/" + strings.Repeat("\x01", 3000)
	for i := range 4 * maxActivity {
		b.add(uint8(i%4)+1, long+strconv.Itoa(i))
	}
	r = b.Result()
	if !r.Incomplete {
		t.Error("long names cut: want incomplete")
	}
	enc, _ := json.Marshal(r)
	if n := len(r.Written) + len(r.Deleted) + len(r.Chmod) + len(r.Read); n < 20 || len(enc) > activityBudget {
		t.Errorf("long names: %d paths kept, %d bytes encoded (budget %d)", n, len(enc), activityBudget)
	}
	// The estimate is exact for what JSON escapes and what it does not.
	for _, s := range []string{"/w/plain", "/w/\"q\\", "/w/<&>\n\x01", "/w/ünï\u2028", "/w/bad\xff\xfe"} {
		enc, _ := json.Marshal([]string{s, s})
		if got, want := 2*jsonSize(s), len(enc)-1; got != want {
			t.Errorf("jsonSize(%q) = %d, want %d", s, got/2, want/2)
		}
	}
}

// recorder collects what a watcher reports, as the server does per
// command.
type recorder struct {
	mu   sync.Mutex
	act  Activity
	lost bool
}

func (r *recorder) sink(recs []Rec, lost bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost = r.lost || lost
	for _, rec := range recs {
		r.act.add(rec.kind, rec.path)
	}
}

// take drains w and returns what it reported since the last take.
func (r *recorder) take(w *Watcher) (*proto.FileActivity, bool) {
	w.Drain()
	r.mu.Lock()
	defer r.mu.Unlock()
	res, lost := r.act.Result(), r.lost
	r.act, r.lost = Activity{}, false
	return res, lost
}

func newTestWatcher(t *testing.T, noReads ...string) (string, *Watcher, *recorder) {
	t.Helper()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	for i := range noReads {
		noReads[i] = filepath.Join(root, noReads[i])
	}
	w, err := New([]string{root}, noReads, rec.sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return root, w, rec
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWatcher(t *testing.T) {
	root, w, rec := newTestWatcher(t, ".git")
	p := func(rel string) string { return filepath.Join(root, rel) }
	for _, f := range []string{"old", "gone", "mode", "read", "m1"} {
		must(t, os.WriteFile(p(f), []byte("x"), 0o644))
	}
	must(t, os.MkdirAll(p(".git/objects"), 0o755))
	must(t, os.WriteFile(p(".git/objects/o"), []byte("x"), 0o644))
	got, lost := rec.take(w)
	if want := []string{p(".git"), p(".git/objects"), p(".git/objects/o"), p("gone"), p("m1"), p("mode"), p("old"), p("read")}; !slices.Equal(got.Written, want) || lost {
		t.Fatalf("setup: written %q (lost %v), want %q", got.Written, lost, want)
	}

	must(t, os.WriteFile(p("new"), []byte("a"), 0o644))
	f, err := os.OpenFile(p("old"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	for range 100 {
		_, _ = f.Write([]byte("b"))
	}
	f.Close()
	must(t, os.Remove(p("gone")))
	must(t, os.Chmod(p("mode"), 0o600))
	_, err = os.ReadFile(p("read"))
	must(t, err)
	_, err = os.ReadFile(p(".git/objects/o")) // not a read: beneath .git
	must(t, err)
	must(t, os.WriteFile(p(".git/index"), []byte("x"), 0o644)) // but writes there count
	// A tree made at once beneath a new directory: its first entries may
	// come before its watch, the walk finds them.
	must(t, os.MkdirAll(p("d/e/f/g"), 0o755))
	must(t, os.WriteFile(p("d/e/f/g/h"), []byte("c"), 0o644))
	must(t, os.Rename(p("m1"), p("m2")))
	got, _ = rec.take(w)
	want := &proto.FileActivity{
		Written: []string{p(".git/index"), p("d"), p("d/e"), p("d/e/f"), p("d/e/f/g"), p("d/e/f/g/h"), p("m2"), p("new"), p("old")},
		Deleted: []string{p("gone"), p("m1")},
		Chmod:   []string{p("mode")},
		Read:    []string{p("read")},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("activity:\n got %+v\nwant %+v", got, want)
	}

	// A tree moved in from outside the root: it and all it holds are
	// written, and it is watched.
	outside := filepath.Join(filepath.Dir(root), "outside")
	must(t, os.MkdirAll(filepath.Join(outside, "x/y"), 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "x/y/z"), nil, 0o644))
	must(t, os.Rename(outside, p("in")))
	got, _ = rec.take(w)
	if want := []string{p("in"), p("in/x"), p("in/x/y"), p("in/x/y/z")}; !slices.Equal(got.Written, want) {
		t.Errorf("tree moved in: written %q, want %q", got.Written, want)
	}
	must(t, os.WriteFile(p("in/x/y/later"), nil, 0o644))
	got, _ = rec.take(w)
	if want := []string{p("in/x/y/later")}; !slices.Equal(got.Written, want) {
		t.Errorf("write in a moved-in tree: written %q, want %q", got.Written, want)
	}
	// Renamed inside: the new paths, not the old ones.
	must(t, os.Rename(p("in"), p("in2")))
	must(t, os.WriteFile(p("in2/x/y/after"), nil, 0o644))
	got, _ = rec.take(w)
	if !slices.Contains(got.Written, p("in2/x/y/after")) || !slices.Equal(got.Deleted, []string{p("in")}) {
		t.Errorf("tree renamed: %+v", got)
	}
	// Moved out: nothing it holds is reported any more.
	must(t, os.Rename(p("in2"), outside))
	got, _ = rec.take(w)
	if !slices.Equal(got.Deleted, []string{p("in2")}) || got.Written != nil {
		t.Errorf("tree moved out: %+v", got)
	}
	must(t, os.WriteFile(filepath.Join(outside, "x/y/out"), nil, 0o644))
	got, _ = rec.take(w)
	if got.Written != nil || got.Deleted != nil {
		t.Errorf("a tree moved out is still watched: %+v", got)
	}
	// Directory removed and made again: watched again.
	must(t, os.RemoveAll(p("d")))
	must(t, os.MkdirAll(p("d/e"), 0o755))
	_, _ = rec.take(w)
	must(t, os.WriteFile(p("d/e/again"), nil, 0o644))
	got, _ = rec.take(w)
	if !slices.Equal(got.Written, []string{p("d/e/again")}) {
		t.Errorf("directory made again: written %q", got.Written)
	}
	w.mu.Lock()
	if len(w.byWD) != len(w.byPath) {
		t.Errorf("watch maps out of step: %d descriptors, %d paths", len(w.byWD), len(w.byPath))
	}
	for wd, p := range w.byWD {
		if !within(p, root) || w.byPath[p] != wd {
			t.Errorf("stale watch %d: %s", wd, p)
		}
	}
	w.mu.Unlock()
}

// An overflowing queue loses events: the report says so, and every
// directory is watched again, those whose creation was lost too.
func TestWatcherOverflow(t *testing.T) {
	root, w, rec := newTestWatcher(t)
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	must(t, err)
	max, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if max <= 0 || max > 1<<18 {
		t.Skipf("max_queued_events %d", max)
	}
	w.mu.Lock() // nobody reads meanwhile
	for i := range max/2 + 10 {
		// two events each: create, close-write
		if err := os.WriteFile(filepath.Join(root, strconv.Itoa(i)), nil, 0o644); err != nil {
			w.mu.Unlock()
			t.Fatal(err)
		}
	}
	must(t, os.MkdirAll(filepath.Join(root, "late/sub"), 0o755)) // creation lost
	w.mu.Unlock()
	if _, lost := rec.take(w); !lost {
		t.Fatal("queue overflowed: want lost events")
	}
	must(t, os.WriteFile(filepath.Join(root, "late/sub/f"), nil, 0o644))
	got, lost := rec.take(w)
	if want := []string{filepath.Join(root, "late/sub/f")}; !slices.Equal(got.Written, want) || lost {
		t.Errorf("after the overflow: written %q (lost %v), want %q", got.Written, lost, want)
	}
}

// A directory that cannot be watched (here: its path is too long) makes
// every report incomplete.
func TestWatcherUnwatchable(t *testing.T) {
	root, w, rec := newTestWatcher(t)
	if w.missing.Load() {
		t.Fatal("missing watches before anything happened")
	}
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	name := strings.Repeat("n", 250)
	for range 20 { // more than PATH_MAX in all
		must(t, unix.Mkdirat(fd, name, 0o755))
		nfd, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		must(t, err)
		fd = nfd
	}
	unix.Close(fd)
	if _, lost := rec.take(w); !lost || !w.missing.Load() {
		t.Errorf("a directory beyond PATH_MAX: lost %v, missing %v; want both", lost, w.missing.Load())
	}
	// Removed: a retry (after its back-off) watches everything again.
	must(t, os.RemoveAll(filepath.Join(root, name)))
	w.mu.Lock()
	w.retryAt = w.retryAt.AddDate(-1, 0, 0)
	w.mu.Unlock()
	_, _ = rec.take(w)
	if w.missing.Load() {
		t.Error("still missing watches after the deep tree is gone")
	}
}

// A tree of more directories than the agent's watch cap (a sandbox making
// directories to use up the kernel's watches) gets no more watches than
// the cap: the reports say incomplete, and once the tree is small again
// everything is watched again.
func TestWatcherCap(t *testing.T) {
	root, w, rec := newTestWatcher(t)
	const max = 8
	w.mu.Lock()
	w.max = max
	w.mu.Unlock()
	for i := range 3 * max {
		must(t, os.MkdirAll(filepath.Join(root, "d", strconv.Itoa(i), "sub"), 0o755))
	}
	if _, lost := rec.take(w); !lost || !w.missing.Load() {
		t.Errorf("%d directories over a cap of %d: lost %v, missing %v; want both", 6*max+2, max, lost, w.missing.Load())
	}
	w.mu.Lock()
	n := len(w.byWD)
	w.mu.Unlock()
	if n > max {
		t.Errorf("ESCAPE: %d watches, the cap is %d", n, max)
	}
	if got := watchesOf(t, w.fd); got > max {
		t.Errorf("ESCAPE: the kernel holds %d watches, the cap is %d", got, max)
	}
	must(t, os.RemoveAll(filepath.Join(root, "d")))
	w.mu.Lock()
	w.retryAt = w.retryAt.AddDate(-1, 0, 0)
	w.mu.Unlock()
	_, _ = rec.take(w)
	if w.missing.Load() {
		t.Error("still missing watches after the tree is gone")
	}
}

// watchesOf counts the watches of inotify descriptor fd in its fdinfo.
func watchesOf(t *testing.T, fd int) int {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	must(t, err)
	return strings.Count(string(b), "inotify wd:")
}

// BenchmarkExitActivity: what a command's exit costs the agent for file
// activity when the command touched nothing: a drain of the empty queue
// and an empty report.
func BenchmarkExitActivity(b *testing.B) {
	dir := b.TempDir()
	w, err := New([]string{dir}, nil, func([]Rec, bool) {})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	for b.Loop() {
		w.Drain()
		var a Activity
		_ = a.Result()
	}
}
