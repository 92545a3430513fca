package manager

import (
	"archive/tar"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// The policed file operations. Each judges the path it will use: the
// lexically clean form of what the caller sent ("/tmp/../workspace/x" is
// judged, and written, as "/workspace/x"), and for tar streams every
// entry, not only the directory.

// errStreamEnded: one side of a filtered tar stream stopped the other.
var errStreamEnded = errors.New("the tar stream ended")

// cleanPath returns p's clean form, or an error when p is not absolute.
func cleanPath(p string) (string, error) {
	if err := CheckNoNUL("path", p); err != nil {
		return "", err
	}
	if !path.IsAbs(p) {
		return "", fmt.Errorf("path %q must be absolute: %w", p, errdefs.ErrInvalid)
	}
	return path.Clean(p), nil
}

func (f *policedFiles) ReadFile(ctx context.Context, p string, w io.Writer, max int64) (int64, error) {
	p, err := cleanPath(p)
	if err != nil {
		return 0, err
	}
	if err := f.check(ctx, "read", p, false); err != nil {
		return 0, err
	}
	return f.Files.ReadFile(ctx, p, w, max)
}

func (f *policedFiles) WriteFile(ctx context.Context, p string, r io.Reader, mode uint32, parents bool) (int64, error) {
	p, err := cleanPath(p)
	if err != nil {
		return 0, err
	}
	bg, err := f.decide(ctx, "write", p, true, false)
	if err != nil {
		return 0, err
	}
	// One event before any byte goes in, one after saying how it ended:
	// an upload that broke off is "aborted" (the file is left as it was),
	// never recorded as a write.
	ev := func(payload map[string]any) error {
		payload["path"] = p
		if bg != "" {
			payload["break_glass"] = bg
		}
		return f.m.record(context.WithoutCancel(ctx), audit.Entry{SandboxID: f.id, TaskID: f.ls.taskID, Kind: "file.write", Payload: payload})
	}
	if err := recordFirst("", ev(map[string]any{"state": "started"})); err != nil {
		return 0, err
	}
	src := &sourceReader{r: r}
	n, err := f.Files.WriteFile(ctx, p, src, mode, parents)
	payload := map[string]any{"state": "done", "size": n}
	if err != nil {
		payload["state"], payload["size"], payload["error"] = "failed", 0, err.Error()
		if src.cut() || ctx.Err() != nil {
			payload["state"] = "aborted"
		}
	}
	if rerr := ev(payload); err == nil {
		err = rerr
	}
	return n, err
}

// sourceReader notes whether an upload's source broke off before its end
// (a client gone, a body over its limit or too slow).
// It is read by the agent client's copier, which may outlive WriteFile.
type sourceReader struct {
	r     io.Reader
	broke atomic.Bool
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.broke.Store(true)
	}
	return n, err
}

func (s *sourceReader) cut() bool { return s.broke.Load() }

func (f *policedFiles) Mkdir(ctx context.Context, p string, parents bool) error {
	p, err := cleanPath(p)
	if err != nil {
		return err
	}
	if err := f.check(ctx, "mkdir", p, true); err != nil {
		return err
	}
	return f.Files.Mkdir(ctx, p, parents)
}

func (f *policedFiles) Remove(ctx context.Context, p string, recursive bool) error {
	p, err := cleanPath(p)
	if err != nil {
		return err
	}
	if err := f.check(ctx, "remove", p, true); err != nil {
		return err
	}
	return f.Files.Remove(ctx, p, recursive)
}

// OmittedError: a tar download left out the entries the policy does not
// let the caller read (each is in the audit record as file.refused); the
// stream itself is a complete archive of the rest.
type OmittedError struct{ Paths []string }

func (e *OmittedError) Error() string {
	return fmt.Sprintf("%d entries the policy does not let you read were left out (first: %s)", len(e.Paths), e.Paths[0])
}

// Tar streams dir's tree, without the entries whose read the policy
// refuses (then it returns an *OmittedError once the archive is complete).
func (f *policedFiles) Tar(ctx context.Context, dir string, w io.Writer) (int64, error) {
	dir, err := cleanPath(dir)
	if err != nil {
		return 0, err
	}
	if err := f.check(ctx, "download", dir, false); err != nil {
		return 0, err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := f.Files.Tar(ctx, dir, pw)
		pw.CloseWithError(err)
		done <- err
	}()
	cw := &countingWriter{w: w}
	omitted, ferr := f.filterTar(ctx, dir, pr, cw)
	if ferr == nil {
		_, _ = io.Copy(io.Discard, pr) // the padding after the archive's end
	}
	pr.CloseWithError(errStreamEnded) // the producer stops if we did
	terr := <-done
	switch {
	case ferr != nil:
		return cw.n, ferr
	case terr != nil:
		return cw.n, terr
	case len(omitted) > 0:
		return cw.n, &OmittedError{Paths: omitted}
	}
	return cw.n, nil
}

func (f *policedFiles) filterTar(ctx context.Context, dir string, r io.Reader, w io.Writer) (omitted []string, err error) {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return omitted, tw.Close()
		}
		if err != nil {
			return omitted, err
		}
		p := path.Join(dir, h.Name)
		if err := f.check(ctx, "read", p, false); err != nil {
			var pe *PolicyError
			if !errors.As(err, &pe) {
				return omitted, err
			}
			omitted = append(omitted, p)
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return omitted, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return omitted, err
		}
	}
}

// Untar unpacks a tar stream below dir, judging every entry as a write
// (a hard link also as a write of what it links to). The first entry the
// policy refuses ends the upload with the policy's error; the entries
// before it are written. An archive that could write elsewhere than it
// names ends the same way: an entry that climbs out of dir, or one below a
// symlink the same archive made.
func (f *policedFiles) Untar(ctx context.Context, dir string, r io.Reader) error {
	dir, err := cleanPath(dir)
	if err != nil {
		return err
	}
	// dir itself must exist and is not written: only the entries are. One
	// event before any byte goes in, one after with what was written (an
	// event per entry made a 5,000-file upload five times slower).
	if err := recordFirst("", f.m.record(ctx, audit.Entry{SandboxID: f.id, TaskID: f.ls.taskID, Kind: "file.upload", Payload: map[string]any{"dir": dir, "state": "started"}})); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	checked := make(chan error, 1)
	var sum uploadSummary
	src := &sourceReader{r: r}
	go func() {
		err := f.checkTar(ctx, dir, src, pw, &sum)
		pw.CloseWithError(err)
		checked <- err
	}()
	uerr := f.Files.Untar(ctx, dir, pr)
	pr.CloseWithError(errStreamEnded) // the checker stops if the agent did
	cerr := <-checked
	if errors.Is(cerr, errStreamEnded) {
		cerr = nil
	}
	err = cmp.Or(cerr, uerr) // the checker's reason first: it broke the agent's stream off
	payload := map[string]any{"dir": dir, "state": "done", "entries": sum.n, "paths": sum.paths}
	if sum.n > len(sum.paths) {
		payload["more"] = sum.n - len(sum.paths)
	}
	if len(sum.breakGlass) > 0 {
		payload["break_glass"] = sum.breakGlass
	}
	if err != nil {
		payload["state"], payload["error"] = "failed", err.Error()
		if src.cut() || ctx.Err() != nil {
			// The entries before the cut are written; the one it cut is not.
			payload["state"] = "aborted"
		}
	}
	if rerr := f.m.record(context.WithoutCancel(ctx), audit.Entry{SandboxID: f.id, TaskID: f.ls.taskID, Kind: "file.upload", Payload: payload}); err == nil {
		err = rerr
	}
	return err
}

// uploadSummary is what a tar upload let through: how many entries, the
// first maxUploadPaths paths, and the break-glasses that allowed any.
type uploadSummary struct {
	n          int
	paths      []string
	breakGlass []string
}

const maxUploadPaths = 1000

func (f *policedFiles) checkTar(ctx context.Context, dir string, r io.Reader, w io.Writer, sum *uploadSummary) error {
	allow := func(p string) error {
		bg, err := f.decide(ctx, "upload", p, true, false)
		if err == nil && bg != "" && !slices.Contains(sum.breakGlass, bg) {
			sum.breakGlass = append(sum.breakGlass, bg)
		}
		return err
	}
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	var links []string // symlinks this archive made
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tw.Close()
		}
		if err != nil {
			return fmt.Errorf("tar: %v: %w", err, errdefs.ErrInvalid)
		}
		p, err := checkUploadEntry(dir, h, links, allow)
		if err != nil {
			return err
		}
		if h.Typeflag == tar.TypeSymlink {
			links = append(links, p)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err // an entry cut short is not counted: it is not written
		}
		sum.n++
		if len(sum.paths) < maxUploadPaths {
			sum.paths = append(sum.paths, p)
		}
	}
}

// checkUploadEntry returns the path below dir that a tar entry writes,
// once allow lets it (and, for a hard link, what it links to); an entry
// that climbs out of dir, or lies below one of links (the symlinks the
// same archive made), is refused.
func checkUploadEntry(dir string, h *tar.Header, links []string, allow func(p string) error) (string, error) {
	rel := path.Clean(h.Name)
	if path.IsAbs(h.Name) || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("tar entry %q is not below the upload directory: %w", h.Name, errdefs.ErrInvalid)
	}
	p := path.Join(dir, rel)
	for _, l := range links {
		if strings.HasPrefix(p, l+"/") {
			return "", fmt.Errorf("tar entry %q is below a symlink the same archive made: %w", h.Name, errdefs.ErrInvalid)
		}
	}
	if err := allow(p); err != nil {
		return "", err
	}
	if h.Typeflag == tar.TypeLink {
		target := path.Clean(h.Linkname)
		if path.IsAbs(h.Linkname) || target == ".." || strings.HasPrefix(target, "../") {
			return "", fmt.Errorf("tar hard link %q to %q is not below the upload directory: %w", h.Name, h.Linkname, errdefs.ErrInvalid)
		}
		if err := allow(path.Join(dir, target)); err != nil {
			return "", err
		}
	}
	return p, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Files gives access to a running sandbox's files.
func (m *Manager) Files(ctx context.Context, id string) (runtime.Files, error) {
	sb, err := m.runtimeSandbox(ctx, id)
	if err != nil {
		return nil, err
	}
	f, ok := sb.(runtime.Files)
	if !ok {
		return nil, fmt.Errorf("backend %s has no file access: %w", m.cfg.Backend.Name(), errdefs.ErrUnsupported)
	}
	return f, nil
}
