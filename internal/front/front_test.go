package front

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func testCore(data string) Core {
	sum := sha256.Sum256([]byte(data))
	return Core{Data: data, Sum: hex.EncodeToString(sum[:])}
}

func coreDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "bin")
	t.Setenv(DirEnv, d)
	return d
}

func TestPathWritesTheCoreOnceReadOnly(t *testing.T) {
	dir := coreDir(t)
	c := testCore("#!/bin/sh\necho core\n")
	p, err := c.Path()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p) != dir || !strings.HasPrefix(filepath.Base(p), "airlock-core-"+c.Sum[:20]) {
		t.Fatalf("core at %s, want content-addressed in %s", p, dir)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o555 {
		t.Fatalf("core mode %v, want 0555", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(p); string(b) != c.Data {
		t.Fatalf("core content %q", b)
	}
	// A second call re-uses the file: same inode, nothing rewritten.
	before := fi.Sys()
	p2, err := c.Path()
	if err != nil || p2 != p {
		t.Fatalf("second Path: %s %v", p2, err)
	}
	fi2, _ := os.Stat(p)
	if !os.SameFile(fi, fi2) {
		t.Fatalf("core rewritten: %v then %v", before, fi2.Sys())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d files, want the core alone", len(ents))
	}
}

// An attacker (or an accident) who can put a file of the right name in
// place with the wrong mode gets it replaced, not run.
func TestAWritableCoreIsReplaced(t *testing.T) {
	dir := coreDir(t)
	c := testCore("the real core")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, c.Name())
	fake := strings.Repeat("x", len(c.Data)) // same size
	if err := os.WriteFile(planted, []byte(fake), 0o777); err != nil {
		t.Fatal(err)
	}
	p, err := c.Path()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != c.Data {
		t.Fatalf("planted world-writable core kept: %q", b)
	}
}

// A core of another size (a truncated write by an older version) is
// replaced too.
func TestATruncatedCoreIsReplaced(t *testing.T) {
	dir := coreDir(t)
	c := testCore("the real core, whole")
	_ = os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, c.Name()), []byte("the real"), 0o555); err != nil {
		t.Fatal(err)
	}
	p, err := c.Path()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != c.Data {
		t.Fatalf("truncated core kept: %q", b)
	}
}

func TestADirectoryOthersCanWriteIsRefused(t *testing.T) {
	dir := coreDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	c := testCore("core")
	if _, err := c.Path(); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Fatalf("a world-writable core directory: %v", err)
	}
	// also once a trusted core is already in it
	_ = os.Chmod(dir, 0o755)
	if _, err := c.Path(); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o777)
	if _, err := c.Path(); err == nil {
		t.Fatal("a core in a directory that became world-writable was run")
	}
}

func TestASymlinkedDirectoryIsRefused(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	_ = os.Mkdir(real, 0o755)
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv(DirEnv, link)
	if _, err := testCore("core").Path(); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a symlinked core directory: %v", err)
	}
}

func TestADamagedEmbeddedCoreIsRefused(t *testing.T) {
	coreDir(t)
	c := testCore("core")
	c.Data = "c0re" // the checksum no longer matches
	if _, err := c.Path(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a core that does not match its checksum: %v", err)
	}
	c.Sum = "short"
	if _, err := c.Path(); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a core with no valid checksum: %v", err)
	}
}

func TestNoCoreNeedsAirlockCore(t *testing.T) {
	t.Setenv(PathEnv, "")
	if _, err := (Core{}).Path(); !errors.Is(err, ErrNoCore) {
		t.Fatalf("no core: %v", err)
	}
	t.Setenv(PathEnv, "/some/core")
	if p, err := (Core{}).Path(); err != nil || p != "/some/core" {
		t.Fatalf("AIRLOCK_CORE: %s %v", p, err)
	}
}

// Starts racing to write the same core all find a whole file.
func TestConcurrentFirstStartsSeeAWholeCore(t *testing.T) {
	dir := coreDir(t)
	c := testCore(strings.Repeat("0123456789abcdef", 1<<16)) // 1 MiB
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := c.Path()
			if err == nil {
				var b []byte
				if b, err = os.ReadFile(p); err == nil && string(b) != c.Data {
					err = errors.New("partial core")
				}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("%d files left, want the core alone", len(ents))
	}
}

func TestPruneKeepsRecentAndRunningCores(t *testing.T) {
	dir := coreDir(t)
	_ = os.MkdirAll(dir, 0o755)
	old := filepath.Join(dir, "airlock-core-0000old")
	recent := filepath.Join(dir, "airlock-core-0000new")
	other := filepath.Join(dir, "unrelated")
	for _, p := range []string{old, recent, other} {
		if err := os.WriteFile(p, []byte("x"), 0o555); err != nil {
			t.Fatal(err)
		}
	}
	longAgo := time.Now().Add(-48 * time.Hour)
	_ = os.Chtimes(old, longAgo, longAgo)
	_ = os.Chtimes(other, longAgo, longAgo)
	c := testCore("current")
	if _, err := c.Path(); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{old: false, recent: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// A daemon of the old version still runs from its core: that file stays.
func TestPruneKeepsACoreAProcessRuns(t *testing.T) {
	dir := coreDir(t)
	_ = os.MkdirAll(dir, 0o755)
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Skip("no /bin/sleep to stand in for an old core")
	}
	old := filepath.Join(dir, "airlock-core-0000running")
	if err := os.WriteFile(old, sleep, 0o555); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(old, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	longAgo := time.Now().Add(-48 * time.Hour)
	_ = os.Chtimes(old, longAgo, longAgo)
	if _, err := testCore("current").Path(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("the core a process runs was pruned: %v", err)
	}
}
