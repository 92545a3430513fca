package oci

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template/hostileimage"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Each hostile image of hostileimage.Refused, pushed to a registry on
// loopback and imported from it: refused with a clear error, nothing
// written outside the store, no template, no layer left.
func TestAttackRefusedImages(t *testing.T) {
	bait, err := hostileimage.NewBait(t.TempDir(), "HOST-BAIT-refused")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := hostileimage.Refused(bait)
	if err != nil {
		t.Fatal(err)
	}
	reg := serveRegistry(t)
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			s := openStore(t)
			tag, _ := name.NewTag(reg + "/evil/refused:" + string(rune('a'+i)))
			if err := remote.Write(tag, c.Image); err != nil {
				t.Fatal(err)
			}
			opt := Options{Limits: layertar.Limits{MaxBytes: hostileimage.RefusedMaxBytes}}
			_, err := Import(context.Background(), s, "evil", tag.String(), opt)
			if err == nil || !strings.Contains(err.Error(), c.Want) {
				t.Fatalf("ESCAPE? import: %v, want an error with %q", err, c.Want)
			}
			if !errors.Is(err, errdefs.ErrInvalid) && !errors.Is(err, errdefs.ErrLimitExceeded) {
				t.Errorf("error kind: %v", err)
			}
			if err := bait.Intact(); err != nil {
				t.Errorf("ESCAPE: %v", err)
			}
			assertEmpty(t, s)
		})
	}
}

// The accepted hostile image imports, and what it stored holds no
// setuid bit, no file capability or overlay redirect, no device; the
// sparse file is bounded by the layer cap; the airlock layer's files are
// the image's and airlock's, never the bait's the image's links name.
func TestAttackAcceptedImageStoredInert(t *testing.T) {
	s := openStore(t)
	bait, err := hostileimage.NewBait(t.TempDir(), "HOST-BAIT-accepted")
	if err != nil {
		t.Fatal(err)
	}
	img, err := hostileimage.Accepted([]byte("#!/bin/probe\n"), bait, false)
	if err != nil {
		t.Fatal(err)
	}
	lay := filepath.Join(t.TempDir(), "layout")
	if err := hostileimage.WriteLayout(lay, img); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(context.Background(), s, "sparse-capped", lay, Options{Limits: layertar.Limits{MaxBytes: 4 << 20}}); !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Errorf("the 8 MiB sparse file under a 4 MiB cap: %v", err)
	}
	got, err := Import(context.Background(), s, "hostile", lay, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Config.User != "0:0" {
		t.Errorf("user recorded as %q", got.Config.User)
	}
	tp, err := s.Get("hostile")
	if err != nil {
		t.Fatal(err)
	}
	roots := append([]string{tp.Dir}, tp.Lowers...)
	if err := hostileimage.CheckLayers(roots); err != nil {
		t.Errorf("kept: %v", err)
	}
	fi, err := os.Stat(filepath.Join(tp.Lowers[1], "sparse"))
	if err != nil || fi.Size() != 8<<20 {
		t.Errorf("sparse file: %v %v", fi, err)
	}
	for _, f := range []string{"etc/passwd", "etc/group", "etc/ssl/certs/ca-certificates.crt"} {
		if b, _ := os.ReadFile(filepath.Join(tp.Dir, f)); bytes.Contains(b, []byte(bait.Marker)) {
			t.Errorf("ESCAPE: the airlock layer's %s holds the host bait", f)
		}
	}
	if err := bait.Intact(); err != nil {
		t.Errorf("ESCAPE: %v", err)
	}
	// the check itself sees what it looks for
	suid := filepath.Join(t.TempDir(), "suid")
	if err := os.WriteFile(suid, nil, 0o755); err != nil || os.Chmod(suid, 0o755|os.ModeSetuid) != nil {
		t.Fatal(err)
	}
	if err := hostileimage.CheckLayers([]string{filepath.Dir(suid)}); err == nil {
		t.Error("CheckLayers saw no setuid file")
	}
}

// A registry that serves a layer blob whose bytes are not its digest
// (the manifest and config are right): the import fails before the
// layer is put in place, nothing left.
func TestAttackRegistryBlobMismatch(t *testing.T) {
	s := openStore(t)
	img := imageOf(t, "amd64", layerOf(t, file{"a.txt", "the real content"}))
	m, _ := img.Manifest()
	blob := m.Layers[0].Digest.String()
	// the same tar, only the gzip header's mtime changed: the diffID
	// holds, the blob's digest does not
	rc, _ := img.LayerByDigest(m.Layers[0].Digest)
	r, _ := rc.Compressed()
	evil, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	evil[4] ^= 0xff
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+blob) {
			w.Header().Set("Docker-Content-Digest", blob)
			w.Write(evil)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tag, _ := name.NewTag(strings.TrimPrefix(srv.URL, "http://") + "/evil/mismatch:1")
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	_, err = Import(context.Background(), s, "mismatch", tag.String(), Options{})
	// go-containerregistry's reader or ours (importLayer's verify) tells
	if err == nil || !strings.Contains(err.Error(), "sha256 checksum") && !strings.Contains(err.Error(), "not its digest") {
		t.Fatalf("import: %v, want a digest mismatch", err)
	}
	assertEmpty(t, s)
}

// bigConfig is an image whose manifest declares a config of a terabyte:
// RawConfigFile must never be called (it would read that much).
type bigConfig struct {
	v1.Image
	read bool
}

func (b *bigConfig) Manifest() (*v1.Manifest, error) {
	m, err := b.Image.Manifest()
	if err != nil {
		return nil, err
	}
	m = m.DeepCopy()
	m.Config.Size = 1 << 40
	return m, nil
}

func (b *bigConfig) RawConfigFile() ([]byte, error) {
	b.read = true
	return b.Image.RawConfigFile()
}

// A manifest that declares a huge config is refused before the config is
// read into memory.
func TestAttackHugeConfigRefused(t *testing.T) {
	b := &bigConfig{Image: imageOf(t, "amd64", layerOf(t, baseFiles...))}
	_, err := checkConfig(&source{img: b})
	if !errors.Is(err, errdefs.ErrLimitExceeded) || b.read {
		t.Errorf("huge config: %v (read: %v)", err, b.read)
	}
}
