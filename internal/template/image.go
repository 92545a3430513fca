package template

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"golang.org/x/sys/unix"
)

// Imported templates (issue 21) are images: a stack of content-addressed
// layers, each unpacked once under Root/layers and shared by every image
// that has it, stacked as overlay lower layers; plus a thin airlock layer
// on top (made by the importer, never an edit of the image's layers).
//
//	Root/layers/<hex>/root        an unpacked layer (hex: its diffID, the sha256 of its tar)
//	Root/layers/<hex>/layer.json  what the unpack saw (layerInfo)
//	Root/layers/.unpack-*         unpacks under way (flocked) or interrupted (removed at the next Open, unpack or GC)
//	Root/images/<name>.json       an image template (Image), immutable once written
//	Root/images/.lock             shared by imports, exclusive for rm and gc
const (
	layersDir    = "layers"
	imagesDir    = "images"
	layerRoot    = "root"
	layerMeta    = "layer.json"
	unpackPrefix = ".unpack-"
	imageFormat  = 1
)

// ImageConfig is what airlock honours of an image's config.
type ImageConfig struct {
	Env        []string `json:"env,omitempty"`
	WorkingDir string   `json:"working_dir,omitempty"`
	// User is the image's user, recorded only: commands always run as
	// the unprivileged sandbox user (uid 1000), a root image user too.
	User       string            `json:"user,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Entrypoint []string          `json:"entrypoint,omitempty"`
	Cmd        []string          `json:"cmd,omitempty"`
}

// ImageLayer is one layer of an image, bottom first as in OCI.
type ImageLayer struct {
	DiffID    string `json:"diff_id"`          // sha256 of the uncompressed tar: the store's key
	Digest    string `json:"digest,omitempty"` // of the blob as the source had it
	MediaType string `json:"media_type,omitempty"`
	Size      int64  `json:"size,omitempty"` // the blob's
}

// Image is an imported template's record.
type Image struct {
	Format  int    `json:"format"`
	Name    string `json:"name"`
	Hash    string `json:"hash"` // sha256 over everything below but Created
	Version string `json:"version"`
	Kind    string `json:"kind"`   // "image", "debian" or "build"
	Source  string `json:"source"` // as given to the import
	// Digest pins what was imported: the image manifest's digest (a
	// docker archive has none: its config's).
	Digest       string            `json:"digest"`
	IndexDigest  string            `json:"index_digest,omitempty"`
	Platform     string            `json:"platform"`
	Layers       []ImageLayer      `json:"layers"`
	AirlockLayer string            `json:"airlock_layer"` // diffID of the layer airlock added
	Config       ImageConfig       `json:"config"`
	Provenance   map[string]string `json:"provenance,omitempty"`
	Packages     []string          `json:"packages,omitempty"` // "name=version arch" from dpkg, when it has one
	// Build is a built template's provenance (Kind "build").
	Build   *BuildInfo `json:"build,omitempty"`
	Created time.Time  `json:"created"`
}

// BuildInfo is what a template build (airlock template build) was made
// of: its base, pinned by hash, and each step with the digest of its
// inputs (the cache key) and the layer it added, if any.
type BuildInfo struct {
	File     string      `json:"file"`      // the build file, as given
	Base     string      `json:"base"`      // FROM's template
	BaseHash string      `json:"base_hash"` // its hash at the build
	Egress   []string    `json:"egress"`    // presets RUN steps could reach
	Steps    []BuildStep `json:"steps"`
}

// BuildStep is one step of a build.
type BuildStep struct {
	Line        int    `json:"line"`
	Instruction string `json:"instruction"`
	Digest      string `json:"digest"`          // of its inputs: the parent's digest, the instruction, COPY's content
	Layer       string `json:"layer,omitempty"` // diffID of what it added
	// Sandbox and Exec are the daemon's sandbox and exec that ran a RUN
	// step (its events in the audit log); empty for a step run in process
	// (airlock template build without a daemon) and for other steps.
	Sandbox string `json:"sandbox,omitempty"`
	Exec    string `json:"exec,omitempty"`
	// Fetched is what a RUN step's egress record holds: every request
	// its sandbox made through the egress proxy, allowed or refused.
	Fetched []Fetch `json:"fetched,omitempty"`
	// Packages are the step's package.change records (the review
	// module's dependency evidence): each lockfile a package manager
	// changed, its hash after, the packages it added, removed or moved,
	// and the registry hosts the command reached.
	Packages []PackageChange `json:"packages,omitempty"`
}

// PackageChange is one lockfile a build step's package manager changed.
type PackageChange struct {
	Lockfile   string           `json:"lockfile"`
	Manager    string           `json:"manager,omitempty"`
	SHA256     string           `json:"sha256,omitempty"` // the lockfile's after the step ("": removed)
	Changes    []PackageVersion `json:"changes,omitempty"`
	Registries []string         `json:"registries,omitempty"`
	// ParseError: the lockfile could not be read for its packages.
	ParseError string `json:"parse_error,omitempty"`
}

// PackageVersion is a package a step added, removed or changed.
type PackageVersion struct {
	Name   string   `json:"name"`
	From   []string `json:"from,omitempty"`
	To     []string `json:"to,omitempty"`
	Change string   `json:"change"` // added, removed, changed
}

// Fetch is one network request of a build step, from the egress record:
// a CONNECT (HTTPS: the host only) or an HTTP request (with its path).
type Fetch struct {
	Method   string `json:"method"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Path     string `json:"path,omitempty"`
	Status   int    `json:"status,omitempty"`
	Decision string `json:"decision"`
	Rule     string `json:"rule,omitempty"`
	BytesIn  int64  `json:"bytes_in"`
	BytesOut int64  `json:"bytes_out"`
	// Count is how many refusals one summary of the record stands for.
	Count int64 `json:"count,omitempty"`
}

// layerInfo is Root/layers/<hex>/layer.json.
type layerInfo struct {
	DiffID   string          `json:"diff_id"`
	Stats    *layertar.Stats `json:"stats"`
	Unpacked time.Time       `json:"unpacked"`
}

// ComputeHash sets img.Hash and img.Version from its content.
func (img *Image) ComputeHash() {
	c := *img
	c.Hash, c.Version, c.Created = "", "", time.Time{}
	data, _ := json.Marshal(&c)
	sum := sha256.Sum256(data)
	img.Hash = "sha256:" + hex.EncodeToString(sum[:])
	img.Version = img.Hash[7:19]
}

func (s *Store) layerDir(diffID string) (string, error) {
	hx, err := hashHex(diffID)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.Root, layersDir, hx), nil
}

// LayerRoot is the unpacked tree of a stored layer.
func (s *Store) LayerRoot(diffID string) (string, error) {
	d, err := s.layerDir(diffID)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, layerRoot), nil
}

// HasLayer reports whether the layer is stored (complete).
func (s *Store) HasLayer(diffID string) bool {
	d, err := s.layerDir(diffID)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(d, layerMeta))
	return err == nil
}

// UnpackLayer unpacks the uncompressed layer tar r into the store. want is
// its diffID ("": whatever the stream hashes to); the stream's sha256 must
// match it. verify, when set, runs after the stream's end and before the
// layer is put in place (the caller's check of the compressed blob). The
// layer is unpacked under a flocked temporary name and renamed into place
// only whole: an unpack that fails or is killed leaves no layer, and what
// it left is removed by the next unpack or GC. It returns the diffID.
func (s *Store) UnpackLayer(want string, r io.Reader, lim layertar.Limits, verify func() error) (string, error) {
	if want != "" && s.HasLayer(want) {
		return want, nil
	}
	base := filepath.Join(s.Root, layersDir)
	if err := os.MkdirAll(base, 0o711); err != nil {
		return "", err
	}
	s.removePartialLayers()
	tmp, lock, err := s.newPartial(unpackPrefix)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	tree := filepath.Join(tmp, layerRoot)
	if err := os.Mkdir(tree, 0o755); err != nil {
		return "", err
	}
	h := sha256.New()
	cr := &capReader{r: io.TeeReader(r, h), left: lim.StreamCap()}
	st, err := layertar.Unpack(tree, cr, lim)
	if err != nil {
		return "", err
	}
	// What follows the tar's end (its zero blocks, padding) is part of
	// the diffID too.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return "", err
	}
	diffID := digestOf(h)
	if want != "" && diffID != want {
		return "", fmt.Errorf("layer content is %s, not its recorded diffID %s: %w", diffID, want, errdefs.ErrInvalid)
	}
	if verify != nil {
		if err := verify(); err != nil {
			return "", err
		}
	}
	data, _ := json.MarshalIndent(&layerInfo{DiffID: diffID, Stats: st, Unpacked: time.Now().UTC()}, "", "  ")
	if err := writeFileSync(filepath.Join(tmp, layerMeta), append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	if err := syncFS(tmp); err != nil {
		return "", err
	}
	final, _ := s.layerDir(diffID)
	switch err := os.Rename(tmp, final); {
	case err == nil:
		keep = true
	case errors.Is(err, syscall.EEXIST), errors.Is(err, syscall.ENOTEMPTY):
		// the same layer, unpacked by someone else meanwhile
	default:
		return "", err
	}
	return diffID, syncDir(base)
}

func digestOf(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// capReader fails once more than left bytes came through.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, fmt.Errorf("layer stream is over its cap (a decompression bomb?): %w", errdefs.ErrLimitExceeded)
	}
	return n, err
}

// lockDir flocks a directory; the lock lasts while the file is open.
func lockDir(dir string, how int) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ScratchDir makes a flocked scratch directory among the unpacks (an
// importer's copy of an archive's blobs): if its process dies, the next
// unpack or GC removes it. release unlocks and removes it.
func (s *Store) ScratchDir() (dir string, release func(), err error) {
	base := filepath.Join(s.Root, layersDir)
	if err := os.MkdirAll(base, 0o711); err != nil {
		return "", nil, err
	}
	dir, lock, err := s.newPartial(unpackPrefix + "scratch-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir); lock.Close() }, nil
}

// newPartial makes a flocked directory among the unpacks. It is made and
// locked under a shared lock of Root/.layers.lock, which the cleanup takes
// exclusively: the cleanup never sees one made but not yet locked.
func (s *Store) newPartial(prefix string) (string, *os.File, error) {
	base := filepath.Join(s.Root, layersDir)
	guard, err := lockFile(filepath.Join(s.Root, ".layers.lock"), syscall.LOCK_SH)
	if err != nil {
		return "", nil, err
	}
	defer guard.Close()
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return "", nil, err
	}
	lock, err := lockDir(dir, syscall.LOCK_EX)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, lock, nil
}

func lockFile(p string, how int) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removePartialLayers removes the unpacks nobody holds any more (their
// process died: a kill -9 in the middle of an unpack).
func (s *Store) removePartialLayers() int {
	base := filepath.Join(s.Root, layersDir)
	ents, err := os.ReadDir(base)
	if err != nil {
		return 0
	}
	guard, err := lockFile(filepath.Join(s.Root, ".layers.lock"), syscall.LOCK_EX)
	if err != nil {
		return 0
	}
	defer guard.Close()
	n := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), unpackPrefix) && !strings.HasPrefix(e.Name(), ".gc-") {
			continue
		}
		p := filepath.Join(base, e.Name())
		f, err := lockDir(p, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			continue // live
		}
		if os.RemoveAll(p) == nil {
			n++
		}
		f.Close()
	}
	return n
}

func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// imagesLock takes Root/images/.lock: shared by an import, exclusive for
// rm and gc (no layer goes while an import may be about to use it).
func (s *Store) imagesLock(how int) (*os.File, error) {
	d := filepath.Join(s.Root, imagesDir)
	if err := os.MkdirAll(d, 0o711); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(d, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// BeginImport holds off rm and gc until the returned func is called: an
// import calls it before it looks for layers it may share.
func (s *Store) BeginImport() (func(), error) {
	f, err := s.imagesLock(syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// PutImage records img (its hash computed here) once every layer it names
// is stored. A name already in use is a conflict: templates are immutable.
func (s *Store) PutImage(img *Image) error {
	if err := ValidName(img.Name); err != nil {
		return err
	}
	if _, ok := builtins[img.Name]; ok {
		return fmt.Errorf("template %q is built in: %w", img.Name, errdefs.ErrConflict)
	}
	for _, l := range append(slices.Clone(img.Layers), ImageLayer{DiffID: img.AirlockLayer}) {
		if !s.HasLayer(l.DiffID) {
			return fmt.Errorf("layer %s is not stored: %w", l.DiffID, errdefs.ErrNotFound)
		}
	}
	img.Format = imageFormat
	img.ComputeHash()
	if img.Created.IsZero() {
		img.Created = time.Now().UTC().Round(0)
	}
	data, err := json.MarshalIndent(img, "", "  ")
	if err != nil {
		return err
	}
	d := filepath.Join(s.Root, imagesDir)
	if err := os.MkdirAll(d, 0o711); err != nil {
		return err
	}
	tmp := filepath.Join(d, ".new-"+img.Name)
	os.Remove(tmp)
	if err := writeFileSync(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	defer os.Remove(tmp)
	// link(2) fails if the name exists: no import replaces a template.
	if err := os.Link(tmp, filepath.Join(d, img.Name+".json")); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("template %q exists (remove it first: templates are immutable): %w", img.Name, errdefs.ErrConflict)
		}
		return err
	}
	return syncDir(d)
}

// Image returns the imported template name.
func (s *Store) Image(name string) (*Image, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if s == nil || s.Root == "" {
		return nil, fmt.Errorf("template %q: %w", name, ErrNotFound)
	}
	data, err := os.ReadFile(filepath.Join(s.Root, imagesDir, name+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("template %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var img Image
	if err := json.Unmarshal(data, &img); err != nil {
		return nil, fmt.Errorf("template %q: %v: %w", name, err, ErrInvalid)
	}
	want := img.Hash
	img.ComputeHash()
	if img.Format != imageFormat || img.Name != name || img.Hash != want {
		return nil, fmt.Errorf("template %q: its record does not match its hash: %w", name, ErrInvalid)
	}
	return &img, nil
}

// Images lists the imported templates, sorted by name.
func (s *Store) Images() ([]*Image, error) {
	if s == nil || s.Root == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(filepath.Join(s.Root, imagesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Image
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || ValidName(name) != nil {
			continue
		}
		img, err := s.Image(name)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

// ImageTemplate is the Template of img, stored or not (a build's
// intermediate stack: every layer it names must be stored).
func (s *Store) ImageTemplate(img *Image) (*Template, error) { return s.imageTemplate(img) }

// imageTemplate is the Template of an imported image: the airlock layer
// as Dir, the image's layers below it (top first).
func (s *Store) imageTemplate(img *Image) (*Template, error) {
	dir, err := s.LayerRoot(img.AirlockLayer)
	if err != nil {
		return nil, err
	}
	t := &Template{Name: img.Name, Version: img.Version, Hash: img.Hash, Dir: dir, Created: img.Created,
		Kind: img.Kind, WorkDir: img.Config.WorkingDir, Env: imageEnv(img.Config.Env)}
	for i := len(img.Layers) - 1; i >= 0; i-- {
		d, err := s.LayerRoot(img.Layers[i].DiffID)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("template %q: layer %s: %w", img.Name, img.Layers[i].DiffID, err)
		}
		t.Lowers = append(t.Lowers, d)
	}
	return t, nil
}

// imagePath is an image's PATH when its config sets none (the one
// container engines give such an image).
const imagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// imageEnv is the image's Env with a PATH (the usual one when it has none).
func imageEnv(env []string) []string {
	out := slices.Clone(env)
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			return out
		}
	}
	return append(out, "PATH="+imagePath)
}

// RemoveImage removes the imported template name (its layers stay until
// GC). Sandboxes running from it keep running: their layers are held.
func (s *Store) RemoveImage(name string) error {
	if _, err := s.Image(name); err != nil {
		return err
	}
	lock, err := s.imagesLock(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := os.Remove(filepath.Join(s.Root, imagesDir, name+".json")); err != nil {
		return err
	}
	return syncDir(filepath.Join(s.Root, imagesDir))
}

// GCResult is what a GC did.
type GCResult struct {
	Removed []string `json:"removed"` // diffIDs
	Held    []string `json:"held"`    // unreferenced but in use by a sandbox: kept
	Partial int      `json:"partial"` // interrupted unpacks removed
	Bytes   int64    `json:"bytes"`   // of the removed layers' files
}

// GC removes the layers no imported template names and none of keep
// (layer root dirs something else starts from: snapshots), except those
// a running sandbox holds (Hold), and interrupted unpacks. It runs with
// imports held off (the images lock), so no import can pick up a layer
// while it goes.
func (s *Store) GC(keep ...string) (*GCResult, error) {
	lock, err := s.imagesLock(syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	imgs, err := s.Images()
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, img := range imgs {
		used[img.AirlockLayer] = true
		for _, l := range img.Layers {
			used[l.DiffID] = true
		}
	}
	for _, d := range keep {
		if filepath.Dir(filepath.Dir(d)) == filepath.Join(s.Root, layersDir) {
			used["sha256:"+filepath.Base(filepath.Dir(d))] = true
		}
	}
	res := &GCResult{Partial: s.removePartialLayers()}
	base := filepath.Join(s.Root, layersDir)
	ents, err := os.ReadDir(base)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		id := "sha256:" + e.Name()
		if _, err := hashHex(id); err != nil || used[id] {
			continue
		}
		p := filepath.Join(base, e.Name())
		f, err := lockDir(p, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			res.Held = append(res.Held, id)
			continue
		}
		size := treeBytes(p)
		// Out of the name first, under the lock: a Hold that comes later
		// finds no layer rather than half of one.
		gone := filepath.Join(base, ".gc-"+e.Name())
		err = os.Rename(p, gone)
		f.Close()
		if err != nil {
			return res, err
		}
		if err := os.RemoveAll(gone); err != nil {
			return res, err
		}
		res.Removed = append(res.Removed, id)
		res.Bytes += size
	}
	return res, nil
}

func treeBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Hold keeps t's layers from GC until the returned release is called
// (a shared flock on each layer directory: it dies with the process that
// holds it, so a crashed daemon holds nothing). A template with no layers
// of the store (a built-in one) needs no hold.
func (s *Store) Hold(t *Template) (release func(), err error) {
	release, err = s.HoldDirs(append([]string{t.Dir}, t.Lowers...))
	if err != nil {
		return nil, fmt.Errorf("template %q: %w", t.Name, err)
	}
	return release, nil
}

// HoldDirs is Hold for a sandbox's root dirs (a template's Dir and
// Lowers); those not of the store's layers are skipped.
func (s *Store) HoldDirs(dirs []string) (release func(), err error) {
	var held []*os.File
	release = func() {
		for _, f := range held {
			f.Close()
		}
	}
	for _, d := range dirs {
		if filepath.Dir(filepath.Dir(d)) != filepath.Join(s.Root, layersDir) {
			continue
		}
		f, err := lockDir(filepath.Dir(d), syscall.LOCK_SH)
		if err != nil {
			release()
			return nil, fmt.Errorf("hold layer: %w", err)
		}
		held = append(held, f)
	}
	return release, nil
}
