package gvisor

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/template"
)

// Shared by every test in the package: one state dir, one data dir, one
// cgroup parent, all unique to this test binary run.
var (
	testRoot     string // parent of state and data
	testSkip     string // non-empty: why the gVisor tests cannot run here
	probeBin     string // the hostile probe of the native escape suite
	cgroupParent string
)

// testConfig is the backend configuration of the tests: runsc from
// AIRLOCK_RUNSC (default: runsc in PATH), platform from
// AIRLOCK_GVISOR_PLATFORM (default: runsc's own).
func testConfig() Config {
	return Config{StateDir: filepath.Join(testRoot, "state"), CgroupParent: cgroupParent,
		Runsc: os.Getenv("AIRLOCK_RUNSC"), Platform: os.Getenv("AIRLOCK_GVISOR_PLATFORM")}
}

func TestMain(m *testing.M) {
	MaybeInit()
	native.MaybeInit() // the benchmarks' native peer
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	runsc := os.Getenv("AIRLOCK_RUNSC")
	if runsc == "" {
		runsc = "runsc"
	}
	switch {
	case os.Geteuid() != 0:
		testSkip = "needs root (runsc, cgroups)"
	default:
		if _, err := exec.LookPath(runsc); err != nil {
			testSkip = "runsc is not installed: " + InstallHint
		}
	}
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	cgroupParent = "airlock-gvisor-test-" + hex.EncodeToString(rb[:])
	if testSkip == "" {
		d, err := os.MkdirTemp("", "airlock-gvisor-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		testRoot = d
		_ = os.Chmod(d, 0o711)
		defer os.RemoveAll(d)
		probeBin = filepath.Join(d, "probe")
		build := exec.Command("go", "build", "-o", probeBin, "../native/testdata/probe")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build probe: %v\n%s", err, out)
			probeBin = ""
		}
	}
	code := m.Run()
	if testSkip == "" {
		if b, err := New(testConfig()); err == nil {
			if len(b.Reaped) > 0 {
				fmt.Fprintf(os.Stderr, "LEAK: sandboxes left behind and reaped at exit: %v\n", b.Reaped)
				code = 1
			}
			if c, err := b.Census(); err == nil && (c.StateDirs != 0 || c.Cgroups != 0) {
				fmt.Fprintf(os.Stderr, "LEAK: census after all tests: %+v\n", c)
				code = 1
			}
			_ = b.hier.RemoveParent(cgroupParent)
			_ = b.hier.RemoveParent(cgroupParent + "-native")
		}
	}
	return code
}

// needGVisor skips a test that needs runsc where it cannot run, with the
// reason; with AIRLOCK_REQUIRE_GVISOR set (the Makefile's test target,
// hence CI) that is a failure instead, so the suite never passes by
// skipping.
func needGVisor(t testing.TB) {
	t.Helper()
	if testSkip != "" {
		if os.Getenv("AIRLOCK_REQUIRE_GVISOR") != "" {
			t.Fatal("gVisor tests cannot run, but AIRLOCK_REQUIRE_GVISOR is set: " + testSkip)
		}
		t.Skip("gVisor tests skipped: " + testSkip)
	}
}

func newTestBackend(t testing.TB) *Backend {
	t.Helper()
	needGVisor(t)
	b, err := New(testConfig())
	if err != nil {
		t.Fatalf("gvisor.New: %v", err)
	}
	// The tests' image templates carry a trusted loader (the host's,
	// hostileimage.AgentLibs, or a real distribution's) for the cgo test
	// binary; TestDynamicAgentRefusedOnImages checks the refusal.
	b.testTrustImageLoader = true
	return b
}

func hostTemplate(t testing.TB) *template.Template {
	t.Helper()
	st, err := template.Open(filepath.Join(testRoot, "data", "templates"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := st.Get("host")
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// hostSpec is a spec on the host template, or, with
// AIRLOCK_TEST_IMAGE_TEMPLATE=DATADIR:NAME, on that imported image
// template (the escape tests on a real distribution's root, issue 21).
func hostSpec(t testing.TB) runtime.Spec {
	tpl := hostTemplate(t)
	if v := os.Getenv("AIRLOCK_TEST_IMAGE_TEMPLATE"); v != "" {
		dir, name, _ := strings.Cut(v, ":")
		st, err := template.Open(filepath.Join(dir, "templates"))
		if err != nil {
			t.Fatal(err)
		}
		if tpl, err = st.Get(name); err != nil {
			t.Fatal(err)
		}
	}
	spec := runtime.Spec{RootFS: tpl.Dir, Lowers: tpl.Lowers}
	for _, b := range tpl.Binds {
		spec.Binds = append(spec.Binds, runtime.Bind{Source: b.Source, Target: b.Target})
	}
	return spec
}

// newSandbox creates a sandbox on the host template; mutate may change the
// spec first. It is destroyed when the test ends.
func newSandbox(t testing.TB, mutate func(*runtime.Spec)) runtime.Sandbox {
	t.Helper()
	b := newTestBackend(t)
	spec := hostSpec(t)
	if mutate != nil {
		mutate(&spec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sb, err := b.Create(ctx, spec)
	if err != nil {
		t.Fatalf("create sandbox: %v", err)
	}
	t.Cleanup(func() {
		if log, _ := os.ReadFile(filepath.Join(sb.(*sandbox).dir, "init.log")); bytes.Contains(log, []byte("DATA RACE")) {
			t.Errorf("the agent raced:\n%s", log)
		}
		if err := sb.Destroy(context.Background()); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	return sb
}

type result struct {
	Stdout, Stderr string
	Status         runtime.ExitStatus
}

// run executes argv and waits; a failure to start fails the test.
func run(t testing.TB, sb runtime.Sandbox, req runtime.ExecRequest) result {
	t.Helper()
	var out, errb bytes.Buffer
	if req.Stdout == nil {
		req.Stdout = &out
	}
	if req.Stderr == nil {
		req.Stderr = &errb
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := sb.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Argv, err)
	}
	st, err := p.Wait(ctx)
	if err != nil {
		log := ""
		if s, ok := sb.(*sandbox); ok {
			log = s.initLog()
		}
		t.Fatalf("wait %q: %v%s", req.Argv, err, log)
	}
	return result{Stdout: out.String(), Stderr: errb.String(), Status: st}
}

// sh runs a shell script in the sandbox.
func sh(t testing.TB, sb runtime.Sandbox, script string) result {
	t.Helper()
	return run(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", script}})
}
