package e2b

import (
	"context"
	"io/fs"
	"path"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// treeFiles is a sandbox's tree as Stat sees it: a path's type, and a
// symlink's text. Nothing else is expected of it.
type treeFiles struct {
	runtime.Files
	dirs  map[string]bool
	files map[string]bool
	links map[string]string
	stats int
}

func (t *treeFiles) Stat(_ context.Context, p string) (runtime.FileInfo, error) {
	t.stats++
	fi := runtime.FileInfo{Name: path.Base(p), Path: p, Mode: 0o640}
	switch {
	case p == "/" || t.dirs[p]:
		fi.Type = "dir"
	case t.files[p]:
		fi.Type = "file"
	case t.links[p] != "":
		fi.Type, fi.Target = "symlink", t.links[p]
	default:
		return runtime.FileInfo{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
	return fi, nil
}

// A symlink's target is the path it resolves to, every link on the way
// followed, as E2B reports it; what does not resolve (dangling, a loop,
// a file used as a directory) is reported as not resolving, and no
// resolution leaves the sandbox's root or runs without bound.
func TestResolveLinks(t *testing.T) {
	tf := &treeFiles{
		dirs:  map[string]bool{"/home": true, "/home/user": true, "/home/user/d": true, "/etc": true},
		files: map[string]bool{"/home/user/d/f": true, "/etc/passwd": true},
		links: map[string]string{
			"/home/user/rel":      "d/f",
			"/home/user/abs":      "/home/user/d",
			"/home/user/chain":    "abs/f",
			"/home/user/dotdot":   "../user/./d/../d/f",
			"/home/user/up":       "../../../../../../etc/passwd",
			"/home/user/root":     "/",
			"/home/user/dangling": "nowhere",
			"/home/user/loop1":    "loop2",
			"/home/user/loop2":    "loop1",
			"/home/user/self":     "self",
			"/home/user/notdir":   "d/f/x",
		},
	}
	for p, want := range map[string]string{
		"/home/user/rel":    "/home/user/d/f",
		"/home/user/abs":    "/home/user/d",
		"/home/user/chain":  "/home/user/d/f",
		"/home/user/dotdot": "/home/user/d/f",
		"/home/user/up":     "/etc/passwd",
		"/home/user/root":   "/",
	} {
		got, fi, ok := resolveLinks(context.Background(), tf, p)
		if !ok || got != want || fi.Path != want {
			t.Errorf("%s: %q %+v %v, want %q", p, got, fi, ok, want)
		}
	}
	for _, p := range []string{"/home/user/dangling", "/home/user/loop1", "/home/user/self", "/home/user/notdir"} {
		if got, _, ok := resolveLinks(context.Background(), tf, p); ok {
			t.Errorf("%s resolved to %q, want no resolution", p, got)
		}
	}
	// A loop costs a bounded number of lookups.
	tf.stats = 0
	resolveLinks(context.Background(), tf, "/home/user/loop1")
	if tf.stats > 4*maxLinks {
		t.Errorf("a loop took %d lookups", tf.stats)
	}
}

// The entry of a symlink is E2B's: the type and mode of what it
// resolves to, its resolved path as symlinkTarget, the link's own path
// and permissions string; a dangling one has no type (the SDKs leave it
// out of a list) and its own path as its target.
func TestSymlinkEntry(t *testing.T) {
	tf := &treeFiles{
		dirs:  map[string]bool{"/w": true},
		files: map[string]bool{"/w/f": true},
		links: map[string]string{"/w/l": "f", "/w/dir": ".", "/w/dangling": "nope"},
	}
	ctx := context.Background()
	for p, want := range map[string][2]string{
		"/w/l": {"FILE_TYPE_FILE", "/w/f"}, "/w/dir": {"FILE_TYPE_DIRECTORY", "/w"}, "/w/dangling": {"FILE_TYPE_UNSPECIFIED", "/w/dangling"},
	} {
		fi, _ := tf.Stat(ctx, p)
		fi.Mode = 0o777
		e := entryOf(ctx, tf, fi)
		if e.Type != want[0] || e.SymlinkTarget == nil || *e.SymlinkTarget != want[1] || e.Path != p || e.Permissions != "Lrwxrwxrwx" {
			t.Errorf("%s: %+v, want %v", p, e, want)
		}
		if wantMode := map[bool]uint32{true: 0o640, false: 0}[want[0] != "FILE_TYPE_UNSPECIFIED"]; e.Mode != wantMode {
			t.Errorf("%s: mode %o, want %o (the target's)", p, e.Mode, wantMode)
		}
	}
}
