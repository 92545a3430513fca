package build

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"github.com/airlock-dev/airlock/internal/testroot"
)

func TestMain(m *testing.M) {
	native.MaybeInit()
	os.Exit(m.Run())
}

// baseRoot is a tiny real root: the host's dash as /bin/sh, cat, the C
// library they need, and a static dialer (bin/dial HOST:PORT) built here.
func baseRoot(t *testing.T) []byte {
	t.Helper()
	dial := filepath.Join(t.TempDir(), "dial")
	src := filepath.Join(t.TempDir(), "dial.go")
	prog := "package main\nimport (\"net\"; \"os\")\nfunc main() { c, err := net.Dial(\"tcp\", os.Args[1]); if err != nil { println(err.Error()); os.Exit(3) }; c.Close() }\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", dial, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build dial: %v\n%s", err, out)
	}
	files := map[string]string{"bin/sh": "/bin/sh", "bin/cat": "/bin/cat", "bin/dial": dial,
		"lib/x86_64-linux-gnu/libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6", "lib64/ld-linux-x86-64.so.2": "/lib64/ld-linux-x86-64.so.2"}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, d := range []string{"bin", "lib", "lib/x86_64-linux-gnu", "lib64", "etc"} {
		tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	for name, host := range files {
		real, err := filepath.EvalSymlinks(host)
		if err != nil {
			testroot.Unavailable(t, "a host file for the test root: "+err.Error())
		}
		data, err := os.ReadFile(real)
		if err != nil {
			t.Fatal(err)
		}
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))})
		tw.Write(data)
	}
	tw.Close()
	return b.Bytes()
}

type fixture struct {
	s  *template.Store
	be *native.Backend
	b  *Builder
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	testroot.Need(t, "to unpack layers as host root and run sandboxes")
	dir := t.TempDir()
	os.Chmod(dir, 0o711)
	os.Chmod(filepath.Dir(dir), 0o711) // t.TempDir's parent: sandbox uids traverse it
	s, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.UnpackLayer("", bytes.NewReader(baseRoot(t)), layertar.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	img := &template.Image{Name: "base", Kind: "image", Source: "test", Digest: "sha256:" + strings.Repeat("b", 64), Platform: "linux/amd64",
		Layers: []template.ImageLayer{{DiffID: id}}}
	if img.AirlockLayer, err = s.AirlockLayer([]string{id}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutImage(img); err != nil {
		t.Fatal(err)
	}
	be, err := native.New(native.Config{StateDir: filepath.Join(dir, "state"), DiskDir: filepath.Join(dir, "disks"), CgroupParent: "airlock-buildtest", DieWithOwner: true})
	if err != nil {
		testroot.Unavailable(t, "the native backend: "+err.Error())
	}
	t.Cleanup(func() { _ = be.RemoveCgroupParent() }) // nothing left behind
	return &fixture{s: s, be: be, b: &Builder{Store: s, Runner: &SandboxRunner{Backend: be}}}
}

func (fx *fixture) build(t *testing.T, name, src, ctxDir string) (*Result, error) {
	t.Helper()
	f, err := Parse("airlock.template", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return fx.b.Build(context.Background(), name, "airlock.template", f, ctxDir)
}

// exec runs sh -c script in a fresh sandbox of template name, in its
// working directory (as the manager picks it when an exec names none).
func (fx *fixture) exec(t *testing.T, name, script string) string {
	t.Helper()
	tpl, err := fx.s.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := fx.be.Create(context.Background(), runtime.Spec{RootFS: tpl.Dir, Lowers: tpl.Lowers, Env: tpl.Env})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy(context.Background())
	var out, errb bytes.Buffer
	p, err := sb.Exec(context.Background(), runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Dir: tpl.WorkDir, Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := p.Wait(context.Background()); err != nil || st.Code != 0 {
		t.Fatalf("exec %q: %+v %v: %s", script, st, err, errb.String())
	}
	return out.String()
}

const buildFile = `FROM base
COPY a.txt /workspace/copied.txt
RUN echo made by run > /workspace/made.txt; cat /workspace/copied.txt > /workspace/seen.txt
ENV GREETING=hello
WORKDIR /workspace/app
USER builder
`

// A build on the native backend: a RUN's file, a COPY's file, ENV and
// WORKDIR reach the sandboxes of the built template; the record has the
// provenance; a rebuild with nothing changed takes every step from the
// cache (timed against the first build), and a changed COPY source
// makes that step and the ones after it again.
func TestBuildNative(t *testing.T) {
	fx := newFixture(t)
	ctxDir := t.TempDir()
	// 0600: the layer's root must not make it unreadable to the RUN after
	os.WriteFile(filepath.Join(ctxDir, "a.txt"), []byte("copied\n"), 0o600)
	t0 := time.Now()
	res, err := fx.build(t, "built", buildFile, ctxDir)
	first := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 5 || res.Cached != 0 || res.Same {
		t.Errorf("first build: %+v", res)
	}
	got := fx.exec(t, "built", `cat /workspace/made.txt /workspace/copied.txt /workspace/seen.txt; echo "$GREETING"; echo "$PWD"`)
	if got != "made by run\ncopied\ncopied\nhello\n/workspace/app\n" {
		t.Errorf("sandbox of the built template: %q", got)
	}
	img, err := fx.s.Image("built")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := fx.s.Image("base")
	bi := img.Build
	if img.Kind != "build" || bi == nil || bi.Base != "base" || bi.BaseHash != base.Hash || len(bi.Steps) != 5 || img.Config.User != "builder" || img.Config.WorkingDir != "/workspace/app" {
		t.Fatalf("record: %+v %+v", img, bi)
	}
	if bi.Steps[0].Layer == "" || bi.Steps[1].Layer == "" || bi.Steps[2].Layer != "" || img.Digest != bi.Steps[4].Digest || len(img.Layers) != 1+3 {
		t.Errorf("steps: %+v, layers %+v", bi.Steps, img.Layers)
	}

	t0 = time.Now()
	res, err = fx.build(t, "built", buildFile, ctxDir)
	again := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first build %v, cached rebuild %v", first, again)
	if res.Cached != 5 || res.Done != 0 || !res.Same || res.Image.Hash != img.Hash {
		t.Errorf("rebuild: %+v", res)
	}
	if again > 200*time.Millisecond {
		t.Errorf("cached rebuild took %v, over the 200ms target (first build %v)", again, first)
	}

	// a changed ENV: the COPY and the RUN before it come from the cache
	res, err = fx.build(t, "built2", strings.Replace(buildFile, "hello", "bye", 1), ctxDir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cached != 2 || res.Done != 3 {
		t.Errorf("after a changed ENV: %+v, want COPY and RUN cached and the rest made again", res)
	}
	if got := fx.exec(t, "built2", `echo "$GREETING"; cat /workspace/made.txt`); got != "bye\nmade by run\n" {
		t.Errorf("built2: %q", got)
	}
	// a changed COPY source: every step after the base is made again
	os.WriteFile(filepath.Join(ctxDir, "a.txt"), []byte("changed\n"), 0o644)
	res, err = fx.build(t, "built3", buildFile, ctxDir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cached != 0 || res.Done != 5 {
		t.Errorf("after a changed COPY source: %+v, want every step made again", res)
	}
	if got := fx.exec(t, "built3", "cat /workspace/seen.txt"); got != "changed\n" {
		t.Errorf("built3: %q", got)
	}
	if _, err := fx.build(t, "built", buildFile, ctxDir); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a different build under an existing name: %v, want a conflict", err)
	}
}

// Builds that must fail, leaving no template: a RUN that reaches a host
// (its sandbox has no network: nothing was named), a RUN that names
// egress (an in-process build has no egress proxy: unsupported), a failing RUN,
// COPY through a symlink out of the context, FROM the host template.
func TestBuildRefused(t *testing.T) {
	fx := newFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reached := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			reached <- struct{}{}
			c.Close()
		}
	}()
	ctxDir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("host secret\n"), 0o644)
	os.Symlink(outside, filepath.Join(ctxDir, "leak"))
	os.Symlink(filepath.Dir(outside), filepath.Join(ctxDir, "dirlink"))
	os.Mkdir(filepath.Join(ctxDir, "sub"), 0o755)
	os.Symlink("../../"+filepath.Base(filepath.Dir(outside))+"/secret", filepath.Join(ctxDir, "sub", "up"))
	for _, c := range []struct{ name, src, want string }{
		{"dial", "FROM base\nRUN echo x > /workspace/x\nRUN dial " + l.Addr().String() + "\n", "airlock.template:3: RUN: the command exited 3"},
		{"egress", "FROM base\negress: npm\nRUN echo x\n", "unsupported"},
		{"fail", "FROM base\nRUN exit 1\n", "exited 1"},
		{"leak", "FROM base\nCOPY leak /workspace/x\n", "leads out of the context"},
		{"leakdir", "FROM base\nCOPY sub /workspace/x\n", "leads out of the context"},
		{"leakpath", "FROM base\nCOPY dirlink/secret /workspace/x\n", "a symlink on its path leads out of the context"},
		{"leakdirlink", "FROM base\nCOPY dirlink /workspace/x\n", "leads out of the context"},
		{"host", "FROM host\nENV A=1\n", "unsupported"},
	} {
		_, err := fx.build(t, c.name, c.src, ctxDir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
		if _, err := fx.s.Image(c.name); !errors.Is(err, template.ErrNotFound) {
			t.Errorf("%s: a template was left: %v", c.name, err)
		}
	}
	select {
	case <-reached:
		t.Error("a build's RUN reached the host's loopback")
	default:
	}
}
