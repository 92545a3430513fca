package main

import (
	"archive/tar"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/template/hostileimage"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// `airlock template import --registry-secret`: the daemon takes the
// credential from its secret store for a registry on loopback that wants
// basic auth (and echoes a wrong credential back, as a hostile one may).
// The import works; a missing secret, a wrong one, a local source and
// the in-process flags are refused clearly; the password is in no
// output, no daemon log line, no file of the state or data directory
// (the template's record, the audit log), in plain or in base64.
func TestTemplateImportRegistrySecret(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(t)
	const user, pass = "robot", "reg-pass-7c1d0e5a93b2"
	reg := basicAuthRegistry(t, user, pass)
	ref := reg + "/team/app:v1"
	l, err := hostileimage.Layer(hostileimage.Ent{Name: "etc/", Type: tar.TypeDir, Mode: 0o755}, hostileimage.Ent{Name: "etc/os-release", Body: []byte("ID=private\n")})
	if err != nil {
		t.Fatal(err)
	}
	img, err := hostileimage.Image(v1.Config{Env: []string{"A=1"}}, l)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(ref)
	if err := remote.Write(tag, img, remote.WithAuth(&authn.Basic{Username: user, Password: pass})); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	run := func(stdin string, args ...string) (string, string, int) {
		out, errOut, code := e.run(stdin, args...)
		seen.WriteString(out + errOut)
		return out, errOut, code
	}
	mustSet := func(n, v string) {
		if _, errOut, code := run(v+"\n", "secret", "set", "--socket", d.sock, n); code != 0 {
			t.Fatalf("secret set %s: %d %q", n, code, errOut)
		}
	}
	mustSet("REG_CRED", user+":"+pass)
	mustSet("REG_WRONG", user+":wrong-"+pass)

	out, errOut, code := run("", "template", "import", "--socket", d.sock, "--registry-secret", "REG_CRED", "private", ref)
	if code != 0 || !strings.HasPrefix(out, "private@") || !strings.Contains(errOut, "layer 1/1") {
		t.Fatalf("import with the secret: %d %q %q\ndaemon: %s", code, out, errOut, d.log)
	}
	if out, _, _ := run("", "template", "inspect", "private"); !strings.Contains(out, `"source": "`+ref+`"`) {
		t.Errorf("inspect: %s", out)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--registry-secret", "NO_SUCH", "x1", ref}, 1, "no such secret"},
		{[]string{"--registry-secret", "REG_WRONG", "x2", ref}, 1, "bad credential: Basic [secret]"}, // the registry's echo, scrubbed
		{[]string{"--registry-secret", "REG_CRED", "x3", t.TempDir()}, 1, "registry reference"},
		{[]string{"--registry-secret", "REG_CRED", "--data-dir", t.TempDir(), "x4", ref}, 2, "unsupported with --registry-secret"},
		{[]string{"--registry-secret", "REG_CRED", "--max-layer-bytes", "1M", "x5", ref}, 2, "unsupported with --registry-secret"},
	} {
		_, errOut, code := run("", append([]string{"template", "import", "--socket", d.sock}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q, want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
	if out, _, _ := run("", "template", "ls"); strings.Contains(out, "x2") || !strings.Contains(out, "private") {
		t.Errorf("ls: %q", out)
	}
	hidden := []string{pass, base64.StdEncoding.EncodeToString([]byte(user + ":" + pass)), base64.StdEncoding.EncodeToString([]byte(user + ":wrong-" + pass))}
	assertNowhere(t, hidden, map[string]string{"the CLI's output": seen.String(), "the daemon's log": d.log.String()}, e.data, e.state)
	// the audit log says the secret was used, by name
	var ev struct {
		Events []struct {
			Kind    string         `json:"kind"`
			Payload map[string]any `json:"payload"`
		} `json:"events"`
	}
	d.getJSON(t, "/v1/audit?kind=secret.use", &ev)
	used := 0
	for _, x := range ev.Events {
		if x.Kind == "secret.use" && x.Payload["purpose"] == "template.import" {
			used++
		}
	}
	if used < 2 {
		t.Errorf("secret.use events: %+v", ev.Events)
	}
}

// basicAuthRegistry serves go-containerregistry's registry on loopback
// behind basic auth; a wrong credential is answered with the
// Authorization header it came with.
func basicAuthRegistry(t *testing.T, user, pass string) string {
	t.Helper()
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"errors":[{"code":"UNAUTHORIZED","message":%q}]}`, "bad credential: "+got)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// assertNowhere fails for each hidden string found in a text or in a
// file below one of dirs.
func assertNowhere(t *testing.T, hidden []string, texts map[string]string, dirs ...string) {
	t.Helper()
	for what, text := range texts {
		for _, h := range hidden {
			if strings.Contains(text, h) {
				t.Errorf("LEAK: %s holds %q", what, h)
			}
		}
	}
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
			if err != nil || !de.Type().IsRegular() {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, h := range hidden {
				if strings.Contains(string(b), h) {
					t.Errorf("LEAK: %s holds %q", p, h)
				}
			}
			return nil
		})
	}
}
