package native

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// TestFilesSurviveHostRenames: the file API resolves paths with openat2
// and RESOLVE_IN_ROOT, which answers EAGAIN when a rename anywhere on the
// host races a ".." step; a busy host (other packages' tests, say) made
// the API fail spuriously ("resource temporarily unavailable"). With a
// rename loop running on the host, no file API call fails.
func TestFilesSurviveHostRenames(t *testing.T) {
	needRuntime(t)
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "d", "f"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// each resolution through the link takes ".." steps
	if err := os.Symlink("sub/../../d/sub/../f", filepath.Join(ws, "d", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/../../d", filepath.Join(ws, "d", "dirlink")); err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, func(s *runtime.Spec) { s.Workspace = ws })
	fs := sb.(runtime.Files)

	spin := t.TempDir()
	a, b := filepath.Join(spin, "a"), filepath.Join(spin, "b")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Rename(a, b)
			_ = os.Rename(b, a)
		}
	}()
	defer func() { close(stop); <-done }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var calls, failures int
	var first error
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); calls += 2 {
		if _, err := fs.Stat(ctx, "/workspace/d/dirlink/f"); err != nil {
			failures++
			first = cmpOr(first, err)
		}
		var buf bytes.Buffer
		if _, err := fs.ReadFile(ctx, "/workspace/d/link", &buf, 0); err != nil || buf.String() != "data\n" {
			failures++
			first = cmpOr(first, err)
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d file API calls failed under a host rename loop, first: %v", failures, calls, first)
	}
	t.Logf("%d file API calls under a rename loop", calls)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
