package templatebuild

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/build"
)

// Service is the daemon's template builds (POST /v1/templates/build).
type Service struct {
	Store  *template.Store
	Core   Core
	Stacks *Stacks
	// Limits bound each RUN step's sandbox (zero: the core's defaults).
	Limits runtime.Limits
}

// Result is what a build made.
type Result struct {
	Template *sandbox.TemplateInfo
	Digest   string // the last step's digest
	Cached   int    // steps taken from the cache
	Built    int    // steps carried out
	Same     bool   // the template existed, the same
}

// RunKey is the daemon's runner in RUN steps' cache keys: an in-process
// build's steps (no policy, no audit record) are never reused here.
const RunKey = "daemon"

// maxFile bounds the build file read (build.Parse's own bound).
const maxFile = 1 << 20

// Build builds template name from the build file at path file (on the
// daemon's host), COPY reading below contextDir. progress (may be nil)
// hears each step and the RUN steps' output, a line each.
func (s *Service) Build(ctx context.Context, name, file, contextDir string, progress func(string)) (*Result, error) {
	if !filepath.IsAbs(file) || (contextDir != "" && !filepath.IsAbs(contextDir)) {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "the build file and context directory are daemon host paths: give them absolute")
	}
	if contextDir == "" {
		contextDir = filepath.Dir(file)
	}
	data, err := readFile(file)
	if err != nil {
		return nil, err
	}
	f, err := build.Parse(filepath.Base(file), data)
	if err != nil {
		return nil, err
	}
	r := &Runner{Core: s.Core, Stacks: s.Stacks, Name: name, Limits: s.Limits}
	b := &build.Builder{Store: s.Store, Runner: r, RunKey: RunKey}
	var lw *lineWriter
	if progress != nil {
		b.Logf = func(format string, a ...any) { progress(fmt.Sprintf(format, a...)) }
		lw = &lineWriter{line: progress}
		r.Output = lw
	}
	res, err := b.Build(ctx, name, filepath.Base(file), f, contextDir)
	if lw != nil {
		lw.flush()
	}
	if err != nil {
		return nil, err
	}
	img := res.Image
	return &Result{Template: &sandbox.TemplateInfo{Name: img.Name, Version: img.Version, Kind: img.Kind, Base: img.Source, Created: img.Created},
		Digest: img.Digest, Cached: res.Cached, Built: res.Done, Same: res.Same}, nil
}

func readFile(p string) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "build file: %v", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFile+1))
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "build file: %v", err)
	}
	return data, nil
}

// lineWriter hands the steps' output on a line at a time (a long line in
// pieces of maxLine bytes).
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	line func(string)
}

const maxLine = 4096

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 && len(w.buf) < maxLine {
			return len(p), nil
		}
		if i < 0 || i > maxLine {
			i = maxLine
		}
		w.line(string(w.buf[:i]))
		if i < len(w.buf) && w.buf[i] == '\n' {
			i++
		}
		w.buf = w.buf[i:]
	}
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.line(string(w.buf))
		w.buf = nil
	}
}
