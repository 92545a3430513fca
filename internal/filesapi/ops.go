package filesapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/reqcheck"
	"github.com/airlock-dev/airlock/internal/tarfilter"
)

// The policed file operations. Each judges the path it will use: the
// lexically clean form of what the caller sent (reqcheck.AbsPath) ("/tmp/../workspace/x" is
// judged, and written, as "/workspace/x"), and for tar streams every
// entry, not only the directory.

func (f *policedFiles) ReadFile(ctx context.Context, p string, w io.Writer, max int64) (int64, error) {
	p, err := reqcheck.AbsPath(p)
	if err != nil {
		return 0, err
	}
	if err := f.check(ctx, "read", p, false); err != nil {
		return 0, err
	}
	return f.Files.ReadFile(ctx, p, w, max)
}

func (f *policedFiles) WriteFile(ctx context.Context, p string, r io.Reader, mode uint32, parents bool) (int64, error) {
	p, err := reqcheck.AbsPath(p)
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
		return f.record(context.WithoutCancel(ctx), "file.write", payload)
	}
	if err := ev(map[string]any{"state": "started"}); err != nil {
		return 0, err
	}
	src := tarfilter.NewSource(r)
	n, err := f.Files.WriteFile(ctx, p, src, mode, parents)
	payload := map[string]any{"state": "done", "size": n}
	if err != nil {
		payload["state"], payload["size"], payload["error"] = "failed", 0, err.Error()
		if src.Cut() || ctx.Err() != nil {
			payload["state"] = "aborted"
		}
	}
	if rerr := ev(payload); err == nil {
		err = rerr
	}
	return n, err
}

func (f *policedFiles) Mkdir(ctx context.Context, p string, parents bool) error {
	p, err := reqcheck.AbsPath(p)
	if err != nil {
		return err
	}
	if err := f.check(ctx, "mkdir", p, true); err != nil {
		return err
	}
	return f.Files.Mkdir(ctx, p, parents)
}

func (f *policedFiles) Remove(ctx context.Context, p string, recursive bool) error {
	p, err := reqcheck.AbsPath(p)
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
	dir, err := reqcheck.AbsPath(dir)
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
	cw := &tarfilter.Counter{W: w}
	omitted, ferr := tarfilter.Filter(dir, pr, cw, func(p string) (bool, error) { return f.omitted(ctx, p) })
	if ferr == nil {
		_, _ = io.Copy(io.Discard, pr) // the padding after the archive's end
	}
	pr.CloseWithError(tarfilter.ErrStreamEnded) // the producer stops if we did
	terr := <-done
	switch {
	case ferr != nil:
		return cw.N, ferr
	case terr != nil:
		return cw.N, terr
	case len(omitted) > 0:
		return cw.N, &OmittedError{Paths: omitted}
	}
	return cw.N, nil
}

// omitted reports whether a download leaves the entry p out: the policy
// refuses its read (any other error ends the download).
func (f *policedFiles) omitted(ctx context.Context, p string) (bool, error) {
	err := f.check(ctx, "read", p, false)
	var pe *sandbox.PolicyError
	if err != nil && errors.As(err, &pe) {
		return true, nil
	}
	return false, err
}

// Untar unpacks a tar stream below dir, judging every entry as a write
// (a hard link also as a write of what it links to). The first entry the
// policy refuses ends the upload with the policy's error; the entries
// before it are written. An archive that could write elsewhere than it
// names ends the same way: an entry that climbs out of dir, or one below a
// symlink the same archive made.
func (f *policedFiles) Untar(ctx context.Context, dir string, r io.Reader) error {
	dir, err := reqcheck.AbsPath(dir)
	if err != nil {
		return err
	}
	// dir itself must exist and is not written: only the entries are. One
	// event before any byte goes in, one after with what was written (an
	// event per entry made a 5,000-file upload five times slower).
	if err := f.record(ctx, "file.upload", map[string]any{"dir": dir, "state": "started"}); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	checked := make(chan error, 1)
	var sum tarfilter.Summary
	var breakGlass []string // the break-glasses that allowed an entry
	allow := func(p string) error {
		bg, err := f.decide(ctx, "upload", p, true, false)
		if err == nil && bg != "" && !slices.Contains(breakGlass, bg) {
			breakGlass = append(breakGlass, bg)
		}
		return err
	}
	src := tarfilter.NewSource(r)
	go func() {
		err := tarfilter.Check(dir, src, pw, allow, &sum)
		pw.CloseWithError(err)
		checked <- err
	}()
	uerr := f.Files.Untar(ctx, dir, pr)
	pr.CloseWithError(tarfilter.ErrStreamEnded) // the checker stops if the agent did
	cerr := <-checked
	if errors.Is(cerr, tarfilter.ErrStreamEnded) {
		cerr = nil
	}
	err = cmp.Or(cerr, uerr) // the checker's reason first: it broke the agent's stream off
	payload := map[string]any{"dir": dir, "state": "done", "entries": sum.N, "paths": sum.Paths}
	if sum.N > len(sum.Paths) {
		payload["more"] = sum.N - len(sum.Paths)
	}
	if len(breakGlass) > 0 {
		payload["break_glass"] = breakGlass
	}
	if err != nil {
		payload["state"], payload["error"] = "failed", err.Error()
		if src.Cut() || ctx.Err() != nil {
			// The entries before the cut are written; the one it cut is not.
			payload["state"] = "aborted"
		}
	}
	if rerr := f.record(context.WithoutCancel(ctx), "file.upload", payload); err == nil {
		err = rerr
	}
	return err
}
