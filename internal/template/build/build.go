package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/layertar"
)

// RunRequest is one RUN step.
type RunRequest struct {
	Argv   []string
	Env    []string // the stack's config Env (with its PATH)
	Cwd    string   // the stack's WORKDIR, else /workspace
	Egress []string // presets it may reach; none: no network
	Line   int      // the step's line in the build file
	Stack  string   // the digest of the steps below it (the stack's version)
}

// Runner runs a RUN step in a sandbox.
type Runner interface {
	// Run starts a sandbox from t (the build's stack so far), runs the
	// step there and writes to w a layer tar of what it changed: the
	// whole trees of /workspace and /home/sandbox (the places a command
	// can write), each marked opaque, so what it removed stays removed.
	// A command that does not exit 0 is an error; the sandbox is gone
	// when Run returns. The record (nil: none) is the step's evidence: the
	// sandbox and exec that ran it and what it fetched; it is returned
	// with a failed step's error too, when there is one.
	Run(ctx context.Context, t *template.Template, req RunRequest, w io.Writer) (*RunRecord, error)
}

// RunRecord is what a Runner knows of how a RUN step ran.
type RunRecord struct {
	Sandbox  string                   `json:"sandbox,omitempty"`
	Exec     string                   `json:"exec,omitempty"`
	Fetched  []template.Fetch         `json:"fetched,omitempty"`
	Packages []template.PackageChange `json:"packages,omitempty"`
}

// Builder builds templates into Store.
type Builder struct {
	Store  *template.Store
	Runner Runner // nil: a file with a RUN step is refused (unsupported)
	Logf   func(format string, a ...any)
	// Limits bound each step's layer.
	Limits layertar.Limits
	// RunKey is in every RUN step's cache key: where its steps run ("":
	// in process), so that a step one runner made is never taken from
	// the cache by a build of another (a daemon build must not reuse a
	// layer no policy decided, nor one with no audit record).
	RunKey string
}

// Result is what Build did.
type Result struct {
	Image  *template.Image
	Cached int // steps whose layer came from the cache
	Done   int // steps carried out
	Same   bool
}

// cacheDir holds one small record per step digest: Root/builds/<hex>.json.
const cacheDir = "builds"

type cacheEntry struct {
	Layer  string               `json:"layer,omitempty"`
	Config template.ImageConfig `json:"config"`
	// Run is a RUN step's evidence from the build that ran it: a cached
	// rebuild records the same provenance (and so the same template).
	Run *RunRecord `json:"run,omitempty"`
}

// state is the stack after the steps so far.
type state struct {
	layers []template.ImageLayer
	cfg    template.ImageConfig
	digest string
}

// Build makes template name from f, reading COPY sources below
// contextDir. Nothing is recorded unless every step succeeds: a failed
// build leaves no template (the layers of its finished steps stay in
// the cache until gc). A name that exists is a conflict unless the build
// yields exactly its record again (a cached rebuild: Result.Same).
func (b *Builder) Build(ctx context.Context, name, file string, f *File, contextDir string) (*Result, error) {
	if err := template.ValidName(name); err != nil {
		return nil, err
	}
	if b.Runner == nil && slices.ContainsFunc(f.Steps, func(s Step) bool { return s.Op == "RUN" }) {
		return nil, errdefs.Wrap(errdefs.ErrUnsupported, "RUN steps need a sandbox backend, and this build has none")
	}
	done, err := b.Store.BeginImport() // no gc takes a layer under the build
	if err != nil {
		return nil, err
	}
	defer done()
	base, err := b.base(f.From)
	if err != nil {
		return nil, err
	}
	st := &state{layers: slices.Clone(base.Layers), cfg: cloneConfig(base.Config), digest: base.Hash}
	info := &template.BuildInfo{File: file, Base: base.Name, BaseHash: base.Hash, Egress: slices.Clone(f.Egress)}
	res := &Result{}
	var ctxRoot *os.Root
	if slices.ContainsFunc(f.Steps, func(s Step) bool { return s.Op == "COPY" }) {
		if ctxRoot, err = os.OpenRoot(contextDir); err != nil {
			return nil, errdefs.Wrap(errdefs.ErrInvalid, "context directory: %v", err)
		}
		defer ctxRoot.Close()
	}
	for _, s := range f.Steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		bs, cached, err := b.step(ctx, st, s, f.Egress, ctxRoot)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", file, s.Line, s.Op, err)
		}
		info.Steps = append(info.Steps, bs)
		if cached {
			res.Cached++
		} else {
			res.Done++
		}
	}
	img, same, err := b.record(name, base, st, info)
	if err != nil {
		return nil, err
	}
	res.Image, res.Same = img, same
	return res, nil
}

// base is FROM's template: a stored image (a built-in one binds host
// paths, which no layer can carry).
func (b *Builder) base(name string) (*template.Image, error) {
	img, err := b.Store.Image(name)
	if errors.Is(err, template.ErrNotFound) {
		if _, gerr := b.Store.Get(name); gerr == nil {
			return nil, errdefs.Wrap(errdefs.ErrUnsupported, "FROM %s: a built-in template binds host directories; a build starts from an imported or built template", name)
		}
		return nil, fmt.Errorf("FROM %s: %w", name, err)
	}
	return img, err
}

func cloneConfig(c template.ImageConfig) template.ImageConfig {
	c.Env = slices.Clone(c.Env)
	return c
}

// step carries out one step (or takes it from the cache) and moves st on.
func (b *Builder) step(ctx context.Context, st *state, s Step, egress []string, ctxRoot *os.Root) (template.BuildStep, bool, error) {
	instr := s.Op + " " + strings.Join(s.Args, " ")
	var copyTar *os.File
	extra := ""
	switch s.Op {
	case "COPY":
		var sum string
		var err error
		if copyTar, sum, err = copyLayer(ctxRoot, s.Args[:len(s.Args)-1], s.Args[len(s.Args)-1]); err != nil {
			return template.BuildStep{}, false, err
		}
		defer os.Remove(copyTar.Name())
		defer copyTar.Close()
		extra = sum
	case "RUN":
		extra = "egress=" + strings.Join(egress, ",")
		if b.RunKey != "" {
			extra += "\nrunner=" + b.RunKey
		}
	}
	args, _ := json.Marshal(s.Args)
	key := digest(st.digest + "\n" + s.Op + "\n" + string(args) + "\n" + extra)
	bs := template.BuildStep{Line: s.Line, Instruction: instr, Digest: key}
	if e, ok := b.cached(key); ok {
		st.apply(e, key)
		bs.Layer = e.Layer
		e.Run.note(&bs)
		return bs, true, nil
	}
	e := cacheEntry{Config: cloneConfig(st.cfg)}
	var err error
	switch s.Op {
	case "ENV":
		for _, kv := range s.Args {
			e.Config.Env = setEnv(e.Config.Env, kv)
		}
	case "USER":
		e.Config.User = s.Args[0]
	case "WORKDIR":
		e.Config.WorkingDir = s.Args[0]
		e.Layer, err = b.Store.UnpackLayer("", dirsTar(s.Args[0]), b.Limits, nil)
	case "COPY":
		if _, err = copyTar.Seek(0, io.SeekStart); err == nil {
			e.Layer, err = b.Store.UnpackLayer("", copyTar, b.Limits, nil)
		}
	case "RUN":
		e.Layer, e.Run, err = b.run(ctx, st, s, egress)
	default:
		err = errdefs.Wrap(errdefs.ErrInvalid, "unknown step %q", s.Op)
	}
	e.Run.note(&bs)
	if err != nil {
		return bs, false, err
	}
	if err := b.remember(key, e); err != nil {
		return bs, false, err
	}
	st.apply(e, key)
	bs.Layer = e.Layer
	return bs, false, nil
}

// note puts a RUN's evidence in its step's record.
func (r *RunRecord) note(bs *template.BuildStep) {
	if r == nil {
		return
	}
	bs.Sandbox, bs.Exec, bs.Fetched, bs.Packages = r.Sandbox, r.Exec, slices.Clone(r.Fetched), slices.Clone(r.Packages)
}

func (st *state) apply(e cacheEntry, key string) {
	st.cfg = cloneConfig(e.Config)
	if e.Layer != "" {
		st.layers = append(st.layers, template.ImageLayer{DiffID: e.Layer})
	}
	st.digest = key
}

func setEnv(env []string, kv string) []string {
	k, _, _ := strings.Cut(kv, "=")
	out := slices.DeleteFunc(slices.Clone(env), func(e string) bool { return strings.HasPrefix(e, k+"=") })
	return append(out, kv)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (b *Builder) cachePath(key string) string {
	return filepath.Join(b.Store.Root, cacheDir, strings.TrimPrefix(key, "sha256:")+".json")
}

// cached is the step of digest key from an earlier build, if its layer
// is still stored (gc may have taken it: then it is carried out again).
func (b *Builder) cached(key string) (cacheEntry, bool) {
	var e cacheEntry
	data, err := os.ReadFile(b.cachePath(key))
	if err != nil || json.Unmarshal(data, &e) != nil {
		return e, false
	}
	if e.Layer != "" && !b.Store.HasLayer(e.Layer) {
		return e, false
	}
	return e, true
}

func (b *Builder) remember(key string, e cacheEntry) error {
	p := b.cachePath(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(&e)
	if err != nil {
		return err
	}
	// a temporary name of its own: two builds may make the same step
	tmp, err := os.CreateTemp(filepath.Dir(p), ".new-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

func layerIDs(ls []template.ImageLayer) []string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.DiffID
	}
	return ids
}

// stack is the template of the layers so far, for a RUN's sandbox.
func (b *Builder) stack(st *state) (*template.Template, error) {
	al, err := b.Store.AirlockLayer(layerIDs(st.layers))
	if err != nil {
		return nil, err
	}
	img := &template.Image{Name: "build", Layers: st.layers, AirlockLayer: al, Config: st.cfg}
	return b.Store.ImageTemplate(img)
}

func (b *Builder) run(ctx context.Context, st *state, s Step, egress []string) (string, *RunRecord, error) {
	t, err := b.stack(st)
	if err != nil {
		return "", nil, err
	}
	req := RunRequest{Argv: s.Args, Env: t.Env, Cwd: st.cfg.WorkingDir, Egress: egress, Line: s.Line, Stack: st.digest}
	if req.Cwd == "" {
		req.Cwd = "/workspace"
	}
	if b.Logf != nil {
		b.Logf("RUN %s", strings.Join(s.Args, " "))
	}
	pr, pw := io.Pipe()
	type ran struct {
		rec *RunRecord
		err error
	}
	done := make(chan ran, 1)
	go func() {
		rec, err := b.Runner.Run(ctx, t, req, pw)
		pw.CloseWithError(err)
		done <- ran{rec, err}
	}()
	id, err := b.Store.UnpackLayer("", pr, b.Limits, nil)
	pr.CloseWithError(errors.New("unpack ended"))
	r := <-done
	if r.err != nil {
		return "", r.rec, r.err
	}
	return id, r.rec, err
}

// record writes the template (or finds it already there, the same).
func (b *Builder) record(name string, base *template.Image, st *state, info *template.BuildInfo) (*template.Image, bool, error) {
	ids := layerIDs(st.layers)
	var err error
	old, oldErr := b.Store.Image(name)
	var al string
	if oldErr == nil && slices.Equal(layerIDs(old.Layers), ids) {
		// the same stack: the same airlock layer (made again it would be
		// unpacked and synced again, most of a cached rebuild's time)
		al = old.AirlockLayer
	} else if al, err = b.Store.AirlockLayer(ids); err != nil {
		return nil, false, err
	}
	img := &template.Image{Name: name, Kind: "build", Source: info.File, Digest: st.digest, Platform: base.Platform,
		Layers: st.layers, AirlockLayer: al, Config: st.cfg, Packages: base.Packages, Build: info}
	if oldErr == nil {
		img.Format = old.Format
		img.ComputeHash()
		if img.Hash == old.Hash {
			return old, true, nil
		}
		return nil, false, fmt.Errorf("template %q exists and this build differs from it (templates are immutable: rm it first): %w", name, errdefs.ErrConflict)
	}
	if err := b.Store.PutImage(img); err != nil {
		return nil, false, err
	}
	return img, false, nil
}
