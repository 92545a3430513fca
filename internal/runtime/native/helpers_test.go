package native

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/template"
)

// Shared by every test in the package: one state dir, one data dir, one
// cgroup parent, all unique to this test binary run.
var (
	testRoot     string // parent of state and data, mode 0711
	testSkip     string // non-empty: why the runtime tests cannot run here
	probeBin     string // path of the built hostile probe (testdata/probe)
	cgroupParent string
)

func TestMain(m *testing.M) {
	MaybeInit()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	switch {
	case os.Geteuid() != 0:
		testSkip = "needs root (uid mapping, cgroups)"
	default:
		if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err != nil || strings.TrimSpace(string(b)) == "0" {
			testSkip = "needs user namespaces"
		}
	}
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	cgroupParent = "airlock-test-" + hex.EncodeToString(rb[:])
	if testSkip == "" {
		d, err := os.MkdirTemp("", "airlock-native-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		testRoot = d
		_ = os.Chmod(d, 0o711)
		defer os.RemoveAll(d)
		probeBin = filepath.Join(d, "probe")
		build := exec.Command("go", "build", "-o", probeBin, "./testdata/probe")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build probe: %v\n%s", err, out)
			probeBin = ""
		}
	}
	code := m.Run()
	if testSkip == "" {
		// nothing may be left: the package's own leak check
		if b, err := New(Config{StateDir: filepath.Join(testRoot, "state"), CgroupParent: cgroupParent}); err == nil {
			if len(b.Reaped) > 0 {
				fmt.Fprintf(os.Stderr, "LEAK: sandboxes left behind and reaped at exit: %v\n", b.Reaped)
				code = 1
			}
			if c, err := b.Census(); err == nil && (c.StateDirs != 0 || c.Cgroups != 0 || c.Mounts != 0) {
				fmt.Fprintf(os.Stderr, "LEAK: census after all tests: %+v\n", c)
				code = 1
			}
			_ = b.hier.RemoveParent(cgroupParent)
		}
	}
	return code
}

// needRuntime skips a test that needs the runtime where it cannot run;
// under CI (CI=true, on machines that are root) that is a failure instead,
// so the suite can never pass by skipping.
func needRuntime(t testing.TB) {
	t.Helper()
	if testSkip != "" {
		if os.Getenv("CI") != "" {
			t.Fatal("native runtime tests cannot run under CI: " + testSkip)
		}
		t.Skip("native runtime tests skipped: " + testSkip)
	}
}

// newTestBackend returns the package's backend (state under testRoot).
func newTestBackend(t testing.TB) *Backend {
	t.Helper()
	needRuntime(t)
	b, err := New(Config{StateDir: filepath.Join(testRoot, "state"), CgroupParent: cgroupParent})
	if err != nil {
		t.Fatalf("native.New: %v", err)
	}
	return b
}

// hostTemplate returns the built-in host template from a test data dir.
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

// imageTemplate reports whether the tests run on an imported image
// template (AIRLOCK_TEST_IMAGE_TEMPLATE) rather than the host's.
func imageTemplate() bool { return os.Getenv("AIRLOCK_TEST_IMAGE_TEMPLATE") != "" }

// templateEntries are the names in directory dir of the tests' template
// (its root and its layers, merged; sorted): what a sandbox's dir holds
// of its own. The host template's /run, /mnt and /sys are empty.
func templateEntries(t testing.TB, dir string) []string {
	spec := hostSpec(t)
	seen := map[string]bool{}
	for _, root := range append([]string{spec.RootFS}, spec.Lowers...) {
		ents, _ := os.ReadDir(filepath.Join(root, dir))
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".wh.") {
				seen[e.Name()] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := b.Create(ctx, spec)
	if err != nil {
		t.Fatalf("create sandbox: %v", err)
	}
	t.Cleanup(func() {
		// The agent is this test binary: under -race, a race it hits goes
		// to its log, not to the test's output.
		if log, _ := os.ReadFile(filepath.Join(sb.(*sandbox).dir, "init.log")); bytes.Contains(log, []byte("DATA RACE")) {
			t.Errorf("the agent raced:\n%s", log)
		}
		if err := sb.Destroy(context.Background()); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	return sb
}

// withProbe puts the hostile probe binary at /workspace/probe.
func withProbe(t testing.TB) func(*runtime.Spec) {
	t.Helper()
	if probeBin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("probe binary could not be built")
		}
		t.Skip("probe binary could not be built")
	}
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	data, err := os.ReadFile(probeBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(s *runtime.Spec) { s.Workspace = dir }
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
		t.Fatalf("wait %q: %v", req.Argv, err)
	}
	return result{Stdout: out.String(), Stderr: errb.String(), Status: st}
}

// sh runs a shell script in the sandbox.
func sh(t testing.TB, sb runtime.Sandbox, script string) result {
	t.Helper()
	return run(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", script}})
}
