// Package oci imports container images as airlock templates (issue 21):
// from an OCI image layout directory, an OCI archive, a `docker save`
// archive or a registry reference (go-containerregistry). The image for
// linux/amd64 is chosen from an index; any other platform is refused.
// Every digest is checked on the way (index -> manifest -> config ->
// blobs -> diffIDs) before anything is put in place, and the manifest's
// digest is pinned in the template's record. Layers are unpacked once
// into the template store (template.Store.UnpackLayer, package layertar's
// checks) and shared by every image that has them; airlock's own needs go
// into a thin layer on top (template.Store.AirlockLayer).
package oci

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"
)

// maxConfigBytes bounds an image's config (read whole into memory; a
// real one is a few KiB).
const maxConfigBytes = 8 << 20

// Platform is the only one airlock's backends run.
var Platform = v1.Platform{OS: "linux", Architecture: "amd64"}

// Options tune an import. The zero value is usable.
type Options struct {
	Limits layertar.Limits // per layer
	// MaxLayers caps the layers of an image (default 64: the overlay
	// option string of a gVisor sandbox holds the layers' paths).
	MaxLayers int
	// Keychain authenticates to registries; nil: the docker-style
	// config file (authn.DefaultKeychain).
	Keychain authn.Keychain
	// RegistrySecret, when set, is the credential for the registry of
	// a registry reference (in place of Keychain); with any other
	// source the import is refused.
	RegistrySecret *RegistrySecret
	// Transport for registry requests; nil: the default.
	Transport http.RoundTripper
	// Progress, when set, hears of each step (one line each).
	Progress func(format string, args ...any)
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

// source is an opened image: the one image to import and how it was
// pinned.
type source struct {
	img         v1.Image
	digest      string // the manifest's (docker archive: the config's)
	indexDigest string
	docker      bool // layers read uncompressed (a docker archive)
	cleanup     func()
}

// Import imports source as the template name into s. With a registry
// secret, its value is scrubbed from the error and the progress lines.
func Import(ctx context.Context, s *template.Store, name, src string, opt Options) (*template.Image, error) {
	hidden := opt.RegistrySecret.hidden()
	if p := opt.Progress; p != nil && len(hidden) > 0 {
		opt.Progress = func(f string, a ...any) { p("%s", scrub(fmt.Sprintf(f, a...), hidden)) }
	}
	img, err := doImport(ctx, s, name, src, opt)
	return img, scrubError(err, hidden)
}

func doImport(ctx context.Context, s *template.Store, name, src string, opt Options) (*template.Image, error) {
	if err := template.ValidName(name); err != nil {
		return nil, err
	}
	if _, err := s.Image(name); err == nil {
		return nil, fmt.Errorf("template %q exists (remove it first: templates are immutable): %w", name, errdefs.ErrConflict)
	}
	release, err := s.BeginImport()
	if err != nil {
		return nil, err
	}
	defer release()
	so, err := open(ctx, s, src, &opt)
	if err != nil {
		return nil, err
	}
	defer so.cleanup()
	return importImage(ctx, s, name, src, so, &opt)
}

func importImage(ctx context.Context, s *template.Store, name, src string, so *source, opt *Options) (*template.Image, error) {
	cfg, err := checkConfig(so)
	if err != nil {
		return nil, err
	}
	layers, err := so.img.Layers()
	if err != nil {
		return nil, fmt.Errorf("image layers: %w", err)
	}
	if len(layers) != len(cfg.RootFS.DiffIDs) {
		return nil, fmt.Errorf("image has %d layers but its config %d diffIDs: %w", len(layers), len(cfg.RootFS.DiffIDs), errdefs.ErrInvalid)
	}
	maxLayers := opt.MaxLayers
	if maxLayers <= 0 {
		maxLayers = 64
	}
	if len(layers) > maxLayers {
		return nil, fmt.Errorf("image has %d layers, more than %d: %w", len(layers), maxLayers, errdefs.ErrLimitExceeded)
	}
	img := &template.Image{Name: name, Kind: "image", Source: src, Digest: so.digest, IndexDigest: so.indexDigest,
		Platform: Platform.OS + "/" + Platform.Architecture,
		Config: template.ImageConfig{Env: cfg.Config.Env, WorkingDir: cfg.Config.WorkingDir, User: cfg.Config.User,
			Labels: cfg.Config.Labels, Entrypoint: cfg.Config.Entrypoint, Cmd: cfg.Config.Cmd}}
	var diffIDs []string
	for i, l := range layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		il, err := importLayer(s, l, cfg.RootFS.DiffIDs[i].String(), so.docker, opt, i+1, len(layers))
		if err != nil {
			return nil, fmt.Errorf("layer %d of %d: %w", i+1, len(layers), err)
		}
		img.Layers = append(img.Layers, *il)
		diffIDs = append(diffIDs, il.DiffID)
	}
	if img.AirlockLayer, err = s.AirlockLayer(diffIDs); err != nil {
		return nil, fmt.Errorf("airlock layer: %w", err)
	}
	if err := s.PutImage(img); err != nil {
		return nil, err
	}
	opt.progress("template %s@%s: %s (%d layers)", name, img.Version, img.Digest, len(img.Layers))
	return img, nil
}

// checkConfig reads the image's config, checks it against its digest
// and the platform.
func checkConfig(so *source) (*v1.ConfigFile, error) {
	if !so.docker {
		// read whole into memory: the manifest's size for it is checked first
		m, err := so.img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("image manifest: %v: %w", err, errdefs.ErrInvalid)
		}
		if m.Config.Size > maxConfigBytes || m.Config.Size < 0 {
			return nil, fmt.Errorf("image config of %d bytes, more than %d: %w", m.Config.Size, maxConfigBytes, errdefs.ErrLimitExceeded)
		}
	}
	raw, err := so.img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	sum := sha256.Sum256(raw)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if !so.docker {
		m, err := so.img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("image manifest: %w", err)
		}
		if m.Config.Digest.String() != got {
			return nil, fmt.Errorf("image config is %s, not the manifest's %s: %w", got, m.Config.Digest, errdefs.ErrInvalid)
		}
	} else {
		so.digest = got
	}
	cfg, err := v1.ParseConfigFile(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("image config: %v: %w", err, errdefs.ErrInvalid)
	}
	if cfg.OS != Platform.OS || cfg.Architecture != Platform.Architecture {
		return nil, fmt.Errorf("image is for %s/%s; airlock runs %s/%s only: %w", cfg.OS, cfg.Architecture, Platform.OS, Platform.Architecture, errdefs.ErrUnsupported)
	}
	return cfg, nil
}

// importLayer stores one layer unless the store has it: the blob read
// through its digest (it must match before the layer is put in place),
// decompressed, its diffID checked by the store.
func importLayer(s *template.Store, l v1.Layer, diffID string, docker bool, opt *Options, n, of int) (*template.ImageLayer, error) {
	mt, err := l.MediaType()
	if err != nil {
		return nil, err
	}
	il := &template.ImageLayer{DiffID: diffID, MediaType: string(mt)}
	if !docker {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		il.Digest = d.String()
		if il.Size, err = l.Size(); err != nil {
			return nil, err
		}
	}
	if s.HasLayer(diffID) {
		opt.progress("layer %d/%d %s: shared, already stored", n, of, short(diffID))
		return il, nil
	}
	opt.progress("layer %d/%d %s: pulling and unpacking %d bytes (%s)", n, of, short(diffID), il.Size, mt)
	t0 := time.Now()
	var r io.Reader
	var verify func() error
	if docker {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		r = rc
	} else {
		rc, err := l.Compressed()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		h := sha256.New()
		blob := &capped{r: io.TeeReader(rc, h), left: opt.Limits.StreamCap()}
		if r, err = decompress(mt, blob); err != nil {
			return nil, err
		}
		verify = func() error {
			if _, err := io.Copy(io.Discard, blob); err != nil {
				return err
			}
			if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != il.Digest {
				return fmt.Errorf("blob is %s, not its digest %s: %w", got, il.Digest, errdefs.ErrInvalid)
			}
			return nil
		}
	}
	if _, err := s.UnpackLayer(diffID, r, opt.Limits, verify); err != nil {
		return nil, err
	}
	opt.progress("layer %d/%d %s: unpacked in %s", n, of, short(diffID), time.Since(t0).Round(time.Millisecond))
	return il, nil
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// decompress opens a layer blob by its media type.
func decompress(mt types.MediaType, r io.Reader) (io.Reader, error) {
	switch mt {
	case types.OCILayer, types.DockerLayer, types.OCIRestrictedLayer, types.DockerForeignLayer:
		return gzip.NewReader(r)
	case types.OCIUncompressedLayer, types.OCIUncompressedRestrictedLayer, types.DockerUncompressedLayer:
		return r, nil
	case types.OCILayerZStd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	default:
		return nil, fmt.Errorf("layer media type %q: %w", mt, errdefs.ErrUnsupported)
	}
}

type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, fmt.Errorf("layer blob is over its cap: %w", errdefs.ErrLimitExceeded)
	}
	return n, err
}

// digestOf is the sha256 digest of b.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func exists(p string) (os.FileInfo, bool) {
	fi, err := os.Stat(p)
	return fi, err == nil
}
