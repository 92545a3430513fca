// Package conformance is the behaviour every runtime.Backend must show,
// written once and run against each backend from that backend's tests:
//
//	func TestConformance(t *testing.T) { conformance.Run(t, factory) }
//
// It needs the backend to be usable on the machine; the caller skips
// before calling Run when it is not.
package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Factory gives the suite a backend and a spec that runs on it (template
// root filesystem and binds filled in; limits may be left zero).
type Factory func(t *testing.T) (runtime.Backend, runtime.Spec)

// Differences are the cases where a backend declares, with the reason,
// that it behaves otherwise than the suite expects by default: keyed by
// case name. Only cases that say so accept one (see each case), and then
// the difference itself is checked: an unsupported ability must be an
// ErrUnsupported error, never a silent no-op.
//
// The key NoIsolation declares a backend that isolates nothing (the fake
// backend of tests): the isolation cases, which need the sandbox's own
// view of the system (its root, users, /proc, devices, network), are then
// skipped with the declared reason, and the IsolationReported case checks
// that the backend says so in every sandbox's Info.
type Differences map[string]string

// NoIsolation is the Differences key of a backend that isolates nothing.
const NoIsolation = "NoIsolation"

// NoBoundary is the Isolation.Boundary of a backend that isolates nothing.
const NoBoundary = "none"

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, f Factory) { RunWith(t, f, nil) }

type testCase struct {
	name string
	fn   func(t *testing.T, f Factory)
	// isolation: the case needs the sandbox's own view of the system
	isolation bool
}

// RunWith runs the whole suite, accepting the declared differences.
func RunWith(t *testing.T, f Factory, diffs Differences) {
	tests := []testCase{
		{name: "IsolationReported", fn: func(t *testing.T, f Factory) { testIsolationReported(t, f, diffs[NoIsolation]) }},
		{name: "ExitCodes", fn: testExitCodes},
		{name: "Stdio", fn: testStdio},
		{name: "Env", fn: testEnv},
		{name: "EnvAndDir", fn: testEnvAndDir, isolation: true},
		{name: "NotFound", fn: testNotFound},
		{name: "BadRequests", fn: testBadRequests},
		{name: "Timeout", fn: testTimeout},
		{name: "Signal", fn: testSignal},
		{name: "OutputCap", fn: testOutputCap},
		{name: "Concurrent", fn: testConcurrent},
		{name: "Isolated", fn: testIsolated, isolation: true},
		{name: "DestroyKillsAll", fn: testDestroyKillsAll},
		{name: "Pause", fn: testPause},
		{name: "Lifetime", fn: testLifetime},
		{name: "Files", fn: testFiles},
		{name: "TTY", fn: testTTY},
		{name: "OutputWithBackgroundChild", fn: testOutputWithBackgroundChild},
		{name: "FilesStayInside", fn: testFilesStayInside},
		{name: "WriteScope", fn: func(t *testing.T, f Factory) { testWriteScope(t, f, diffs["WriteScope"]) }},
		{name: "FileActivity", fn: testFileActivity},
		{name: "Rename", fn: testRename},
		{name: "DirWatch", fn: testDirWatch},
		{name: "Usage", fn: testUsage},
		{name: "PageCache", fn: func(t *testing.T, f Factory) { testPageCache(t, f, diffs["PageCache"]) }},
		{name: "DiskUsage", fn: func(t *testing.T, f Factory) { testDiskUsage(t, f, diffs["DiskUsage"]) }},
		{name: "Network", fn: testNetwork, isolation: true},
		{name: "ProxyConnCap", fn: testProxyConnCap, isolation: true},
		{name: "Sweep", fn: testSweep},
		{name: "HostConfigUnderUsr", fn: testHostConfigUnderUsr, isolation: true},
		{name: "HostLeaks", fn: testHostLeaks, isolation: true},
		{name: "MountinfoNamesNoHostPath", fn: testMountinfoNamesNoHostPath, isolation: true},
		{name: "NoDeviceNodes", fn: testNoDeviceNodes, isolation: true},
		{name: "NoHostWriteback", fn: testNoHostWriteback, isolation: true},
		{name: "PtyLimit", fn: func(t *testing.T, f Factory) { testPtyLimit(t, f, diffs["PtyLimit"]) }},
		{name: "User", fn: testUser, isolation: true},
		{name: "UserHome", fn: testUserHome},
		{name: "UserRefused", fn: testUserRefused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why := diffs[NoIsolation]; tc.isolation && why != "" {
				t.Skipf("declared difference: no isolation: %s", why)
			}
			tc.fn(t, f)
		})
	}
}

// testIsolationReported: a sandbox's Info names the boundary applied; a
// backend that declares no isolation reports the boundary NoBoundary and
// no namespaces, one that does not declare it never reports that.
func testIsolationReported(t *testing.T, f Factory, noIsolation string) {
	iso := create(t, f, nil).Info().Isolation
	switch {
	case noIsolation != "" && (iso.Boundary != NoBoundary || len(iso.Namespaces) != 0):
		t.Errorf("declared no isolation (%s), but Info reports %+v, want the boundary %q and no namespaces", noIsolation, iso, NoBoundary)
	case noIsolation == "" && (iso.Boundary == "" || iso.Boundary == NoBoundary):
		t.Errorf("Info reports the boundary %q", iso.Boundary)
	case noIsolation != "":
		t.Logf("declared difference: %s", noIsolation)
	}
}

func create(t *testing.T, f Factory, mutate func(*runtime.Spec)) runtime.Sandbox {
	t.Helper()
	be, spec := f(t)
	if mutate != nil {
		mutate(&spec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sb, err := be.Create(ctx, spec)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = sb.Destroy(context.Background()) })
	return sb
}

type res struct {
	out, err string
	st       runtime.ExitStatus
}

func execWait(t *testing.T, sb runtime.Sandbox, req runtime.ExecRequest) res {
	t.Helper()
	var o, e bytes.Buffer
	req.Stdout, req.Stderr = &o, &e
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := sb.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Argv, err)
	}
	st, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("wait %q: %v", req.Argv, err)
	}
	return res{o.String(), e.String(), st}
}

func shell(t *testing.T, sb runtime.Sandbox, script string) res {
	t.Helper()
	return execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", script}})
}

func testExitCodes(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	for _, code := range []int{0, 1, 3, 42, 255} {
		r := shell(t, sb, fmt.Sprintf("exit %d", code))
		if r.st.Code != code || r.st.Limit != runtime.LimitNone {
			t.Errorf("exit %d: got code %d limit %q", code, r.st.Code, r.st.Limit)
		}
	}
	r := shell(t, sb, "kill -TERM $$")
	if r.st.Code != 128+int(syscall.SIGTERM) || r.st.Signal != "SIGTERM" {
		t.Errorf("self-kill: got code %d signal %q, want 143 SIGTERM", r.st.Code, r.st.Signal)
	}
}

func testStdio(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "tr a-z A-Z; echo to-stderr >&2"}, Stdin: strings.NewReader("hello sandbox\n")})
	if r.out != "HELLO SANDBOX\n" {
		t.Errorf("stdout = %q, want the upper-cased stdin", r.out)
	}
	if r.err != "to-stderr\n" {
		t.Errorf("stderr = %q", r.err)
	}
	if r.st.StdoutBytes != int64(len(r.out)) || r.st.StderrBytes != int64(len(r.err)) {
		t.Errorf("byte counts %d/%d, want %d/%d", r.st.StdoutBytes, r.st.StderrBytes, len(r.out), len(r.err))
	}
	// no stdin given: reads see EOF at once
	r = execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/cat"}})
	if r.out != "" || r.st.Code != 0 {
		t.Errorf("cat with no stdin: %q code %d", r.out, r.st.Code)
	}
}

// testEnv: a command gets the sandbox's base environment and its own.
func testEnv(t *testing.T, f Factory) {
	sb := create(t, f, func(s *runtime.Spec) { s.Env = append(s.Env, "BASE_VAR=base", "BOTH=base") })
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo $BASE_VAR $EXTRA $BOTH"}, Env: []string{"EXTRA=extra", "BOTH=exec"}})
	if r.out != "base extra exec\n" {
		t.Errorf("got %q, want the base and the command's variables, the command's winning", r.out)
	}
}

func testEnvAndDir(t *testing.T, f Factory) {
	sb := create(t, f, func(s *runtime.Spec) { s.Env = append(s.Env, "BASE_VAR=base") })
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo $BASE_VAR $EXTRA; pwd; id -u"}, Env: []string{"EXTRA=extra"}, Dir: "/tmp"})
	if r.out != "base extra\n/tmp\n1000\n" {
		t.Errorf("got %q, want env vars, cwd /tmp and uid 1000", r.out)
	}
	r = shell(t, sb, "pwd")
	if r.out != "/workspace\n" {
		t.Errorf("default cwd %q, want /workspace", r.out)
	}
}

func testNotFound(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	ctx := context.Background()
	_, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"no-such-command-xyz"}})
	if err == nil {
		t.Fatal("exec of a missing command succeeded")
	}
	if !strings.Contains(err.Error(), "not found") {
		t.Errorf("error %q does not say not found", err)
	}
	_, err = sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/bin/true"}, Dir: "/no/such/dir"})
	if err == nil {
		t.Error("exec in a missing directory succeeded")
	}
}

func testBadRequests(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	ctx := context.Background()
	for _, req := range []runtime.ExecRequest{
		{},
		{Argv: []string{""}},
		{Argv: []string{"/bin/true"}, Dir: "relative"},
		{Argv: []string{"/bin/true"}, Timeout: -time.Second},
	} {
		if _, err := sb.Exec(ctx, req); err == nil {
			t.Errorf("exec %+v: want an error", req)
		}
	}
	be, spec := f(t)
	bad := spec
	bad.Limits.MemoryBytes = -1
	if sb, err := be.Create(ctx, bad); err == nil {
		_ = sb.Destroy(ctx)
		t.Error("create with negative memory: want an error")
	}
	bad = spec
	bad.RootFS = "/no/such/template"
	if sb, err := be.Create(ctx, bad); err == nil {
		_ = sb.Destroy(ctx)
		t.Error("create with a missing root filesystem: want an error")
	}
}

func testTimeout(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	start := time.Now()
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "while :; do :; done"}, Timeout: 500 * time.Millisecond})
	if r.st.Limit != runtime.LimitTimeout || r.st.Code != runtime.ExitTimeout {
		t.Errorf("busy loop with timeout: limit %q code %d, want timeout/124", r.st.Limit, r.st.Code)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("timeout took %s", el)
	}
	// the sandbox is still usable
	if r := shell(t, sb, "echo alive"); r.out != "alive\n" {
		t.Errorf("after timeout: %q", r.out)
	}
	// The whole tree dies, also what moved to a session of its own. (The
	// processes carry a mark of this run: a backend that shares the
	// host's /proc, the fake, sees other runs' processes.)
	tree := "tree=" + runtime.NewID()
	r = execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "setsid sh -c '" + tree + "; while :; do :; done' & wait"}, Timeout: 500 * time.Millisecond})
	if r.st.Limit != runtime.LimitTimeout {
		t.Errorf("tree with a new session: limit %q, want timeout", r.st.Limit)
	}
	// And what left the tree by a double fork and the command's process
	// group (job control), in the command's session.
	r = execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "bash -c \"set -m; sh -c '" + tree + "; while :; do :; done' & disown\"; sleep 100"}, Timeout: 500 * time.Millisecond})
	if r.st.Limit != runtime.LimitTimeout {
		t.Errorf("tree with a double fork: limit %q, want timeout", r.st.Limit)
	}
	time.Sleep(300 * time.Millisecond)
	pattern := "[t]" + tree[1:] // (not matching the grep's own shell)
	if r := shell(t, sb, `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '`+pattern+`'`); r.out != "0\n" {
		t.Errorf("after the timeouts, processes of the commands still run: %q", r.out)
	}
}

func testSignal(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo started; sleep 100"}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if p.PID() <= 0 {
		t.Errorf("pid %d", p.PID())
	}
	time.Sleep(200 * time.Millisecond)
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Signal != "SIGKILL" || st.Code != 137 {
		t.Errorf("killed: signal %q code %d", st.Signal, st.Code)
	}
	if !strings.Contains(out.String(), "started") {
		t.Errorf("output before the kill lost: %q", out.String())
	}
}

func testOutputCap(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x"}, OutputLimit: 1000})
	if !r.st.StdoutTruncated || r.st.StdoutBytes != 1000000 {
		t.Errorf("truncated=%v bytes=%d, want true/1000000", r.st.StdoutTruncated, r.st.StdoutBytes)
	}
	if !strings.HasPrefix(r.out, strings.Repeat("x", 1000)) || !strings.Contains(r.out, "truncated") || len(r.out) > 1200 {
		t.Errorf("capped output (%d bytes) lacks the first 1000 bytes or the marker", len(r.out))
	}
}

func testConcurrent(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var o bytes.Buffer
			p, err := sb.Exec(context.Background(), runtime.ExecRequest{Argv: []string{"/bin/echo", fmt.Sprint(i)}, Stdout: &o})
			if err != nil {
				errs <- err
				return
			}
			st, err := p.Wait(context.Background())
			if err != nil || st.Code != 0 || o.String() != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Errorf("exec %d: %v code %d out %q", i, err, st.Code, o.String())
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testIsolated(t *testing.T, f Factory) {
	a := create(t, f, nil)
	b := create(t, f, nil)
	if r := shell(t, a, "echo secret-a > /workspace/a.txt && cat /workspace/a.txt"); r.out != "secret-a\n" {
		t.Fatalf("write in a: %q %q", r.out, r.err)
	}
	if r := shell(t, b, "cat /workspace/a.txt"); r.st.Code == 0 {
		t.Errorf("sandbox b reads a's file: %q", r.out)
	}
	if a.Info().Isolation.UIDBase == b.Info().Isolation.UIDBase && a.Info().Isolation.UIDBase != 0 {
		t.Errorf("two sandboxes share uid base %d", a.Info().Isolation.UIDBase)
	}
	if r := shell(t, a, "hostname"); strings.TrimSpace(r.out) == "" {
		t.Error("no hostname")
	}
}

func testDestroyKillsAll(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	r := shell(t, sb, "setsid sh -c 'sleep 1000 & sleep 1000 &' ; nohup sleep 1000 >/dev/null 2>&1 & echo ok")
	if r.out != "ok\n" {
		t.Fatalf("spawn background: %q %q", r.out, r.err)
	}
	if err := sb.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sb.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after Destroy")
	}
	if err := sb.Destroy(context.Background()); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if _, err := sb.Exec(context.Background(), runtime.ExecRequest{Argv: []string{"/bin/true"}}); err == nil {
		t.Error("exec after destroy succeeded")
	}
}

// testPause: a backend that declares Pause freezes every process of a
// paused sandbox until Resume, and Destroy ends a paused sandbox as it
// ends a running one (on cgroup v1, whose freezer holds back even SIGKILL,
// a backend must thaw it to kill it). That a paused sandbox also dies with
// its owner (DieWithOwner) needs an owner that dies, a daemon: see
// cmd/airlock's TestServeSIGKILLWhilePaused*.
func testPause(t *testing.T, f Factory) {
	be, spec := f(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sb, err := be.Create(ctx, spec)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = sb.Destroy(context.Background()) })
	pz, ok := sb.(runtime.Pauser)
	if be.Capabilities().Pause != ok {
		t.Fatalf("Capabilities().Pause is %v, but %T implementing runtime.Pauser is %v", be.Capabilities().Pause, sb, ok)
	}
	if !ok {
		t.Skip("the backend declares no pause")
	}
	// The sandbox notes the time every 50 ms: a frozen one notes nothing
	// for as long as it is paused.
	bg, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "while :; do date +%s%N >> pause-ticks; sleep 0.05; done"}})
	if err != nil {
		t.Fatal(err)
	}
	ticks := func() []int64 {
		t.Helper()
		r := shell(t, sb, "cat pause-ticks")
		var ts []int64
		for _, f := range strings.Fields(r.out) {
			var n int64
			if _, err := fmt.Sscan(f, &n); err != nil {
				t.Fatalf("read the ticks: %q %q: %v", r.out, r.err, err)
			}
			ts = append(ts, n)
		}
		return ts
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(ticks()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the ticks did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	const paused = 2 * time.Second
	if err := pz.Pause(ctx); err != nil {
		t.Fatalf("pause: %v", err)
	}
	time.Sleep(paused)
	if err := pz.Resume(ctx); err != nil {
		t.Fatalf("resume: %v", err)
	}
	var ts []int64
	deadline = time.Now().Add(10 * time.Second)
	for {
		ts = ticks()
		if gap := maxGap(ts); gap >= paused*3/4 && ts[len(ts)-1]-time.Now().UnixNano() > -int64(time.Second) {
			break // the pause, and a tick since the resume
		}
		if time.Now().After(deadline) {
			t.Fatalf("no gap of %v in the ticks of a sandbox paused for %v (longest %v), or none after the resume", paused*3/4, paused, maxGap(ts))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Destroy of a paused sandbox
	if err := pz.Pause(ctx); err != nil {
		t.Fatalf("second pause: %v", err)
	}
	destroyed := make(chan error, 1)
	go func() { destroyed <- sb.Destroy(context.Background()) }()
	select {
	case err := <-destroyed:
		if err != nil {
			t.Errorf("destroy a paused sandbox: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("destroy of a paused sandbox did not return")
	}
	select {
	case <-sb.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after Destroy of a paused sandbox")
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if _, err := bg.Wait(wctx); errors.Is(err, context.DeadlineExceeded) {
		t.Error("the paused sandbox's command outlived its Destroy")
	}
	if err := pz.Pause(ctx); err == nil {
		t.Error("pause of a destroyed sandbox succeeded")
	}
}

// maxGap is the longest time between two consecutive ticks (ns).
func maxGap(ts []int64) time.Duration {
	var g int64
	for i := 1; i < len(ts); i++ {
		g = max(g, ts[i]-ts[i-1])
	}
	return time.Duration(g)
}

func testLifetime(t *testing.T, f Factory) {
	sb := create(t, f, func(s *runtime.Spec) { s.Limits.Lifetime = 700 * time.Millisecond })
	select {
	case <-sb.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("sandbox outlived its lifetime")
	}
	_, err := sb.Exec(context.Background(), runtime.ExecRequest{Argv: []string{"/bin/true"}})
	if err == nil {
		t.Error("exec after lifetime succeeded")
	}
}

func files(t *testing.T, sb runtime.Sandbox) runtime.Files {
	t.Helper()
	fs, ok := sb.(runtime.Files)
	if !ok {
		t.Fatalf("%T does not implement runtime.Files", sb)
	}
	return fs
}

func testFiles(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	fs := files(t, sb)
	ctx := context.Background()
	data := "line one\n\x00binary\xff\n"
	if n, err := fs.WriteFile(ctx, "/workspace/dir/a.txt", strings.NewReader(data), 0o640, true); err != nil || n != int64(len(data)) {
		t.Fatalf("write: %d %v", n, err)
	}
	var buf bytes.Buffer
	if n, err := fs.ReadFile(ctx, "/workspace/dir/a.txt", &buf, 0); err != nil || n != int64(len(data)) || buf.String() != data {
		t.Fatalf("read back: %d %v %q", n, err, buf.String())
	}
	if _, err := fs.ReadFile(ctx, "/workspace/dir/a.txt", io.Discard, 5); err == nil {
		t.Error("read over the max: want an error")
	}
	// A source that fails part-way fails the write, and leaves no
	// truncated file.
	cut := io.MultiReader(strings.NewReader("twelve bytes"), iotest.ErrReader(errors.New("the client went away")))
	if _, err := fs.WriteFile(ctx, "/workspace/dir/cut.txt", cut, 0o644, false); err == nil || !strings.Contains(err.Error(), "went away") {
		t.Errorf("write from a failing source: %v, want its error", err)
	}
	if _, err := fs.Stat(ctx, "/workspace/dir/cut.txt"); err == nil {
		t.Error("write from a failing source left a file")
	}
	// Over an existing file, it leaves the file as it was (the content is
	// written beside it and renamed over it only once whole).
	cut = io.MultiReader(strings.NewReader("twelve bytes"), iotest.ErrReader(errors.New("the client went away")))
	if _, err := fs.WriteFile(ctx, "/workspace/dir/a.txt", cut, 0o644, false); err == nil {
		t.Error("write from a failing source over a file: no error")
	}
	buf.Reset()
	if _, err := fs.ReadFile(ctx, "/workspace/dir/a.txt", &buf, 0); err != nil || buf.String() != data {
		t.Errorf("a failed write changed the file: %q %v", buf.String(), err)
	}
	if l, err := fs.List(ctx, "/workspace/dir"); err != nil || len(l) != 1 {
		t.Errorf("a failed write left %+v in the directory (%v)", l, err)
	}
	fi, err := fs.Stat(ctx, "/workspace/dir/a.txt")
	if err != nil || fi.Type != "file" || fi.Size != int64(len(data)) || fi.Mode != 0o640 || fi.Name != "a.txt" {
		t.Errorf("stat: %+v %v", fi, err)
	}
	// a command sees it, owned by the command user (find, not stat: the
	// statx of Debian 12's gVisor rejects coreutils' flags), from its
	// default directory, /workspace
	if r := shell(t, sb, "find dir/a.txt -printf '%U %m\\n' && id -u && cat dir/a.txt | head -1"); !fileSeen(r.out) {
		t.Errorf("seen by a command: %q %q, want the command user's uid, mode 640 and the content", r.out, r.err)
	}
	if err := fs.Mkdir(ctx, "/workspace/x/y/z", true); err != nil {
		t.Fatal(err)
	}
	if err := fs.Mkdir(ctx, "/workspace/x", false); err == nil {
		t.Error("mkdir of an existing dir: want an error")
	}
	list, err := fs.List(ctx, "/workspace")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, e := range list {
		names[e.Name] = e.Type
	}
	if names["dir"] != "dir" || names["x"] != "dir" || len(names) != 2 {
		t.Errorf("list: %+v", list)
	}
	var tarball bytes.Buffer
	if _, err := fs.Tar(ctx, "/workspace", &tarball); err != nil {
		t.Fatal(err)
	}
	if err := fs.Untar(ctx, "/tmp", &tarball); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if _, err := fs.ReadFile(ctx, "/tmp/dir/a.txt", &buf, 0); err != nil || buf.String() != data {
		t.Errorf("tar round trip: %v %q", err, buf.String())
	}
	if err := fs.Remove(ctx, "/workspace/x", false); err == nil {
		t.Error("non-recursive remove of a full dir: want an error")
	}
	if err := fs.Remove(ctx, "/workspace/x", true); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(ctx, "/workspace/x"); err == nil {
		t.Error("removed dir still there")
	}
	for _, bad := range []string{"", "relative/path", "/workspace/\x00x"} {
		if _, err := fs.Stat(ctx, bad); err == nil {
			t.Errorf("stat %q: want an error", bad)
		}
	}
	if _, err := fs.Stat(ctx, "/workspace/missing"); err == nil {
		t.Error("stat of a missing file: want an error")
	}
}

// fileSeen checks the "uid mode", "uid" and "line one" lines of testFiles.
func fileSeen(out string) bool {
	l := strings.Split(out, "\n")
	return len(l) == 4 && l[0] == l[1]+" 640" && l[2] == "line one" && l[3] == ""
}

// testFilesStayInside: paths given to the file API are resolved inside
// the sandbox, with the command user's rights, whatever the sandbox
// planted: a host path is never reached, and nothing is written through
// a symlink.
func testFilesStayInside(t *testing.T, f Factory) {
	host := t.TempDir()
	canary := host + "/canary"
	if err := os.WriteFile(canary, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := create(t, f, nil)
	fs := files(t, sb)
	ctx := context.Background()
	// planted from the default directory, /workspace
	r := shell(t, sb, "ln -s "+host+" hostdir && ln -s /etc/passwd passwd-link && ln -s /proc/1/root agent-root && echo ok")
	if r.out != "ok\n" {
		t.Fatalf("plant symlinks: %q %q", r.out, r.err)
	}
	var buf bytes.Buffer
	if _, err := fs.ReadFile(ctx, "/workspace/hostdir/canary", &buf, 0); err == nil || strings.Contains(buf.String(), "host secret") {
		t.Errorf("read through a symlink to a host path: %v %q", err, buf.String())
	}
	if _, err := fs.ReadFile(ctx, "/workspace/../../../.."+canary, &buf, 0); err == nil {
		t.Errorf("read of the host path through ..: %q", buf.String())
	}
	if _, err := fs.WriteFile(ctx, "/workspace/passwd-link", strings.NewReader("pwned"), 0o644, false); err == nil {
		t.Error("write through a planted symlink succeeded")
	}
	if _, err := fs.WriteFile(ctx, "/etc/passwd", strings.NewReader("pwned"), 0o644, false); err == nil {
		t.Error("write to the template's /etc/passwd succeeded")
	}
	if _, err := fs.WriteFile(ctx, "/workspace/agent-root/etc/x", strings.NewReader("x"), 0o644, false); err == nil {
		t.Error("write through /proc/1/root succeeded")
	}
	if _, err := fs.ReadFile(ctx, "/proc/1/environ", &buf, 0); err == nil {
		t.Error("read of the agent's environment succeeded")
	}
	if r := shell(t, sb, "cat /etc/passwd | grep -c pwned"); strings.TrimSpace(r.out) != "0" {
		t.Errorf("/etc/passwd changed: %q", r.out)
	}
	if b, _ := os.ReadFile(canary); string(b) != "host secret" {
		t.Errorf("host canary changed: %q", b)
	}
}

func testTTY(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "tty; stty size; test -t 0 && test -t 1 && echo isatty; echo to-stderr >&2"}, TTY: true, Rows: 40, Cols: 100})
	for _, want := range []string{"/dev/pts/", "40 100", "isatty", "to-stderr"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("terminal output %q lacks %q", r.out, want)
		}
	}
	if r.st.Code != 0 {
		t.Errorf("exit %d", r.st.Code)
	}
	r = execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "read x; echo got:$x"}, TTY: true, Stdin: strings.NewReader("typed\n")})
	if !strings.Contains(r.out, "got:typed") {
		t.Errorf("typed input: %q", r.out)
	}
	// resize while it runs
	var out bytes.Buffer
	ctx := context.Background()
	p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "sleep 0.5; stty size"}, TTY: true, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	rz, ok := p.(runtime.Resizer)
	if !ok {
		t.Fatalf("%T is not a runtime.Resizer", p)
	}
	if err := rz.Resize(50, 120); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "50 120") {
		t.Errorf("after resize: %q", out.String())
	}
}

// testOutputWithBackgroundChild: a background child holding the pipes
// neither hangs Wait nor loses what the command itself printed.
func testOutputWithBackgroundChild(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	start := time.Now()
	r := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo before; sleep 30 & echo after"}})
	if r.out != "before\nafter\n" {
		t.Errorf("output: %q", r.out)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Wait took %s with a background child holding the pipes", el)
	}
	tty := execWait(t, sb, runtime.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo on-tty; sleep 30 &"}, TTY: true})
	if !strings.Contains(tty.out, "on-tty") {
		t.Errorf("terminal output: %q", tty.out)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("terminal Wait took %s with a background child holding the terminal", el)
	}
}

// testWriteScope: a backend that offers runtime.WriteScoper confines every
// later command and file operation to the scope and the scratch places,
// leaves reads alone, and refuses bad paths; one that cannot enforce it
// says so (ErrUnsupported). A backend that declares the difference
// (unsupported: the reason) must refuse every scope with ErrUnsupported,
// and writes must stay as without a scope.
func testWriteScope(t *testing.T, f Factory, unsupported string) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"src/a.go": "package a\n", "README.md": "readme\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sb := create(t, f, func(s *runtime.Spec) { s.Workspace = ws })
	scoper, ok := sb.(runtime.WriteScoper)
	if !ok {
		t.Skipf("%T has no write scope", sb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, bad := range []string{"src", "/workspace/../etc", "/etc"} {
		if _, err := scoper.RestrictWrites(ctx, []string{bad}); !errors.Is(err, errdefs.ErrInvalid) && !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("RestrictWrites(%q) = %v, want an invalid argument error", bad, err)
		}
	}
	info, err := scoper.RestrictWrites(ctx, []string{"/workspace/src", "/workspace/newdir"})
	if unsupported != "" {
		if !errors.Is(err, errdefs.ErrUnsupported) {
			t.Fatalf("declared unsupported (%s), but RestrictWrites = %+v, %v", unsupported, info, err)
		}
		if r := shell(t, sb, "echo x > /workspace/README.md && echo y > /workspace/src/b.go"); r.st.Code != 0 {
			t.Errorf("writes after the refused scope: exit %d %q", r.st.Code, r.err)
		}
		if sb.Info().Isolation.WriteScope != nil {
			t.Errorf("Info reports a write scope after it was refused")
		}
		t.Logf("declared difference: %s", unsupported)
		return
	}
	if errors.Is(err, errdefs.ErrUnsupported) {
		t.Skipf("write scopes unsupported here: %v", err)
	}
	if err != nil {
		t.Fatalf("RestrictWrites: %v", err)
	}
	if want := []string{"/workspace/newdir", "/workspace/src"}; !slices.Equal(info.Paths, want) {
		t.Errorf("scope paths %q, want %q", info.Paths, want)
	}
	r := shell(t, sb, `set -e; cd /workspace/src; echo x >> a.go; echo y > b.go; mkdir d; mv b.go d/; rm -r d
		echo z > /workspace/newdir/f; echo t > /tmp/t; echo h > "$HOME/h"; cat /workspace/README.md`)
	if r.st.Code != 0 || r.out != "readme\n" {
		t.Errorf("writes inside the scope and scratch places, reads outside: exit %d %q %q", r.st.Code, r.out, r.err)
	}
	for _, cmd := range []string{
		"echo x > /workspace/README.md", "touch /workspace/x", "rm /workspace/README.md", "mkdir /workspace/d",
		"mv /workspace/README.md /workspace/src/", "ln /workspace/README.md /workspace/src/l", "mv /workspace/src/a.go /workspace/",
	} {
		if r := shell(t, sb, cmd); r.st.Code == 0 {
			t.Errorf("%q outside the write scope succeeded", cmd)
		}
	}
	fs := files(t, sb)
	if _, err := fs.WriteFile(ctx, "/workspace/src/api.txt", strings.NewReader("api"), 0o644, false); err != nil {
		t.Errorf("file API write inside the scope: %v", err)
	}
	if _, err := fs.WriteFile(ctx, "/workspace/api.txt", strings.NewReader("api"), 0o644, false); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("file API write outside the scope: %v, want a denied error", err)
	}
	if r := shell(t, sb, "ls -A /workspace; cat /workspace/README.md"); r.out != "README.md\nnewdir\nsrc\nreadme\n" {
		t.Errorf("workspace after the refused writes: %q", r.out)
	}
	// narrower, never wider
	info, err = scoper.RestrictWrites(ctx, []string{"/workspace/newdir", "/workspace/other"})
	if err != nil || !slices.Equal(info.Paths, []string{"/workspace/newdir"}) {
		t.Errorf("second RestrictWrites: %+v %v, want only /workspace/newdir", info, err)
	}
	if r := shell(t, sb, "echo x >> /workspace/src/a.go"); r.st.Code == 0 {
		t.Error("write to a path the second scope left out succeeded")
	}
	if r := shell(t, sb, "echo x >> /workspace/newdir/f && ! test -e /workspace/other"); r.st.Code != 0 {
		t.Errorf("second scope: exit %d %q", r.st.Code, r.err)
	}
}

// testFileActivity: a backend that reports file activity (ExitStatus.Files)
// names what each command wrote, deleted, chmodded and read under
// /workspace and the home directory, as sorted absolute paths, and nothing
// elsewhere.
func testFileActivity(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	r := shell(t, sb, "echo a > /workspace/a.txt && echo b > /workspace/b.txt && echo h > $HOME/h.txt && echo t > /tmp/t.txt")
	fa := r.st.Files
	if fa == nil {
		t.Skip("the backend does not report file activity")
	}
	check := func(what string, fa *runtime.FileActivity, list []string, want ...string) {
		t.Helper()
		if !slices.IsSorted(list) {
			t.Errorf("%s: %q not sorted", what, list)
		}
		for _, w := range want {
			if !slices.Contains(list, w) {
				t.Errorf("%s: %q lacks %s (activity %+v)", what, list, w, *fa)
			}
		}
		for _, p := range list {
			if !strings.HasPrefix(p, "/workspace/") && !strings.HasPrefix(p, "/home/") {
				t.Errorf("%s: %s is neither in the workspace nor in the home directory", what, p)
			}
		}
	}
	check("written", fa, fa.Written, "/workspace/a.txt", "/workspace/b.txt", "/home/sandbox/h.txt")
	if fa.Shared || fa.Incomplete {
		t.Errorf("a lone command: %+v, want neither shared nor incomplete", *fa)
	}
	r = shell(t, sb, "rm /workspace/b.txt && chmod 600 /workspace/a.txt && cat /workspace/a.txt $HOME/h.txt >/dev/null")
	if fa = r.st.Files; fa == nil {
		t.Fatal("file activity reported once, not twice")
	}
	check("deleted", fa, fa.Deleted, "/workspace/b.txt")
	check("chmod", fa, fa.Chmod, "/workspace/a.txt")
	check("read", fa, fa.Read, "/home/sandbox/h.txt")
	if slices.Contains(fa.Written, "/workspace/a.txt") || slices.Contains(fa.Written, "/workspace/b.txt") {
		t.Errorf("written %q: the command wrote nothing", fa.Written)
	}
	// Spec.NoFileActivity turns it off.
	off := create(t, f, func(s *runtime.Spec) { s.NoFileActivity = true })
	if r := shell(t, off, "echo a > /workspace/a.txt"); r.st.Code != 0 || r.st.Files != nil {
		t.Errorf("NoFileActivity: exit %d, activity %+v; want 0 and none", r.st.Code, r.st.Files)
	}
}

// testSweep: Sweep ends a running command and what earlier commands left
// running (a setsid'd orphan that would otherwise change files later), and
// the sandbox takes commands again afterwards.
func testSweep(t *testing.T, f Factory) {
	sb := create(t, f, nil)
	sw, ok := sb.(runtime.Sweeper)
	if !ok {
		t.Skip("the backend cannot sweep")
	}
	// The orphan's shell carries a mark of this run (its $0): a backend
	// that shares the host's /proc (the fake) sees other runs' orphans.
	mark := "sweep-" + runtime.NewID()
	r := shell(t, sb, "setsid sh -c 'while :; do sleep 0.05; echo late >> orphan; done' "+mark+" </dev/null >/dev/null 2>&1 & echo left")
	if r.out != "left\n" {
		t.Fatalf("leave an orphan: %q", r.out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"sleep", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := sw.Sweep(ctx)
	if err != nil || n < 2 {
		t.Fatalf("sweep: %d %v (want the orphan's processes and the sleep)", n, err)
	}
	st, err := p.Wait(ctx)
	if err != nil || st.Signal != "SIGKILL" && st.Code != 137 {
		t.Errorf("the running command after the sweep: %+v %v", st, err)
	}
	before := shell(t, sb, "wc -c < orphan").out
	time.Sleep(300 * time.Millisecond)
	if after := shell(t, sb, "wc -c < orphan").out; after != before {
		t.Errorf("the orphan still writes after the sweep: %q then %q", before, after)
	}
	// (the bracket keeps the pattern from matching the grep's own shell)
	pattern := "[" + mark[:1] + "]" + mark[1:]
	if r := shell(t, sb, `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '`+pattern+`'`); r.out != "0\n" {
		t.Errorf("the orphan's processes after the sweep: %q", r.out)
	}
}
