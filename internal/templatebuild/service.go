package templatebuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
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
	// Presets are the daemon's egress presets (see Runner.Presets).
	Presets netpolicy.Presets
}

// Result is what a build made.
type Result struct {
	Template *sandbox.TemplateInfo
	Digest   string // the last step's digest
	Cached   int    // steps taken from the cache
	Built    int    // steps carried out
	Same     bool   // the template existed, the same

	steps []stepEvent
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
	sum := sha256.Sum256(data)
	ev := map[string]any{"name": name, "file": file, "context": contextDir, "file_sha256": hex.EncodeToString(sum[:]), "base": f.From, "egress": f.Egress}
	// record first: a build no record names runs no step
	if err := s.record(ctx, "template.build.start", ev); err != nil {
		return nil, fmt.Errorf("the audit record: %w", err)
	}
	res, err := s.build(ctx, name, file, contextDir, f, progress)
	if err != nil {
		ev["error"] = err.Error()
	} else {
		ev["template"], ev["cached"], ev["built"], ev["same"] = res.Template.Name+"@"+res.Template.Version, res.Cached, res.Built, res.Same
		ev["steps"] = res.steps
	}
	_ = s.record(context.WithoutCancel(ctx), "template.build", ev) // after the act: best effort
	return res, err
}

// record writes a build's own event (no sandbox: the steps' sandboxes
// have theirs).
func (s *Service) record(ctx context.Context, kind string, payload map[string]any) error {
	if s.Stacks == nil || s.Stacks.c == nil {
		return errdefs.Wrap(errdefs.ErrUnsupported, "this daemon runs no builds (the templatebuild module is not attached)")
	}
	return s.Stacks.c.Record(ctx, audit.Entry{Kind: kind, Payload: payload})
}

// stepEvent is a step as the template.build event names it: enough to
// find its sandbox's events, not the whole provenance (the template's
// record has that).
type stepEvent struct {
	Line     int    `json:"line"`
	Digest   string `json:"digest"`
	Layer    string `json:"layer,omitempty"`
	Sandbox  string `json:"sandbox,omitempty"`
	Exec     string `json:"exec,omitempty"`
	Fetched  int    `json:"fetched,omitempty"`
	Packages int    `json:"packages,omitempty"`
}

func (s *Service) build(ctx context.Context, name, file, contextDir string, f *build.File, progress func(string)) (*Result, error) {
	r := &Runner{Core: s.Core, Stacks: s.Stacks, Name: name, Limits: s.Limits, Presets: s.Presets}
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
	out := &Result{Template: &sandbox.TemplateInfo{Name: img.Name, Version: img.Version, Kind: img.Kind, Base: img.Source, Created: img.Created},
		Digest: img.Digest, Cached: res.Cached, Built: res.Done, Same: res.Same}
	if img.Build != nil {
		for _, st := range img.Build.Steps {
			out.steps = append(out.steps, stepEvent{Line: st.Line, Digest: st.Digest, Layer: st.Layer, Sandbox: st.Sandbox, Exec: st.Exec, Fetched: len(st.Fetched), Packages: len(st.Packages)})
		}
	}
	return out, nil
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
