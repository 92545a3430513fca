package oci

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	regUser = "robot"
	regPass = "s3cr3t-registry-pass-0f9a"
)

// authRegistry serves go-containerregistry's registry on loopback
// behind basic auth (regUser, regPass). echo: a hostile registry that
// answers a wrong credential with the Authorization header it got.
func authRegistry(t *testing.T, echo bool) string {
	t.Helper()
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(regUser+":"+regPass))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			msg := "authentication required"
			if echo {
				msg = "bad credential: " + got
			}
			fmt.Fprintf(w, `{"errors":[{"code":"UNAUTHORIZED","message":%q}]}`, msg)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func pushAuthed(t *testing.T, ref string) {
	t.Helper()
	tag, _ := name.NewTag(ref)
	img := imageOf(t, "amd64", layerOf(t, baseFiles...))
	if err := remote.Write(tag, img, remote.WithAuth(&authn.Basic{Username: regUser, Password: regPass})); err != nil {
		t.Fatal(err)
	}
}

// A registry that wants a credential: the secret's imports (both
// spellings of the value), none or a wrong one is refused; the value
// is in no error, progress line or template record.
func TestImportRegistrySecret(t *testing.T) {
	s := openStore(t)
	reg := authRegistry(t, true)
	ref := reg + "/team/private:v1"
	pushAuthed(t, ref)
	var lines []string
	progress := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	assertHidden := func(what, text string) {
		t.Helper()
		for _, h := range []string{regPass, base64.StdEncoding.EncodeToString([]byte(regUser + ":" + regPass))} {
			if strings.Contains(text, h) {
				t.Errorf("LEAK: %s holds the secret: %q", what, text)
			}
		}
	}
	_, err := Import(context.Background(), s, "anon", ref, Options{Keychain: authn.NewMultiKeychain(), Progress: progress})
	if err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Errorf("no credential: %v", err)
	}
	wrong := &RegistrySecret{Name: "REG_WRONG", Value: []byte(regUser + ":wrong-password-" + regPass)}
	_, err = Import(context.Background(), s, "wrong", ref, Options{RegistrySecret: wrong, Progress: progress})
	if err == nil {
		t.Fatal("a wrong credential imported")
	}
	// the registry echoed the header it got: scrubbed
	assertHidden("the error", err.Error())
	if strings.Contains(err.Error(), "wrong-password") || !strings.Contains(err.Error(), "[secret]") {
		t.Errorf("LEAK: the wrong credential is not scrubbed: %v", err)
	}
	for i, v := range []string{regUser + ":" + regPass, `{"username":"` + regUser + `","password":"` + regPass + `"}`} {
		n := fmt.Sprintf("private-%d", i)
		img, err := Import(context.Background(), s, n, ref, Options{RegistrySecret: &RegistrySecret{Name: "REG", Value: []byte(v)}, Progress: progress})
		if err != nil {
			t.Fatalf("import with the secret (%d): %v", i, err)
		}
		if img.Source != ref {
			t.Errorf("source %q", img.Source)
		}
		rec, err := os.ReadFile(filepath.Join(s.Root, "images", n+".json"))
		if err != nil {
			t.Fatal(err)
		}
		assertHidden("the template record", string(rec))
		if strings.Contains(string(rec), regUser) {
			t.Errorf("the record names the registry user: %s", rec)
		}
	}
	assertHidden("the progress", strings.Join(lines, "\n"))
}

// The credential goes to the reference's registry only: a layer
// directory, an archive or a path is refused with a secret, and a
// malformed value is refused without being quoted.
func TestImportRegistrySecretRefused(t *testing.T) {
	s := openStore(t)
	lay := filepath.Join(t.TempDir(), "layout")
	writeLayout(t, lay, imageOf(t, "amd64", layerOf(t, baseFiles...)))
	sec := &RegistrySecret{Name: "REG", Value: []byte(regUser + ":" + regPass)}
	for _, src := range []string{lay, "/no/such/dir", "./rel"} {
		if _, err := Import(context.Background(), s, "local", src, Options{RegistrySecret: sec}); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "registry reference") {
			t.Errorf("%s: %v", src, err)
		}
	}
	reg := authRegistry(t, false)
	for _, v := range []string{"no-colon-" + regPass, ":" + regPass, "{not json " + regPass, "{}"} {
		_, err := Import(context.Background(), s, "bad", reg+"/a/b:1", Options{RegistrySecret: &RegistrySecret{Name: "REG", Value: []byte(v)}})
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "registry secret REG") {
			t.Errorf("value %d: %v", len(v), err)
		}
		if err != nil && strings.Contains(err.Error(), regPass) {
			t.Errorf("LEAK: %v", err)
		}
	}
	// another registry than the reference's gets nothing
	kc, err := sec.keychain("registry.invalid:5000")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := name.NewRepository(reg + "/a")
	if a, _ := kc.Resolve(other.Registry); a != authn.Anonymous {
		t.Errorf("the credential is offered to %s", other.Registry)
	}
	assertEmpty(t, s)
}
