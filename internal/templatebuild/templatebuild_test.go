package templatebuild_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/gvisor"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/build"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"github.com/airlock-dev/airlock/internal/templatebuild"
	"github.com/airlock-dev/airlock/internal/testroot"
)

func TestMain(m *testing.M) {
	gvisor.MaybeInit()
	native.MaybeInit()
	os.Exit(m.Run())
}

// fakeNet resolves the test's names to loopback and dials only the
// registry upstream's port there: no test traffic can go anywhere else,
// even if a guard were broken.
type fakeNet struct {
	t    testing.TB
	port int
	tls  int // the TLS registry's port
	mu   sync.Mutex
	dial []string
}

func (f *fakeNet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(host, ".example.test") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (f *fakeNet) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	f.mu.Lock()
	f.dial = append(f.dial, address)
	f.mu.Unlock()
	if address != "127.0.0.1:"+strconv.Itoa(f.port) && address != "127.0.0.1:"+strconv.Itoa(f.tls) {
		f.t.Errorf("the proxy dialed %s: only the test's registry may be dialed", address)
		return nil, fmt.Errorf("test dialer: %s is not the test registry", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

func (f *fakeNet) dialed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.dial)
}

// tool is a static helper in the base root: fetch URL (through the
// environment's proxy; prints the body, exits 3 unless 200), write PATH
// TEXT, ln TARGET PATH, hold (does nothing: the policy holds it). As
// bin/npm it is a small package manager: "npm install NAME" fetches
// NAME's 1.3.0 tarball from $npm_config_registry and writes
// node_modules/NAME and a package-lock.json with its integrity.
const tool = `package main

import (
	"crypto/sha512"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
)

func npm(name string) {
	url := os.Getenv("npm_config_registry") + name + "/-/" + name + "-1.3.0.tgz"
	r, err := http.Get(url)
	if err != nil || r.StatusCode != 200 {
		fmt.Println("npm: fetch", url, err)
		os.Exit(6)
	}
	b, _ := io.ReadAll(r.Body)
	os.MkdirAll(filepath.Join("node_modules", name), 0o755)
	os.WriteFile(filepath.Join("node_modules", name, "package.tgz"), b, 0o644)
	sum := sha512.Sum512(b)
	lock := fmt.Sprintf("{\"name\":\"app\",\"lockfileVersion\":3,\"packages\":{\"\":{\"name\":\"app\"},\"node_modules/%s\":{\"version\":\"1.3.0\",\"resolved\":%q,\"integrity\":\"sha512-%s\"}}}\n", name, url, base64.StdEncoding.EncodeToString(sum[:]))
	os.WriteFile("package-lock.json", []byte(lock), 0o644)
}

func main() {
	if filepath.Base(os.Args[0]) == "npm" {
		npm(os.Args[2])
		return
	}
	switch os.Args[1] {
	case "fetch":
		// the test's TLS upstream is self-signed: the tunnel, not the
		// certificate, is what these tests look at
		http.DefaultTransport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		r, err := http.Get(os.Args[2])
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		b, _ := io.ReadAll(r.Body)
		os.Stdout.Write(b)
		if r.StatusCode != 200 {
			os.Exit(3)
		}
	case "write":
		if err := os.WriteFile(os.Args[2], []byte(os.Args[3]), 0o644); err != nil {
			fmt.Println(err)
			os.Exit(4)
		}
	case "ln":
		if err := os.Symlink(os.Args[2], os.Args[3]); err != nil {
			fmt.Println(err)
			os.Exit(5)
		}
	}
}
`

// baseRoot is a tiny real root: the host's sh and the C library it needs,
// and the static tool built here.
func baseRoot(t testing.TB) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.go"), []byte(tool), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "t"), filepath.Join(dir, "t.go"))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build tool: %v\n%s", err, out)
	}
	files := map[string]string{"bin/sh": "/bin/sh", "bin/t": filepath.Join(dir, "t"), "bin/npm": filepath.Join(dir, "t"),
		"lib/x86_64-linux-gnu/libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6", "lib64/ld-linux-x86-64.so.2": "/lib64/ld-linux-x86-64.so.2"}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, d := range []string{"bin", "lib", "lib/x86_64-linux-gnu", "lib64", "etc", "tmp"} {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: mode})
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

type rig struct {
	t       testing.TB
	tpls    *template.Store
	stk     *stack.Stack
	log     *audit.Log
	net     *fakeNet
	reg     string // the registry's host:port (the "npm" preset's)
	sec     string // the TLS registry's (the preset's too)
	hits    chan string
	dir     string
	ctxOK   string          // a context directory
	be      *native.Backend // nil on gVisor
	backend string
}

// The daemon's policy: allow what the steps run but hold "t hold" and
// deny "t nuke"; loopback opened for the registry's port only (the
// preset names the registry's host; the guard needs its address opened).
const testPolicy = `
classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: deny, unknown: allow, persist: allow}
rules:
  - {id: hold-deploy, command: 't hold *', action: ask}
  - {id: no-nuke, command: 't nuke *', action: deny}
egress:
  rules:
    - {id: test-upstream, action: allow, cidrs: [127.0.0.1/32], ports: [PORT, TLSPORT]}
    - {id: every-sandbox, action: allow, hosts: [granted.example.test], ports: [PORT]}
`

func newRig(t testing.TB) *rig { return newRigOn(t, "native") }

// newRigOn is the rig on backend "native" or "gvisor".
func newRigOn(t testing.TB, backend string) *rig {
	t.Helper()
	testroot.Need(t, "layers are unpacked as host root and steps run in native sandboxes")
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o711)
	_ = os.Chmod(filepath.Dir(dir), 0o711)
	r := &rig{t: t, dir: dir, hits: make(chan string, 64), backend: backend}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits <- req.URL.Path
		fmt.Fprintf(w, "package %s", req.URL.Path)
	}))
	t.Cleanup(up.Close)
	port := up.Listener.Addr().(*net.TCPAddr).Port
	sec := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintf(w, "secure package %s", req.URL.Path)
	}))
	t.Cleanup(sec.Close)
	tlsPort := sec.Listener.Addr().(*net.TCPAddr).Port
	r.net = &fakeNet{t: t, port: port, tls: tlsPort}
	r.reg = "reg.example.test:" + strconv.Itoa(port)
	r.sec = "sec.example.test:" + strconv.Itoa(tlsPort)
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	type census interface {
		runtime.Backend
		RemoveCgroupParent() error
	}
	var be census
	cg := "airlock-tbuild-" + hex.EncodeToString(rb[:])
	if backend == "gvisor" {
		g, err := gvisor.New(gvisor.Config{StateDir: filepath.Join(dir, "state"), CgroupParent: cg, DieWithOwner: true})
		if err != nil {
			testroot.Unavailable(t, "the gVisor backend: "+err.Error())
		}
		be = g
	} else {
		n, err := native.New(native.Config{StateDir: filepath.Join(dir, "state"), CgroupParent: cg, DieWithOwner: true})
		if err != nil {
			testroot.Unavailable(t, "the native backend: "+err.Error())
		}
		be, r.be = n, n
	}
	var err error
	if r.tpls, err = template.Open(filepath.Join(dir, "templates")); err != nil {
		t.Fatal(err)
	}
	id, err := r.tpls.UnpackLayer("", bytes.NewReader(baseRoot(t)), layertar.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	img := &template.Image{Name: "base", Kind: "image", Source: "test", Digest: "sha256:" + strings.Repeat("b", 64), Platform: "linux/amd64", Layers: []template.ImageLayer{{DiffID: id}}}
	if img.AirlockLayer, err = r.tpls.AirlockLayer([]string{id}); err != nil {
		t.Fatal(err)
	}
	if err := r.tpls.PutImage(img); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	if r.log, err = audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(dir, "audit.key")}); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(strings.NewReplacer("TLSPORT", strconv.Itoa(tlsPort), "PORT", strconv.Itoa(port)).Replace(testPolicy)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := stack.Config{Config: manager.Config{Backend: be, Templates: r.tpls, Store: st, Audit: r.log, Redactor: red, Policy: pol, Logf: t.Logf},
		TaskDir: filepath.Join(dir, "tasks"), SnapshotDir: filepath.Join(dir, "snapshots"), ApprovalWait: 300 * time.Millisecond,
		Egress: &egress.Config{Resolver: r.net, Dialer: r.net, Presets: egress.Presets{"npm": {r.reg, r.sec}}}}
	if r.stk, err = stack.New(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.stk.Manager.Shutdown(context.Background())
		_ = st.Close()
		if r.be != nil {
			if c, err := r.be.Census(); err == nil && (c.StateDirs != 0 || c.Cgroups != 0 || c.Mounts != 0) {
				t.Errorf("leftovers after the test: %+v", c)
			}
		}
		_ = be.RemoveCgroupParent()
	})
	r.ctxOK = filepath.Join(dir, "ctx")
	_ = os.MkdirAll(r.ctxOK, 0o755)
	return r
}

// build writes src as a build file and builds it through the daemon.
func (r *rig) build(name, src string) (*templatebuild.Result, []string, error) {
	r.t.Helper()
	file := filepath.Join(r.dir, name+".template")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		r.t.Fatal(err)
	}
	var lines []string
	res, err := r.stk.Builds.Build(context.Background(), name, file, r.ctxOK, func(l string) { lines = append(lines, l) })
	return res, lines, err
}

// events are the audit events of the build's step sandboxes (by their
// label on sandbox.create) and of those sandboxes.
func (r *rig) events(sandboxID string) []*audit.Event {
	r.t.Helper()
	evs, err := r.log.Query(context.Background(), store.AuditFilter{SandboxID: sandboxID})
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

func hasKind(evs []*audit.Event, kind, needle string) bool {
	for _, e := range evs {
		if e.Kind == kind && (strings.Contains(string(e.Payload), needle) || e.ExecID == needle) {
			return true
		}
	}
	return false
}

// A build's RUN reaches the registry its egress: preset names through the
// daemon's proxy; the step's sandbox and exec are on the audit log with
// the build's label, and the template's record names what was fetched
// (host, path, bytes). A cached rebuild records the same provenance.
func TestBuildThroughTheDaemon(t *testing.T) { buildThroughTheDaemon(t, newRig(t)) }

// The same on gVisor (its agent is loaded from the image's root: the
// test binary must be static, CGO_ENABLED=0, as airlock is).
func TestBuildThroughTheDaemonGVisor(t *testing.T) { buildThroughTheDaemon(t, gvisorRig(t)) }

// gvisorRig is the rig on gVisor, which loads its agent from the image's
// root: a dynamically linked test binary (cgo) is refused there, so the
// gVisor variants need CGO_ENABLED=0, as airlock's own build has.
func gvisorRig(t *testing.T) *rig {
	if exe, err := elf.Open("/proc/self/exe"); err == nil {
		dynamic := slices.ContainsFunc(exe.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		exe.Close()
		if dynamic {
			t.Skip("the test binary is dynamically linked and gVisor refuses it as the agent of an image template: run with CGO_ENABLED=0")
		}
	}
	return newRigOn(t, "gvisor")
}

func buildThroughTheDaemon(t *testing.T, r *rig) {
	src := "FROM base\negress: npm\nRUN t fetch http://" + r.reg + "/left-pad/-/left-pad-1.3.0.tgz > /workspace/pkg.tgz\n"
	res, lines, err := r.build("withpkg", src)
	if err != nil {
		t.Fatalf("build: %v (%q)", err, lines)
	}
	if got := <-r.hits; got != "/left-pad/-/left-pad-1.3.0.tgz" {
		t.Fatalf("the registry saw %q", got)
	}
	img, err := r.tpls.Image("withpkg")
	if err != nil {
		t.Fatal(err)
	}
	step := img.Build.Steps[0]
	if step.Sandbox == "" || step.Exec == "" || len(step.Fetched) != 1 {
		t.Fatalf("provenance: %+v", step)
	}
	f := step.Fetched[0]
	if f.Host != "reg.example.test" || f.Path != "/left-pad/-/left-pad-1.3.0.tgz" || f.Decision != "allow" || f.Rule != "preset-npm" || f.Status != 200 || f.BytesIn == 0 {
		t.Errorf("fetched: %+v", f)
	}
	evs := r.events(step.Sandbox)
	if !hasKind(evs, "sandbox.create", `"backend":"`+r.backend+`"`) || !hasKind(evs, "sandbox.create", `"airlock.build":"withpkg"`) || !hasKind(evs, "exec.start", step.Exec) || !hasKind(evs, "egress.request", "left-pad") {
		var kinds []string
		for _, e := range evs {
			kinds = append(kinds, e.Kind+" "+string(e.Payload))
		}
		t.Errorf("audit log of the step's sandbox: %v", kinds)
	}
	// the layer has what the step fetched
	tpl, err := r.tpls.Get("withpkg")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range append([]string{tpl.Dir}, tpl.Lowers...) {
		if b, err := os.ReadFile(filepath.Join(l, "workspace", "pkg.tgz")); err == nil && strings.HasPrefix(string(b), "package /left-pad") {
			found = true
		}
	}
	if !found {
		t.Errorf("the fetched file is not in the template's layers")
	}
	// the build's own events: its start before any step, its end naming
	// the template and each step's sandbox and exec
	var start, end *audit.Event
	all, err := r.log.Query(context.Background(), store.AuditFilter{Kind: "template.build"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		switch e.Kind {
		case "template.build.start":
			start = e
		case "template.build":
			end = e
		}
	}
	if start == nil || end == nil || start.Seq > evs[0].Seq || !strings.Contains(string(start.Payload), `"name":"withpkg"`) ||
		!strings.Contains(string(end.Payload), `"sandbox":"`+step.Sandbox+`"`) || !strings.Contains(string(end.Payload), `"exec":"`+step.Exec+`"`) ||
		!strings.Contains(string(end.Payload), `"template":"withpkg@`+img.Version+`"`) {
		t.Errorf("the build's events: start %+v end %+v", start, end)
	}
	again, _, err := r.build("withpkg", src)
	if err != nil || !again.Same || again.Cached != 1 || again.Digest != res.Digest {
		t.Fatalf("cached rebuild: %+v %v", again, err)
	}
	img2, _ := r.tpls.Image("withpkg")
	if img2.Hash != img.Hash || len(img2.Build.Steps[0].Fetched) != 1 {
		t.Errorf("a cached rebuild's record differs: %+v", img2.Build.Steps[0])
	}
}

// Attack: a RUN reaches for a host its preset does not name (and for the
// registry without the egress: section). The proxy refuses both before
// any dial, the build fails and leaves no template, and the refusals are
// the audit log's.
func TestBuildEgressOutsideThePreset(t *testing.T) { egressOutsideThePreset(t, newRig(t)) }

func TestBuildEgressOutsideThePresetGVisor(t *testing.T) { egressOutsideThePreset(t, gvisorRig(t)) }

func egressOutsideThePreset(t *testing.T, r *rig) {
	port := strings.Split(r.reg, ":")[1]
	for name, src := range map[string]string{
		"other":     "FROM base\negress: npm\nRUN t fetch http://exfil.example.test:" + port + "/steal\n",
		"nopreset":  "FROM base\nRUN t fetch http://" + r.reg + "/left-pad\n",
		"literalip": "FROM base\negress: npm\nRUN t fetch http://169.254.169.254/latest/meta-data/\n",
	} {
		before := r.net.dialed()
		_, lines, err := r.build(name, src)
		if err == nil || !strings.Contains(err.Error(), "exited 3") {
			t.Errorf("%s: %v (%q)", name, err, lines)
		}
		if _, err := r.tpls.Image(name); err == nil {
			t.Errorf("%s: a failed build left a template", name)
		}
		if d := r.net.dialed(); d != before {
			t.Errorf("%s: the proxy dialed for a refused request", name)
		}
		// refused by the daemon's default or by the build's own layer
		if out := strings.Join(lines, "\n"); !strings.Contains(out, "not in this sandbox's egress policy (rule default-deny)") && !strings.Contains(out, "denied by rule build-egress-only") {
			t.Errorf("%s: the step's output does not show the refusal: %q", name, lines)
		}
	}
	if n, err := r.log.Query(context.Background(), store.AuditFilter{Kind: "egress.request"}); err != nil || !hasKind(n, "egress.request", `"decision":"deny"`) {
		t.Errorf("no refusal on the audit log: %v", err)
	}
}

// Attack: a host the daemon's policy opens to every sandbox is closed to
// a build step whose egress: does not name it: a step reaches only what
// its build file names. The daemon's grant is real: a sandbox of the
// daemon's reaches the host.
func TestBuildEgressOnlyWhatTheFileNames(t *testing.T) {
	r := newRig(t)
	port := strings.Split(r.reg, ":")[1]
	url := "http://granted.example.test:" + port + "/left-pad"
	ctx := context.Background()
	sb, err := r.stk.Manager.Create(ctx, sandbox.CreateRequest{Template: "base"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, st, err := r.stk.Manager.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"t", "fetch", url}}, nil, &out, &out)
	_ = r.stk.Manager.Destroy(ctx, sb.ID)
	if err != nil || st.Code != 0 {
		t.Fatalf("the daemon's grant does not work for a plain sandbox (the test's premise): %v %+v %q", err, st, out.String())
	}
	for name, src := range map[string]string{
		"granted-npm":  "FROM base\negress: npm\nRUN t fetch " + url + "\n",
		"granted-none": "FROM base\nRUN t fetch " + url + "\n",
	} {
		_, lines, err := r.build(name, src)
		if err == nil || !strings.Contains(err.Error(), "exited 3") {
			t.Errorf("%s: a build step reached a host its file does not name: %v (%q)", name, err, lines)
		}
		if !strings.Contains(strings.Join(lines, "\n"), "build-egress-only") {
			t.Errorf("%s: the refusal does not name the build's rule: %q", name, lines)
		}
	}
}

// Attack: a held command in a RUN fails the build naming its approval;
// a denied one names the denial. Neither leaves a template.
func TestBuildPolicyRefusals(t *testing.T) {
	r := newRig(t)
	_, _, err := r.build("held", "FROM base\nRUN t hold now\n")
	if err == nil || !strings.Contains(err.Error(), "approval ") || !strings.Contains(err.Error(), "hold-deploy") {
		t.Errorf("held: %v", err)
	}
	_, _, err = r.build("denied", "FROM base\nRUN t nuke all\n")
	if err == nil || !errors.Is(err, errdefs.ErrDenied) || !strings.Contains(err.Error(), "policy_denied") {
		t.Errorf("denied: %v", err)
	}
	for _, n := range []string{"held", "denied"} {
		if _, err := r.tpls.Image(n); err == nil {
			t.Errorf("%s: a refused build left a template", n)
		}
	}
	if evs, err := r.log.Query(context.Background(), store.AuditFilter{Kind: "template.build"}); err != nil || !hasKind(evs, "template.build", `"error":`) || !hasKind(evs, "template.build", "hold-deploy") {
		t.Errorf("a refused build's end event: %v", err)
	}
	// Attack: the same denied step built in process first (no policy
	// there) is not taken from the cache by the daemon's build.
	src := "FROM base\nRUN t nuke all\n"
	f, err := build.Parse("airlock.template", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	local := &build.Builder{Store: r.tpls, Runner: &build.SandboxRunner{Backend: r.be}}
	if res, err := local.Build(context.Background(), "local", "airlock.template", f, r.ctxOK); err != nil || res.Done != 1 {
		t.Fatalf("in-process build: %+v %v", res, err)
	}
	if _, _, err := r.build("viacache", src); err == nil || !strings.Contains(err.Error(), "policy_denied") {
		t.Errorf("the daemon's build reused a step no policy decided: %v", err)
	}
}

// Attack: a RUN writes outside /workspace and /home/sandbox (the
// sandbox's /etc, /tmp), plants symlinks to the host's paths, and writes
// through them; the template has only its two trees (the symlinks as
// symlinks), and nothing reached the host.
func TestBuildRunWritesOutsideItsLayer(t *testing.T) { runWritesOutsideItsLayer(t, newRig(t)) }

func TestBuildRunWritesOutsideItsLayerGVisor(t *testing.T) {
	runWritesOutsideItsLayer(t, gvisorRig(t))
}

func runWritesOutsideItsLayer(t *testing.T, r *rig) {
	var nb [6]byte
	_, _ = rand.Read(nb[:])
	mark := "airlock-tbuild-" + hex.EncodeToString(nb[:])
	hostTmp := filepath.Join("/tmp", mark)
	src := "FROM base\n" +
		"RUN t write /tmp/" + mark + " x; t write /etc/" + mark + " x; t write /workspace/ok yes; t ln /tmp /workspace/up; t ln " + r.dir + " /workspace/hostdir; true\n" +
		"RUN t write /workspace/up/" + mark + "-2 x; t write /workspace/hostdir/" + mark + " x; true\n"
	if _, lines, err := r.build("writer", src); err != nil {
		t.Fatalf("build: %v %q", err, lines)
	}
	for _, p := range []string{hostTmp, hostTmp + "-2", filepath.Join(r.dir, mark), filepath.Join("/etc", mark)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the build wrote %s on the host", p)
			_ = os.Remove(p)
		}
	}
	tpl, err := r.tpls.Get("writer")
	if err != nil {
		t.Fatal(err)
	}
	ok := false
	for _, l := range append([]string{tpl.Dir}, tpl.Lowers...) {
		for _, p := range []string{"tmp/" + mark, "etc/" + mark, "tmp/" + mark + "-2"} {
			if _, err := os.Lstat(filepath.Join(l, p)); err == nil {
				t.Errorf("layer %s has %s", l, p)
			}
		}
		if fi, err := os.Lstat(filepath.Join(l, "workspace", "up")); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("workspace/up is not a symlink in %s", l)
		}
		if _, err := os.Stat(filepath.Join(l, "workspace", "ok")); err == nil {
			ok = true
		}
	}
	if !ok {
		t.Errorf("the step's own write is not in the template")
	}
}

// Attack: COPY of a context symlink that leads out of the context (to
// the daemon host's files, read as root) is refused; no template.
func TestBuildContextSymlinkEscape(t *testing.T) {
	r := newRig(t)
	secret := filepath.Join(r.dir, "host-secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(r.ctxOK, "f")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(r.dir, filepath.Join(r.ctxOK, "d")); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"viafile": "FROM base\nCOPY f /workspace/f\n", "viadir": "FROM base\nCOPY d/host-secret /workspace/f\n"} {
		_, _, err := r.build(name, src)
		if err == nil {
			t.Errorf("%s: copied through a symlink out of the context", name)
		}
		if _, ierr := r.tpls.Image(name); ierr == nil {
			t.Errorf("%s: left a template", name)
		}
	}
	// and a relative build file path is refused (the daemon's paths are its own)
	if _, err := r.stk.Builds.Build(context.Background(), "rel", "airlock.template", "", nil); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("relative file: %v", err)
	}
}

// A package manager in a RUN: its fetch goes through the preset, and the
// review module's package evidence of it (the lockfile it wrote: the
// package and version, the lockfile's hash, the registry reached) is the
// step's provenance next to the egress record.
func TestBuildPackageEvidence(t *testing.T) {
	r := newRig(t)
	src := "FROM base\negress: npm\nENV npm_config_registry=http://" + r.reg + "/\nRUN cd /workspace && npm install left-pad\n"
	if _, lines, err := r.build("npmed", src); err != nil {
		t.Fatalf("build: %v %q", err, lines)
	}
	img, err := r.tpls.Image("npmed")
	if err != nil {
		t.Fatal(err)
	}
	step := img.Build.Steps[len(img.Build.Steps)-1]
	if len(step.Fetched) != 1 || step.Fetched[0].Path != "/left-pad/-/left-pad-1.3.0.tgz" || step.Fetched[0].Rule != "preset-npm" {
		t.Errorf("fetched: %+v", step.Fetched)
	}
	if len(step.Packages) != 1 {
		t.Fatalf("packages: %+v", step.Packages)
	}
	p := step.Packages[0]
	if p.Lockfile != "/workspace/package-lock.json" || p.Manager != "npm" || len(p.SHA256) != 64 || len(p.Changes) != 1 ||
		p.Changes[0].Name != "left-pad" || p.Changes[0].Change != "added" || len(p.Changes[0].To) != 1 || p.Changes[0].To[0] != "1.3.0" ||
		len(p.Registries) != 1 || p.Registries[0] != "reg.example.test" {
		t.Errorf("package evidence: %+v", p)
	}
}

// A cached rebuild (no step changed) through the daemon's service and,
// its peer, the in-process builder on the same store and file (every
// step cached: no sandbox runs in either). The target is <= 200 ms.
func BenchmarkCachedRebuild(b *testing.B) {
	r := newRig(b)
	src := "FROM base\negress: npm\nENV npm_config_registry=http://" + r.reg + "/\nRUN cd /workspace && npm install left-pad\nRUN t write /workspace/x y\nWORKDIR /workspace\n"
	if _, lines, err := r.build("bench", src); err != nil {
		b.Fatalf("first build: %v %q", err, lines)
	}
	file := filepath.Join(r.dir, "bench.template")
	b.Run("daemon", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			res, err := r.stk.Builds.Build(context.Background(), "bench", file, r.ctxOK, nil)
			if err != nil || !res.Same {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
	b.Run("inprocess", func(b *testing.B) {
		f, err := build.Parse("bench.template", []byte(src))
		if err != nil {
			b.Fatal(err)
		}
		// the builder alone, with the daemon's cache keys; never run: every step is cached
		bl := &build.Builder{Store: r.tpls, Runner: &build.SandboxRunner{}, RunKey: templatebuild.RunKey}
		for i := 0; i < b.N; i++ {
			res, err := bl.Build(context.Background(), "bench", "bench.template", f, r.ctxOK)
			if err != nil || !res.Same {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
}

// An HTTPS fetch under the preset is a CONNECT tunnel (not opened by the
// proxy): the provenance has its host, port and the tunnel's bytes, read
// once the step's sandbox is gone.
func TestBuildHTTPSFetchRecorded(t *testing.T) {
	r := newRig(t)
	src := "FROM base\negress: npm\nRUN t fetch https://" + r.sec + "/left-pad.tgz > /workspace/p\n"
	if _, lines, err := r.build("secure", src); err != nil {
		t.Fatalf("build: %v %q", err, lines)
	}
	img, err := r.tpls.Image("secure")
	if err != nil {
		t.Fatal(err)
	}
	fs := img.Build.Steps[0].Fetched
	if len(fs) != 1 || fs[0].Method != "CONNECT" || fs[0].Host != "sec.example.test" || fs[0].Decision != "allow" || fs[0].Rule != "preset-npm" || fs[0].BytesIn == 0 || fs[0].BytesOut == 0 {
		t.Errorf("fetched: %+v", fs)
	}
}
