package writescope

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
)

// filesSandbox is a fake sandbox: a runtime.Sandbox with runtime.Files.
type filesSandbox interface {
	runtime.Sandbox
	runtime.Files
}

// scoper records the roots it is asked to confine writes to (the fake
// backend has no write scopes: it cannot enforce one).
type scoper struct {
	calls [][]string
	err   error
}

func (s *scoper) RestrictWrites(_ context.Context, paths []string) (runtime.ScopeInfo, error) {
	s.calls = append(s.calls, slices.Clone(paths))
	return runtime.ScopeInfo{Paths: paths}, s.err
}

// withFiles is a sandbox that confines writes and has files; noFiles one
// that confines writes but whose files the daemon cannot look at.
type withFiles struct {
	filesSandbox
	*scoper
}

type noFiles struct {
	runtime.Sandbox
	*scoper
}

// fakeSandbox is a fake backend's sandbox whose /workspace holds the
// files of ws (made by the test).
func fakeSandbox(t *testing.T, ws string) filesSandbox {
	t.Helper()
	sb, err := fakert.New(t.TempDir()).Create(context.Background(), runtime.Spec{RootFS: t.TempDir(), Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Destroy(context.Background()) })
	return sb.(filesSandbox)
}

// workspace is a checkout: go.mod, src/main.go, cmd/tool/, a symlink
// out of the workspace and a dangling one.
func workspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for _, d := range []string{"src", "cmd/tool"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"go.mod", "src/main.go"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc", filepath.Join(ws, "etc-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/target", filepath.Join(ws, "dangling")); err != nil {
		t.Fatal(err)
	}
	return ws
}

// A backend that cannot confine writes is an error, never a scope that
// silently lapses.
func TestApplyRefusesABackendWithoutScopes(t *testing.T) {
	sb := fakeSandbox(t, "")
	if err := Apply(context.Background(), sb, []string{"src/**"}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("a backend without write scopes: %v", err)
	}
}

// Each glob becomes its directory part, a literal that exists itself
// and one that does not yet its directory (never made into a directory
// of its name: go.sum before the first go mod tidy); roots are unique and
// the repository's .git is always writable, last.
func TestApplyRoots(t *testing.T) {
	sc := &scoper{}
	sb := withFiles{fakeSandbox(t, workspace(t)), sc}
	scope := []string{"src/**", "*.md", "/workspace/docs/**/*.md", "go.mod", "go.sum", "pkg/new.go", "src/**/*.go",
		"cmd/tool/main.go", "internal/[ab]/x.go", "lib/?.c", "src/"}
	if err := Apply(context.Background(), sb, scope); err != nil {
		t.Fatal(err)
	}
	want := []string{"/workspace/src", "/workspace", "/workspace/docs", "/workspace/go.mod", "/workspace/pkg", "/workspace/cmd/tool",
		"/workspace/internal", "/workspace/lib", "/workspace/.git"}
	if len(sc.calls) != 1 || !slices.Equal(sc.calls[0], want) {
		t.Errorf("roots %q\n want %q", sc.calls, want)
	}
	if _, err := sb.Stat(context.Background(), "/workspace/go.sum"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("go.sum was made: %v", err)
	}
}

// Without the daemon's view of the files every literal stands as itself.
func TestApplyWithoutFilesKeepsLiterals(t *testing.T) {
	sc := &scoper{}
	if err := Apply(context.Background(), noFiles{fakeSandbox(t, ""), sc}, []string{"go.sum", "src/**"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/workspace/go.sum", "/workspace/src", "/workspace/.git"}; len(sc.calls) != 1 || !slices.Equal(sc.calls[0], want) {
		t.Errorf("roots %q, want %q", sc.calls, want)
	}
}

// The backend's refusal is Apply's error.
func TestApplyReturnsTheBackendsError(t *testing.T) {
	sc := &scoper{err: errors.New("landlock: too many layers")}
	if err := Apply(context.Background(), withFiles{fakeSandbox(t, ""), sc}, []string{"src/**"}); err == nil || err.Error() != "landlock: too many layers" {
		t.Errorf("backend error: %v", err)
	}
}

// Symlinks in the workspace are roots as themselves, by name: the root
// is never the link's target (outside the workspace), nor its directory
// (a dangling link exists). The backend opens roots without following
// links.
func TestApplySymlinksAreTheirNames(t *testing.T) {
	sc := &scoper{}
	sb := withFiles{fakeSandbox(t, workspace(t)), sc}
	if err := Apply(context.Background(), sb, []string{"etc-link", "dangling", "etc-link/passwd"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"/workspace/etc-link", "/workspace/dangling", "/workspace/.git"}
	if len(sc.calls) != 1 || !slices.Equal(sc.calls[0], want) {
		t.Errorf("roots %q, want %q", sc.calls, want)
	}
}

// Absolute paths are relative to /workspace (the policy's reading of a
// scope glob), and names that merely start with dots are names.
func TestApplyAbsoluteAndDottedNames(t *testing.T) {
	sc := &scoper{}
	sb := withFiles{fakeSandbox(t, workspace(t)), sc}
	if err := Apply(context.Background(), sb, []string{"/etc/**", "/workspace/src/**", "..foo/**", ".config/**", "a/...b/*"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"/workspace/etc", "/workspace/src", "/workspace/..foo", "/workspace/.config", "/workspace/a/...b", "/workspace/.git"}
	if len(sc.calls) != 1 || !slices.Equal(sc.calls[0], want) {
		t.Errorf("roots %q, want %q", sc.calls, want)
	}
}

// An attack on the scope: globs that climb out of /workspace with ".."
// must not become roots outside it (path cleaning made "../etc/**" the
// root /etc, handed to the backend), and an empty scope, which the
// policy reads as "anywhere", must not become "nowhere but .git" here
// and "anywhere" again after a reset. Both are refused before the
// backend is asked.
func TestApplyRefusesScopesOutsideTheWorkspace(t *testing.T) {
	sb := fakeSandbox(t, "")
	for _, scope := range [][]string{
		{"../etc/**"},
		{"src/../../etc/passwd"},
		{"src/**", "/workspace/../root/.ssh"},
		{".."},
		{"a/b/../../../home/sandbox/**"},
		{"src/\x00/x"},
		{""},
		{},
		nil,
	} {
		sc := &scoper{}
		err := Apply(context.Background(), withFiles{sb, sc}, scope)
		if !errors.Is(err, errdefs.ErrInvalid) || len(sc.calls) != 0 {
			t.Errorf("scope %q: %v, backend asked for %q", scope, err, sc.calls)
		}
	}
}
