package native

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/client"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// scopeSandbox is a sandbox whose workspace holds src/a.go, README.md and
// src/up, a symlink to the workspace itself.
func scopeSandbox(t *testing.T) (runtime.Sandbox, runtime.WriteScoper, runtime.Files) {
	t.Helper()
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"src/a.go": "package a\n", "README.md": "readme\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..", filepath.Join(ws, "src", "up")); err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, func(s *runtime.Spec) { s.Workspace = ws })
	scoper, ok := sb.(runtime.WriteScoper)
	if !ok {
		t.Fatalf("%T does not implement runtime.WriteScoper", sb)
	}
	return sb, scoper, sb.(runtime.Files)
}

// mustSh runs script and fails the test unless it prints "ok" and exits 0.
func mustSh(t *testing.T, sb runtime.Sandbox, what, script string) {
	t.Helper()
	if r := sh(t, sb, script+" && echo ok"); r.Status.Code != 0 || r.Stdout != "ok\n" {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want it to work", what, r.Status.Code, r.Stdout, r.Stderr)
	}
}

// refusal is a command that must fail with one of msgs on stderr, as a
// user would see it.
type refusal struct {
	cmd  string
	msgs []string
}

func refused(t *testing.T, sb runtime.Sandbox, cmds []refusal) {
	t.Helper()
	for _, c := range cmds {
		r := sh(t, sb, c.cmd)
		if r.Status.Code == 0 || !slices.ContainsFunc(c.msgs, func(m string) bool { return strings.Contains(r.Stderr, m) }) {
			t.Errorf("ESCAPE: %q outside the write scope: exit %d, stderr %q; want a failure saying one of %q", c.cmd, r.Status.Code, r.Stderr, c.msgs)
		}
	}
}

func restrict(t *testing.T, scoper runtime.WriteScoper, paths ...string) runtime.ScopeInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := scoper.RestrictWrites(ctx, paths)
	if err != nil {
		t.Fatalf("RestrictWrites(%q): %v", paths, err)
	}
	return info
}

func tarOf(t *testing.T, name, content string) io.Reader {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &b
}

func readErr(ctx context.Context, fs runtime.Files, p, want string) error {
	var b bytes.Buffer
	if _, err := fs.ReadFile(ctx, p, &b, 0); err != nil {
		return err
	}
	if b.String() != want {
		return fmt.Errorf("read %s: %q, want %q", p, b.String(), want)
	}
	return nil
}

// TestWriteScope: once restricted, commands change nothing outside the
// scope (but the scratch places), reads are as before, and the scope
// only narrows.
func TestWriteScope(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb, scoper, _ := scopeSandbox(t)

	// A command started before the restriction keeps its rights (the
	// documented limit): it waits for a line, then writes outside the scope.
	stdin, feed := io.Pipe()
	t.Cleanup(func() { feed.Close() })
	var earlyErr bytes.Buffer
	early, err := sb.Exec(context.Background(), runtime.ExecRequest{
		Argv: []string{"/bin/sh", "-c", "read x && echo early > /workspace/early.txt"}, Stdin: stdin, Stderr: &earlyErr,
	})
	if err != nil {
		t.Fatal(err)
	}

	info := restrict(t, scoper, "/workspace/src", "/workspace/newdir")
	if want := []string{"/workspace/newdir", "/workspace/src"}; !slices.Equal(info.Paths, want) {
		t.Errorf("scope paths %q, want %q", info.Paths, want)
	}
	for _, p := range []string{"/tmp", "/home/sandbox", "/dev/null"} {
		if !slices.Contains(info.Scratch, p) {
			t.Errorf("scratch places %q lack %s", info.Scratch, p)
		}
	}
	if info.LandlockABI < 3 {
		t.Errorf("scope enforced with Landlock ABI %d, want 3 or later", info.LandlockABI)
	}
	if got := sb.Info().Isolation.WriteScope; got == nil || !slices.Equal(got.Paths, info.Paths) || got.LandlockABI != info.LandlockABI {
		t.Errorf("Info().Isolation.WriteScope = %+v, want %+v", got, info)
	}

	// the missing path was made, for the command user
	if r := sh(t, sb, "stat -c '%U %F' /workspace/newdir"); r.Stdout != "sandbox directory\n" {
		t.Errorf("created scope dir: %q %q; want a directory owned by sandbox", r.Stdout, r.Stderr)
	}

	mustSh(t, sb, "changes inside the scope", `set -e; cd /workspace/src
		echo more >> a.go
		echo new > b.go
		mkdir -p d/e
		mv b.go d/e/c.go
		ln d/e/c.go hard
		ln -s a.go soft
		mkfifo fifo
		truncate -s 0 d/e/c.go
		rm hard soft fifo
		mv d d2
		rm -r d2
		echo x > /workspace/newdir/f
		test "$(cat a.go)" = "package a
more"`)
	mustSh(t, sb, "scratch places", `set -e
		echo x > /tmp/t; mkdir /tmp/d; rm -r /tmp/t /tmp/d
		echo x > "$HOME/h"; mkdir "$HOME/d"; mv "$HOME/h" "$HOME/d/"; rm -r "$HOME/d"
		echo x > /dev/null; echo x > /dev/shm/s; rm /dev/shm/s`)
	mustSh(t, sb, "reads and execution", `test "$(cat /workspace/README.md)" = readme && ls /workspace >/dev/null && /bin/true`)

	denied := []string{"Permission denied"}
	refused(t, sb, []refusal{
		{"echo x > /workspace/README.md", denied},
		{"echo x >> /workspace/README.md", denied},
		{"truncate -s 0 /workspace/README.md", denied},
		{"touch /workspace/x", denied},
		{"rm /workspace/README.md", denied},
		{"mkdir /workspace/d", denied},
		{"mkfifo /workspace/fifo", denied},
		{"ln -s README.md /workspace/s", denied},
		{"mv /workspace/README.md /workspace/R.md", denied},
		// into the scope, out of it, and the scope itself
		{"mv /workspace/README.md /workspace/src/", denied},
		{"mv /workspace/src/a.go /workspace/", denied},
		{"mv /workspace/src /workspace/src2", denied},
		// a hard link needs the refer right at the source: Landlock's
		// answer is EXDEV (the "copy it instead" error)
		{"ln /workspace/README.md /workspace/src/l", []string{"Invalid cross-device link", "Permission denied"}},
		{"ln /workspace/src/a.go /workspace/l", denied},
		// through the symlink planted in the scope: still outside
		{"echo x > /workspace/src/up/README.md", denied},
	})

	// the early command still writes where it could when it started
	if _, err := feed.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	feed.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := early.Wait(ctx); err != nil || st.Code != 0 {
		t.Errorf("command started before the restriction: %v, exit %d, stderr %q; want it to keep its rights", err, st.Code, earlyErr.String())
	}

	// nothing outside changed
	r := sh(t, sb, "ls -A /workspace; cat /workspace/README.md; ls /workspace/src")
	if want := "README.md\nearly.txt\nnewdir\nsrc\nreadme\na.go\nup\n"; r.Stdout != want {
		t.Errorf("workspace after the refused commands:\n%s\nwant:\n%s", r.Stdout, want)
	}

	// narrower: newdir and one file of src
	info = restrict(t, scoper, "/workspace/newdir", "/workspace/src/a.go")
	if want := []string{"/workspace/newdir", "/workspace/src/a.go"}; !slices.Equal(info.Paths, want) {
		t.Errorf("narrowed scope paths %q, want %q", info.Paths, want)
	}
	mustSh(t, sb, "writes to the narrowed scope", `echo y > /workspace/newdir/g && echo z >> /workspace/src/a.go && : > /workspace/src/a.go`)
	refused(t, sb, []refusal{
		{"echo x > /workspace/src/b.go", denied},
		{"rm /workspace/src/a.go", denied},
		{"mv /workspace/src/a.go /workspace/src/b.go", denied},
		{"echo x > /workspace/README.md", denied},
	})

	// disjoint from the scope in force: grants nothing, creates nothing
	info = restrict(t, scoper, "/workspace/brandnew")
	if len(info.Paths) != 0 {
		t.Errorf("scope disjoint from the one in force: paths %q, want none", info.Paths)
	}
	refused(t, sb, []refusal{
		{"echo y > /workspace/newdir/h", denied},
		{"echo z >> /workspace/src/a.go", denied},
		{"mkdir /workspace/brandnew", denied},
	})
	if r := sh(t, sb, "test -e /workspace/brandnew"); r.Status.Code == 0 {
		t.Error("a scope path outside the scope in force was created")
	}
	mustSh(t, sb, "scratch places under an empty scope", `echo x > /tmp/t2 && echo x > "$HOME/h2"`)
	if got := sb.Info().Isolation.WriteScope; got == nil || len(got.Paths) != 0 {
		t.Errorf("Info().Isolation.WriteScope = %+v, want an empty scope", got)
	}
}

// TestWriteScopeFiles: the Files interface obeys the scope like a command.
func TestWriteScopeFiles(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb, scoper, fs := scopeSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	restrict(t, scoper, "/workspace/src")

	write := func(p string) error {
		_, err := fs.WriteFile(ctx, p, strings.NewReader("api\n"), 0o644, true)
		return err
	}
	for what, err := range map[string]error{
		"write in the scope":          write("/workspace/src/api.txt"),
		"write with parents":          write("/workspace/src/p/q/api.txt"),
		"mkdir in the scope":          fs.Mkdir(ctx, "/workspace/src/apidir", false),
		"untar in the scope":          fs.Untar(ctx, "/workspace/src", tarOf(t, "t/x.txt", "x\n")),
		"write to a scratch place":    write("/tmp/api.txt"),
		"write to the home directory": write("/home/sandbox/api.txt"),
		"read outside the scope":      readErr(ctx, fs, "/workspace/README.md", "readme\n"),
	} {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	if err := fs.Remove(ctx, "/workspace/src/apidir", false); err != nil {
		t.Errorf("remove in the scope: %v", err)
	}
	for what, err := range map[string]error{
		"write a new file":        write("/workspace/api.txt"),
		"overwrite a file":        write("/workspace/README.md"),
		"write with new parents":  write("/workspace/new/sub/api.txt"),
		"mkdir":                   fs.Mkdir(ctx, "/workspace/apidir", false),
		"mkdir with parents":      fs.Mkdir(ctx, "/workspace/a/b", true),
		"remove":                  fs.Remove(ctx, "/workspace/README.md", false),
		"remove the scope":        fs.Remove(ctx, "/workspace/src", true),
		"untar":                   fs.Untar(ctx, "/workspace", tarOf(t, "x.txt", "x\n")),
		"write through a symlink": write("/workspace/src/up/README.md"),
	} {
		if !errors.Is(err, errdefs.ErrDenied) {
			t.Errorf("ESCAPE: %s outside the write scope through the file API: %v; want a denied error", what, err)
		}
	}
	r := sh(t, sb, "ls -A /workspace; cat /workspace/README.md; cat /workspace/src/api.txt /workspace/src/t/x.txt")
	if want := "README.md\nsrc\nreadme\napi\nx\n"; r.Stdout != want {
		t.Errorf("workspace after the file API calls:\n%s\nwant:\n%s", r.Stdout, want)
	}
}

// TestWriteScopeInvalid: bad paths are refused before anything is
// restricted.
func TestWriteScopeInvalid(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb, scoper, _ := scopeSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, paths := range [][]string{
		{"src"},
		{"/workspace/src", "/workspace/../etc"},
		{"/workspace/src/"},
		{""},
		{"/etc"},
		{"/tmp"},
		{"/"},
		{"/workspacex"},
		{"/workspace/src/up"},       // a symlink to the whole workspace
		{"/workspace/src/up/src"},   // through it
		{"/workspace/src/a.go/sub"}, // beneath a file
	} {
		_, err := scoper.RestrictWrites(ctx, paths)
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("RestrictWrites(%q) = %v, want an invalid argument error", paths, err)
		}
	}
	if got := sb.Info().Isolation.WriteScope; got != nil {
		t.Errorf("Info().Isolation.WriteScope = %+v after refused calls, want none", got)
	}
	mustSh(t, sb, "writes after refused calls", "touch /workspace/x && rm /workspace/x")
}

// TestAgentErrorKinds: the agent's error codes become error kinds, so a
// kernel without Landlock is ErrUnsupported, never a silent no-op.
func TestAgentErrorKinds(t *testing.T) {
	for code, kind := range map[string]error{
		"unsupported":    errdefs.ErrUnsupported,
		"invalid":        errdefs.ErrInvalid,
		"denied":         errdefs.ErrDenied,
		"limit_exceeded": errdefs.ErrLimitExceeded,
		"not_found":      errdefs.ErrNotFound,
	} {
		err := client.AgentError("restrict writes", &proto.Message{Op: proto.OpError, Code: code, Error: "x"})
		if !errors.Is(err, kind) {
			t.Errorf("code %q: %v, want %v", code, err, kind)
		}
	}
}

// A write scope that names a file lets the file API write that file but
// make nothing beside it: an upload is staged in /tmp and copied in only
// once whole, so a cut one still leaves the file as it was.
func TestWriteScopeOfAFileKeepsCutWritesOut(t *testing.T) {
	needRuntime(t)
	t.Parallel()
	sb, scoper, fs := scopeSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	restrict(t, scoper, "/workspace/README.md")
	if _, err := fs.WriteFile(ctx, "/workspace/README.md", strings.NewReader("new\n"), 0o644, false); err != nil {
		t.Fatalf("write the scope's file: %v", err)
	}
	cut := io.MultiReader(strings.NewReader("half"), iotest.ErrReader(errors.New("the client went away")))
	if _, err := fs.WriteFile(ctx, "/workspace/README.md", cut, 0o644, false); err == nil {
		t.Error("a write from a failing source succeeded")
	}
	if _, err := fs.WriteFile(ctx, "/workspace/other.txt", strings.NewReader("x\n"), 0o644, false); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("ESCAPE: a new file beside the scope's file: %v; want a denied error", err)
	}
	r := sh(t, sb, "ls -A /workspace; cat /workspace/README.md")
	if want := "README.md\nsrc\nnew\n"; r.Stdout != want {
		t.Errorf("workspace after the writes:\n%s\nwant:\n%s", r.Stdout, want)
	}
}
