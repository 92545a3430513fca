package oci

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// open finds what src names: a layout directory, an archive file (OCI
// or docker), else a registry reference.
func open(ctx context.Context, s *template.Store, src string, opt *Options) (*source, error) {
	_, local := exists(src)
	if opt.RegistrySecret != nil && (local || strings.HasPrefix(src, "/") || strings.HasPrefix(src, ".")) {
		return nil, fmt.Errorf("a registry secret is for a registry reference, and %s is a local path: %w", src, errdefs.ErrInvalid)
	}
	if fi, ok := exists(src); ok {
		if fi.IsDir() {
			return openLayout(src)
		}
		return openArchive(s, src, opt)
	}
	if strings.HasPrefix(src, "/") || strings.HasPrefix(src, ".") {
		return nil, fmt.Errorf("image source %s: %w", src, errdefs.ErrNotFound)
	}
	return openRemote(ctx, src, opt)
}

func noCleanup() {}

func openLayout(dir string) (*source, error) {
	if _, ok := exists(filepath.Join(dir, "oci-layout")); !ok {
		return nil, fmt.Errorf("%s is no OCI image layout (no oci-layout file): %w", dir, errdefs.ErrInvalid)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %v: %w", dir, err, errdefs.ErrInvalid)
	}
	so, err := fromIndex(idx, 0)
	if err != nil {
		return nil, err
	}
	so.indexDigest = "" // a layout's index.json is the directory's, not the image's
	so.cleanup = noCleanup
	return so, nil
}

// fromIndex picks the linux/amd64 image of an index (one level of
// nesting at most, as a layout's index.json over an image index), its
// manifest checked against the index's descriptor.
func fromIndex(idx v1.ImageIndex, depth int) (*source, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image index: %v: %w", err, errdefs.ErrInvalid)
	}
	var seen []string
	var pick *v1.Descriptor
	for i := range im.Manifests {
		d := &im.Manifests[i]
		switch {
		case d.MediaType.IsIndex():
			if depth > 0 {
				return nil, fmt.Errorf("image index nested too deep: %w", errdefs.ErrInvalid)
			}
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("nested index %s: %v: %w", d.Digest, err, errdefs.ErrInvalid)
			}
			if err := checkRaw(child.RawManifest, d.Digest.String()); err != nil {
				return nil, err
			}
			so, err := fromIndex(child, depth+1)
			if err == nil {
				so.indexDigest = d.Digest.String()
			}
			return so, err
		case d.Platform == nil && len(im.Manifests) == 1:
			pick = d // a lone image with no platform: its config says (checkConfig)
		case d.Platform != nil:
			seen = append(seen, d.Platform.OS+"/"+d.Platform.Architecture)
			if d.Platform.OS == Platform.OS && d.Platform.Architecture == Platform.Architecture && pick == nil {
				pick = d
			}
		}
	}
	if pick == nil {
		return nil, fmt.Errorf("no %s/%s image in the index (it has: %s): %w", Platform.OS, Platform.Architecture, strings.Join(seen, ", "), errdefs.ErrUnsupported)
	}
	img, err := idx.Image(pick.Digest)
	if err != nil {
		return nil, fmt.Errorf("image %s: %v: %w", pick.Digest, err, errdefs.ErrInvalid)
	}
	if err := checkRaw(img.RawManifest, pick.Digest.String()); err != nil {
		return nil, err
	}
	return &source{img: img, digest: pick.Digest.String()}, nil
}

// checkRaw: the manifest's bytes hash to the digest that named them.
func checkRaw(raw func() ([]byte, error), want string) error {
	b, err := raw()
	if err != nil {
		return fmt.Errorf("manifest %s: %v: %w", want, err, errdefs.ErrInvalid)
	}
	if got := digestOf(b); got != want {
		return fmt.Errorf("manifest is %s, not its digest %s: %w", got, want, errdefs.ErrInvalid)
	}
	return nil
}

// openArchive opens an OCI archive (a tar of a layout) or a docker save
// archive, told apart by their marker files.
func openArchive(s *template.Store, file string, opt *Options) (*source, error) {
	kind, err := archiveKind(file)
	if err != nil {
		return nil, err
	}
	if kind == "docker" {
		img, err := tarball.ImageFromPath(file, nil)
		if err != nil {
			return nil, fmt.Errorf("docker archive %s: %v: %w", file, err, errdefs.ErrInvalid)
		}
		if err := checkDockerConfigName(file, img); err != nil {
			return nil, err
		}
		return &source{img: img, docker: true, cleanup: noCleanup}, nil
	}
	// flocked among the unpacks: a killed import's copy goes at the next
	dir, cleanup, err := s.ScratchDir()
	if err != nil {
		return nil, err
	}
	if err := extractLayout(file, dir, opt.Limits.StreamCap()*int64(max(opt.MaxLayers, 64))); err != nil {
		cleanup()
		return nil, err
	}
	so, err := openLayout(dir)
	if err != nil {
		cleanup()
		return nil, err
	}
	so.cleanup = cleanup
	return so, nil
}

func archiveKind(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", fmt.Errorf("%s is neither an OCI archive (oci-layout) nor a docker archive (manifest.json): %w", file, errdefs.ErrInvalid)
		}
		if err != nil {
			return "", fmt.Errorf("archive %s: %v: %w", file, err, errdefs.ErrInvalid)
		}
		switch path.Clean(h.Name) {
		case "oci-layout":
			return "oci", nil
		case "manifest.json":
			return "docker", nil
		}
	}
}

// checkDockerConfigName: a docker archive names its config by its
// sha256; the bytes must match that name.
func checkDockerConfigName(file string, img v1.Image) error {
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(file) })
	if err != nil || len(m) != 1 {
		return fmt.Errorf("docker archive %s: one image expected: %w", file, errdefs.ErrInvalid)
	}
	raw, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	hx := strings.TrimPrefix(digestOf(raw), "sha256:")
	if !strings.Contains(m[0].Config, hx) {
		return fmt.Errorf("docker archive config %s does not hash to its name (%s): %w", m[0].Config, hx, errdefs.ErrInvalid)
	}
	return nil
}

// extractLayout unpacks an OCI archive's layout files into dir: only
// oci-layout, index.json and blobs/sha256/<hex> regular files; anything
// else is refused.
func extractLayout(file, dir string, maxBytes int64) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o700); err != nil {
		return err
	}
	tr := tar.NewReader(f)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("OCI archive: %v: %w", err, errdefs.ErrInvalid)
		}
		n := strings.TrimPrefix(path.Clean(h.Name), "./")
		if h.Typeflag == tar.TypeDir && (n == "." || n == "blobs" || n == "blobs/sha256") {
			continue
		}
		ok := n == "oci-layout" || n == "index.json"
		if hx, found := strings.CutPrefix(n, "blobs/sha256/"); found && len(hx) == 64 && strings.Trim(hx, "0123456789abcdef") == "" {
			ok = true
		}
		if !ok || h.Typeflag != tar.TypeReg {
			return fmt.Errorf("OCI archive entry %q is not part of an image layout: %w", h.Name, errdefs.ErrInvalid)
		}
		if total += h.Size; total > maxBytes {
			return fmt.Errorf("OCI archive is over %d bytes: %w", maxBytes, errdefs.ErrLimitExceeded)
		}
		if err := writeNew(filepath.Join(dir, filepath.FromSlash(n)), tr); err != nil {
			return err
		}
	}
}

func writeNew(p string, r io.Reader) error {
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("OCI archive: %v: %w", err, errdefs.ErrInvalid)
	}
	_, err = io.Copy(w, r)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// openRemote resolves a registry reference (tag or digest), picking the
// linux/amd64 image of an index.
func openRemote(ctx context.Context, ref string, opt *Options) (*source, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %v: %w", ref, err, errdefs.ErrInvalid)
	}
	kc := opt.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	if opt.RegistrySecret != nil {
		if kc, err = opt.RegistrySecret.keychain(r.Context().RegistryStr()); err != nil {
			return nil, err
		}
	}
	ro := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithPlatform(Platform)}
	if opt.Transport != nil {
		ro = append(ro, remote.WithTransport(opt.Transport))
	}
	opt.progress("resolving %s", r.Name())
	desc, err := remote.Get(r, ro...)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", r.Context().RegistryStr(), remoteErr(err))
	}
	if got := digestOf(desc.Manifest); got != desc.Digest.String() {
		return nil, fmt.Errorf("manifest is %s, not the registry's %s: %w", got, desc.Digest, errdefs.ErrInvalid)
	}
	if d, ok := r.(name.Digest); ok && d.DigestStr() != desc.Digest.String() {
		return nil, fmt.Errorf("manifest is %s, not the pinned %s: %w", desc.Digest, d.DigestStr(), errdefs.ErrInvalid)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		so, err := fromIndex(idx, 0)
		if err != nil {
			return nil, err
		}
		if so.indexDigest == "" {
			so.indexDigest = desc.Digest.String()
		}
		so.cleanup = noCleanup
		return so, nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("image %s: %v: %w", ref, err, errdefs.ErrInvalid)
	}
	return &source{img: img, digest: desc.Digest.String(), cleanup: noCleanup}, nil
}

func remoteErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var te interface{ Temporary() bool }
	if errors.As(err, &te) {
		return err
	}
	return fmt.Errorf("%v: %w", err, errdefs.ErrInvalid)
}
