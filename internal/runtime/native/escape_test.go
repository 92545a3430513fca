package native

// The escape suite: hostile programs run inside native sandboxes and every
// test asserts that the action is denied (see the threat model, cases
// "Filesystem", "Privilege and processes", "Resources" and "Network").
// The hostile actions themselves live in testdata/probe, a static Go
// program that prints one JSON line per case; the tests here parse it.
//
// The files:
//
//	escape_test.go       shared helpers
//	escape_fs_test.go    filesystem cases
//	escape_proc_test.go  privilege, syscall and process cases
//	escape_res_test.go   resource limits
//	escape_budget_test.go per-user kernel budgets (inotify, signals)
//	escape_owner_test.go who owns the sandbox's user namespace
//	escape_net_test.go   network: no route out

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// probeResult is the probe's JSON line.
type probeResult struct {
	Case   string `json:"case"`
	OK     bool   `json:"ok"`
	Errno  string `json:"errno"`
	Detail string `json:"detail"`
	N      int64  `json:"n"`
}

func (p probeResult) String() string {
	s := fmt.Sprintf("%s: ok=%v errno=%s", p.Case, p.OK, p.Errno)
	if p.N != 0 {
		s += " n=" + strconv.FormatInt(p.N, 10)
	}
	if p.Detail != "" {
		d := p.Detail
		if len(d) > 300 {
			d = d[:300] + "..."
		}
		s += " (" + d + ")"
	}
	return s
}

// runProbe runs /workspace/probe with args in sb. found is false when the
// probe printed no JSON line (it was killed, or failed to start).
func runProbe(t testing.TB, sb runtime.Sandbox, args ...string) (pr probeResult, res result, found bool) {
	t.Helper()
	res = run(t, sb, runtime.ExecRequest{Argv: append([]string{"/workspace/probe"}, args...)})
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &pr) == nil {
			return pr, res, true
		}
	}
	return pr, res, false
}

// mustProbe is runProbe for cases that always print a result.
func mustProbe(t testing.TB, sb runtime.Sandbox, args ...string) probeResult {
	t.Helper()
	pr, res, ok := runProbe(t, sb, args...)
	if !ok {
		t.Fatalf("probe %q printed no result: status %+v stdout %q stderr %q", args, res.Status, res.Stdout, res.Stderr)
	}
	return pr
}

// assertDenied fails the test unless the probe case failed with one of the
// accepted errnos. Success is always a failure.
func assertDenied(t testing.TB, pr probeResult, accepted ...string) {
	t.Helper()
	if testing.Verbose() {
		t.Logf("denied? %s", pr)
	}
	if pr.OK {
		t.Errorf("ESCAPE: hostile action succeeded: %s", pr)
		return
	}
	if len(accepted) > 0 && !slices.Contains(accepted, pr.Errno) {
		t.Errorf("%s: want one of %v", pr, accepted)
	}
}

// Error sets that are a denial.
var (
	errPerm   = []string{"EPERM"}
	errPermOr = func(extra ...string) []string { return append([]string{"EPERM"}, extra...) }
	// errFSDenied: what writing where one may not write returns.
	errFSDenied = []string{"EACCES", "EPERM", "EROFS"}
)

func randHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// hashTree hashes every entry below dir (path, type, mode, owner, symlink
// target, content) without following symlinks.
func hashTree(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%q %v", rel, info.Mode())
		if st, ok := statOwner(info); ok {
			fmt.Fprintf(h, " %s", st)
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, " -> %q", target)
		case info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		fmt.Fprintln(h)
		return nil
	})
	if err != nil {
		t.Fatalf("hash %s: %v", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hashFile(t testing.TB, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// createMu serialises the suite's sandbox creations and destructions with
// each other and with the Reap that every New runs: a concurrent Reap can
// take a sandbox being created for a leftover (see TestEscapeProcReapRace,
// which shows that bug on purpose). Commands still run in parallel.
var createMu sync.Mutex

// escSandbox is newSandbox under createMu.
func escSandbox(t *testing.T, mutate func(*runtime.Spec)) runtime.Sandbox {
	t.Helper()
	// (A skip or failure inside newSandbox must not leave the lock held.)
	sb := func() runtime.Sandbox {
		createMu.Lock()
		defer createMu.Unlock()
		return newSandbox(t, mutate)
	}()
	t.Cleanup(func() {
		createMu.Lock()
		defer createMu.Unlock()
		// newSandbox's own cleanup runs next and reports the error
		_ = sb.Destroy(context.Background())
	})
	return sb
}

// impl returns the native sandbox behind the interface.
func impl(t testing.TB, sb runtime.Sandbox) *sandbox {
	t.Helper()
	s, ok := sb.(*sandbox)
	if !ok {
		t.Fatalf("sandbox is a %T, not the native one", sb)
	}
	return s
}

func statOwner(info fs.FileInfo) (string, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%d:%d", st.Uid, st.Gid), true
}
