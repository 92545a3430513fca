package sandboxnet

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Each sandbox gets a read-only bind of the host's roots plus its own
// egress CA over its system bundle, and the variables that point Node and
// Python at it; the file goes with the sandbox, and one a daemon before
// left is cleared.
func TestTrustBundleFollowsTheSandbox(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	hostBundle = filepath.Join(dir, "host.crt")
	t.Cleanup(func() { hostBundle = "/etc/ssl/certs/ca-certificates.crt" })
	roots := []byte("-----BEGIN CERTIFICATE-----\nhost root\n-----END CERTIFICATE-----")
	if err := os.WriteFile(hostBundle, roots, 0o644); err != nil {
		t.Fatal(err)
	}
	trust := filepath.Join(dir, "trust")
	if err := os.MkdirAll(trust, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(trust, "gone.pem")
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e := onFake(t, Config{Egress: &egress.Config{}, TrustDir: trust}, allowPlain)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a bundle left by an earlier daemon: %v", err)
	}
	sb, err := e.m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	spec := e.be.specs[sb.ID]
	file := filepath.Join(trust, sb.ID+".pem")
	if !slices.Contains(spec.Binds, runtime.Bind{Source: file, Target: "/etc/ssl/certs/ca-certificates.crt"}) {
		t.Fatalf("binds %+v", spec.Binds)
	}
	for _, kv := range []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt", "REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt"} {
		if !slices.Contains(spec.Env, kv) {
			t.Errorf("env lacks %s: %q", kv, spec.Env)
		}
	}
	// A snapshot takes the sandbox's base, which must not keep this
	// sandbox's bundle (its file goes with the sandbox).
	if li, ok := e.n.core.Live(sb.ID); !ok || slices.ContainsFunc(li.Base.Binds, func(b runtime.Bind) bool { return b.Source == file }) {
		t.Errorf("the sandbox's base holds its trust bind: %+v", li)
	}
	got, _ := os.ReadFile(file)
	ca, _ := e.n.EgressCA(sb.ID)
	if want := append(append(slices.Clone(roots), '\n'), ca...); !bytes.Equal(got, want) || len(ca) == 0 {
		t.Errorf("bundle:\n%s\nwant the host's roots, then:\n%s", got, ca)
	}
	if err := e.m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the bundle outlived its sandbox: %v", err)
	}
}

// A create that fails after the network was made leaves no bundle, and
// no CA in the egress service.
func TestFailedCreateLeavesNoBundle(t *testing.T) {
	dir := t.TempDir()
	hostBundle = filepath.Join(dir, "host.crt")
	t.Cleanup(func() { hostBundle = "/etc/ssl/certs/ca-certificates.crt" })
	if err := os.WriteFile(hostBundle, []byte("roots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trust := filepath.Join(dir, "trust")
	e := onFake(t, Config{Egress: &egress.Config{}, TrustDir: trust}, allowPlain)
	// The fake refuses a memory limit: the backend's create fails.
	if _, err := e.m.Create(context.Background(), sandbox.CreateRequest{Limits: runtime.Limits{MemoryBytes: 1 << 30}}); err == nil {
		t.Fatal("the fake took a memory limit")
	}
	if ents, _ := os.ReadDir(trust); len(ents) != 0 {
		t.Errorf("left in the trust dir: %v", ents)
	}
}
