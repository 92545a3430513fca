package review

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/lockfile"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Package evidence: a command the policy classes as a dependency change
// gets its lockfiles read (from its working directory and /workspace)
// before it runs and after it ends; what changed is recorded as a
// package.change event per lockfile: the manager, the packages added,
// removed and changed with their versions, the registry hosts the
// command's process tree reached through the egress proxy, and the
// lockfile's diff.

// maxLockfile bounds a lockfile read for evidence.
const maxLockfile = 16 << 20

// installScriptEnv makes package managers skip install scripts.
func installScriptEnv(p *policy.Policy) []string {
	if p == nil || p.InstallScripts != policy.Deny {
		return nil
	}
	return []string{
		"npm_config_ignore_scripts=true", // npm, pnpm, yarn v1
		"YARN_ENABLE_SCRIPTS=false",      // yarn berry
		"PIP_ONLY_BINARY=:all:",          // pip: no building (running) of source packages
	}
}

// lockSnapshot is what a dependency command's lockfiles held before it.
type lockSnapshot struct {
	files map[string][]byte // absolute path -> content (nil: absent)
	mu    sync.Mutex
	hosts map[string]bool // registry hosts reached, from the egress record
	// blocked: the policy's install_scripts deny set the managers' env;
	// override: the command line turned scripts back on (npm's
	// --ignore-scripts=false), which the evidence names.
	blocked, override bool
}

func lockCandidates(cwd string, a *policy.Analysis) []string {
	var out []string
	dirs := []string{cwd, "/workspace"}
	if a != nil {
		for _, c := range a.Commands {
			if c.Dir != "" && slices.Contains(c.Classes, policy.Dependency) && !slices.Contains(dirs, c.Dir) && len(dirs) < 8 {
				dirs = append(dirs, c.Dir)
			}
		}
	}
	for _, dir := range dirs {
		for _, n := range lockfile.Names {
			p := path.Join(dir, n)
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func readLockfiles(ctx context.Context, f runtime.Files, paths []string) map[string][]byte {
	out := map[string][]byte{}
	for _, p := range paths {
		fi, err := f.Stat(ctx, p)
		if err != nil || fi.Type != "file" || fi.Size > maxLockfile {
			out[p] = nil
			continue
		}
		var b bytes.Buffer
		if _, err := f.ReadFile(ctx, p, &b, maxLockfile); err != nil {
			out[p] = nil
			continue
		}
		out[p] = b.Bytes()
	}
	return out
}

// sandboxFiles is the file API of sandbox id while it may be used; nil:
// none (not running, or a backend without one).
func (r *Review) sandboxFiles(ctx context.Context, id string) runtime.Files {
	sb, err := r.c.Runtime(ctx, id)
	if err != nil {
		return nil
	}
	f, _ := sb.(runtime.Files)
	return f
}

// snapLockfiles reads the lockfiles a dependency command may change; nil:
// they cannot be read (the command then runs without evidence, as on a
// backend without a file API; a sandbox that stopped runs nothing).
func (r *Review) snapLockfiles(ctx context.Context, id, cwd string, a *policy.Analysis) *lockSnapshot {
	f := r.sandboxFiles(ctx, id)
	if f == nil {
		return nil
	}
	return &lockSnapshot{files: readLockfiles(ctx, f, lockCandidates(cwd, a)), hosts: map[string]bool{}}
}

// NoteEgress remembers a registry host the exec reached
// (hook.EgressNoter).
func (s *lockSnapshot) NoteEgress(host string) {
	s.mu.Lock()
	s.hosts[host] = true
	s.mu.Unlock()
}

// packageEvidence records what a dependency command did to its lockfiles.
func (r *Review) packageEvidence(ctx context.Context, sandboxID, taskID, execID string, argv []string, snap *lockSnapshot) {
	f := r.sandboxFiles(ctx, sandboxID)
	if f == nil {
		return
	}
	paths := make([]string, 0, len(snap.files))
	for p := range snap.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	after := readLockfiles(ctx, f, paths)
	snap.mu.Lock()
	var hosts []string
	for h := range snap.hosts {
		hosts = append(hosts, h)
	}
	snap.mu.Unlock()
	sort.Strings(hosts)
	command := r.c.Redactor().String(strings.Join(argv, " "))
	for _, p := range paths {
		was, now := snap.files[p], after[p]
		if bytes.Equal(was, now) {
			continue
		}
		payload := changePayload(ctx, p, was, now)
		payload["command"], payload["registries"] = command, hosts
		if s := newScripts(p, was, now); s != nil {
			payload["install_scripts"] = map[string]any{"packages": s, "ran": !snap.blocked || snap.override, "override": snap.override}
		}
		_ = r.c.Record(context.WithoutCancel(ctx), audit.Entry{SandboxID: sandboxID, TaskID: taskID, ExecID: execID, Kind: "package.change", Payload: payload})
	}
}

// changePayload is a package.change event's account of lockfile p going
// from was to now (nil: absent): the packages added, removed and changed
// (or why they could not be read), the hashes and the diff.
func changePayload(ctx context.Context, p string, was, now []byte) map[string]any {
	payload := map[string]any{"lockfile": p, "manager": lockfile.Manager(p), "before_sha256": sum(was), "after_sha256": sum(now)}
	bp, berr := lockfile.Parse(p, was)
	ap, aerr := lockfile.Parse(p, now)
	switch {
	case was == nil && aerr == nil:
		payload["changes"] = lockfile.Diff(lockfile.Packages{}, ap)
	case now == nil && berr == nil:
		payload["changes"] = lockfile.Diff(bp, lockfile.Packages{})
	case berr == nil && aerr == nil:
		payload["changes"] = lockfile.Diff(bp, ap)
	default:
		payload["parse_error"] = errorText(berr, aerr)
	}
	if ch, ok := payload["changes"].([]lockfile.Change); ok {
		if h := newHashes(p, now, ch); len(h) > 0 {
			payload["hashes"] = h
		}
	}
	if d := unifiedDiff(ctx, p, was, now); d != "" {
		payload["diff"] = audit.Blob([]byte(d))
	}
	return payload
}

// newHashes are the content hashes lockfile p (now) gives for the
// versions its change added ("name@version" -> the hashes the package
// manager checks downloads against); a version it gives none for is
// absent.
func newHashes(p string, now []byte, changes []lockfile.Change) map[string]string {
	all, ok, err := lockfile.Integrity(p, now)
	if !ok || err != nil {
		return nil
	}
	out := map[string]string{}
	for _, c := range changes {
		for _, v := range c.To {
			if h := all[c.Name+"@"+v]; h != "" {
				out[c.Name+"@"+v] = h
			}
		}
	}
	return out
}

func errorText(errs ...error) string {
	for _, e := range errs {
		if e != nil {
			return e.Error()
		}
	}
	return ""
}

func sum(b []byte) string {
	if b == nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// maxDiff caps a recorded lockfile diff.
const maxDiff = 1 << 20

// unifiedDiff is git's diff of two versions of a file (host git, on
// temporary copies).
func unifiedDiff(ctx context.Context, name string, before, after []byte) string {
	dir, err := os.MkdirTemp("", "airlock-lockdiff-")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(dir)
	a, b := filepath.Join(dir, "a", path.Base(name)), filepath.Join(dir, "b", path.Base(name))
	for _, x := range []struct {
		p    string
		data []byte
	}{{a, before}, {b, after}} {
		if x.data == nil {
			continue
		}
		_ = os.MkdirAll(filepath.Dir(x.p), 0o700)
		if os.WriteFile(x.p, x.data, 0o600) != nil {
			return ""
		}
	}
	from, to := a, b
	if before == nil {
		from = os.DevNull
	}
	if after == nil {
		to = os.DevNull
	}
	cmd := exec.CommandContext(ctx, "git", "diff", "--no-index", "--no-color", "--no-ext-diff", "--", from, to)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, _ := cmd.Output() // exit 1: the files differ
	d := strings.ReplaceAll(string(out), dir+"/", "")
	if len(d) > maxDiff {
		d = d[:maxDiff] + "\n[diff cut at 1 MiB]\n"
	}
	return d
}

// newScripts are the packages with install scripts that lockfile p
// gained (nil: none, or a lockfile that does not say).
func newScripts(p string, was, now []byte) []string {
	after, ok, err := lockfile.InstallScripts(p, now)
	if !ok || err != nil || len(after) == 0 {
		return nil
	}
	before, _, _ := lockfile.InstallScripts(p, was)
	var out []string
	for _, s := range after {
		if !slices.Contains(before, s) {
			out = append(out, s)
		}
	}
	return out
}

// scriptsOverride says whether argv turns install scripts back on
// against the daemon's env (npm, pnpm and yarn v1 read the flag).
func scriptsOverride(argv []string) bool {
	for i, a := range argv {
		if a == "--ignore-scripts=false" || a == "--ignore-scripts" && i+1 < len(argv) && argv[i+1] == "false" {
			return true
		}
	}
	return false
}

// cachePlaces are where package managers keep their caches and scratch:
// writes there by a dependency command are expected.
var cachePlaces = []string{"/tmp/", "/var/tmp/", "/home/sandbox/.npm/", "/home/sandbox/.cache/", "/home/sandbox/go/pkg/",
	"/home/sandbox/.local/share/pnpm/", "/home/sandbox/.yarn/", "/home/sandbox/.cargo/registry/"}

// maxFlagged bounds the flagged writes one event names.
const maxFlagged = 50

// flaggedWrites are a dependency command's writes that dependency code
// has no business making (issue 19: an install script wrote 18
// .git/hooks files and nothing flagged it): into the repository's .git,
// or outside the project and the managers' caches.
func flaggedWrites(fa *runtime.FileActivity) []string {
	if fa == nil {
		return nil
	}
	var out []string
	for _, w := range fa.Written {
		inGit := strings.HasPrefix(w, "/workspace/.git/")
		inProject := strings.HasPrefix(w, "/workspace/")
		cached := slices.ContainsFunc(cachePlaces, func(c string) bool { return strings.HasPrefix(w, c) })
		if (inGit || !inProject && !cached) && len(out) < maxFlagged {
			out = append(out, w)
		}
	}
	return out
}
