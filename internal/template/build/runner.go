package build

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/template"
)

// SandboxRunner runs each RUN step in a fresh sandbox of Backend (the
// same boundary as any sandbox: its own namespaces, seccomp, Landlock,
// uid 1000), started from the build's stack: the in-process build of
// `airlock template build` without a daemon. Its sandboxes have no
// network: a step that names egress presets is refused (unsupported),
// since only the daemon has the egress proxy, so default-deny is all it
// offers; no command policy applies and its steps are not on any audit
// log (internal/templatebuild runs them through the daemon instead).
type SandboxRunner struct {
	Backend runtime.Backend
	Limits  runtime.Limits
	Stdout  io.Writer // the steps' output (nil: discarded)
	Stderr  io.Writer
}

// changedTrees are the places a command can write (what a step's layer
// holds).
var changedTrees = []string{"workspace", "home/sandbox"}

// Run implements Runner.
func (r *SandboxRunner) Run(ctx context.Context, t *template.Template, req RunRequest, w io.Writer) (*RunRecord, error) {
	return nil, r.run(ctx, t, req, w)
}

func (r *SandboxRunner) run(ctx context.Context, t *template.Template, req RunRequest, w io.Writer) error {
	if len(req.Egress) > 0 {
		return errdefs.Wrap(errdefs.ErrUnsupported, "egress presets %s for RUN steps: this build runs in process, without the daemon's egress proxy, so a RUN reaches no network (build through the daemon: --socket, or remove the egress: section)", strings.Join(req.Egress, ", "))
	}
	spec := runtime.Spec{RootFS: t.Dir, Lowers: t.Lowers, Env: t.Env, Limits: r.Limits, NoFileActivity: true}
	sb, err := r.Backend.Create(ctx, spec)
	if err != nil {
		return err
	}
	defer sb.Destroy(context.WithoutCancel(ctx))
	stdout, stderr := r.Stdout, r.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: req.Argv, Dir: req.Cwd, Stdin: bytes.NewReader(nil), Stdout: stdout, Stderr: stderr})
	if err != nil {
		return err
	}
	st, err := p.Wait(ctx)
	if err != nil {
		return err
	}
	if st.Code != 0 || st.Limit != "" {
		return fmt.Errorf("the command exited %d%s", st.Code, limitNote(st.Limit))
	}
	f, ok := sb.(runtime.Files)
	if !ok {
		return errdefs.Wrap(errdefs.ErrUnsupported, "backend %s has no file access", r.Backend.Name())
	}
	return ChangesTar(ctx, f, w)
}

func limitNote(l runtime.Limit) string {
	if l == "" {
		return ""
	}
	return fmt.Sprintf(" (limit %s)", l)
}

// ChangesTar writes the changed trees as one layer tar: each tree's own
// entries below its name, after an opaque marker that hides the layers
// below (the tar has the whole tree as the step left it).
func ChangesTar(ctx context.Context, f runtime.Files, w io.Writer) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "home/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
		return err
	}
	for _, tree := range changedTrees {
		if err := tw.WriteHeader(&tar.Header{Name: tree + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: tree + "/.wh..wh..opq", Typeflag: tar.TypeReg, ModTime: epoch}); err != nil {
			return err
		}
		pr, pw := io.Pipe()
		go func() {
			_, err := f.Tar(ctx, "/"+tree, pw)
			pw.CloseWithError(err)
		}()
		err := retar(tw, tar.NewReader(pr), tree)
		pr.CloseWithError(io.ErrClosedPipe)
		if err != nil {
			return fmt.Errorf("the step's /%s: %w", tree, err)
		}
	}
	return tw.Close()
}

// readable is a layer file's mode: the layer makes it host root's, so
// without read (and, for a directory, search) bits for all, the sandbox
// user could not read it again, nor could the next step's capture of the
// tree, which would then lose it.
func readable(mode int64, dir bool) int64 {
	if dir {
		return mode | 0o555
	}
	return mode | 0o444
}

// retar copies a tree's tar entries below prefix.
func retar(tw *tar.Writer, tr *tar.Reader, prefix string) error {
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		n := &tar.Header{Name: prefix + "/" + strings.TrimPrefix(h.Name, "./"), Typeflag: h.Typeflag, Mode: readable(h.Mode, h.Typeflag == tar.TypeDir), Size: h.Size, Linkname: h.Linkname, ModTime: h.ModTime}
		if err := tw.WriteHeader(n); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, tr); err != nil {
				return err
			}
		}
	}
}
