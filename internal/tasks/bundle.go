package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/gitbundle"
)

// A task from a bundle: the client sends its repository in the request
// (a git bundle: refs and a pack, no config, no hooks), for a repository
// the daemon cannot reach (an agent's local one). The daemon keeps it
// in the task's directory, refuses a bundle that is too big, names
// anything but branches and tags, needs commits it does not carry or is
// partial (internal/gitbundle), has git verify it in an empty repository,
// then clones it as it clones a remote, fscks the objects it brought and
// bounds the files of the commit before checking it out.

// cloneSource is where a task's base is cloned from.
type cloneSource struct {
	src    string   // what git clones
	opts   []string // git options that hold the clone to it
	local  bool     // a path on the daemon's host
	bundle *BundleInfo
}

func (tk *Tasks) maxBundle() int64 {
	if tk.cfg.MaxBundle > 0 {
		return tk.cfg.MaxBundle
	}
	return DefaultMaxBundle
}

func (tk *Tasks) maxCheckout() int64 {
	if tk.cfg.MaxCheckout > 0 {
		return tk.cfg.MaxCheckout
	}
	return DefaultMaxCheckout
}

// bundleName is how the record names a bundle's repository.
func bundleName(sum string) string { return "bundle:sha256:" + sum }

// bundleSource takes req.Bundle into the task's directory, checks it
// and records the decision (fetch.request, rule bundle: nothing is
// fetched, but every task's source is on the record).
func (tk *Tasks) bundleSource(ctx context.Context, id string, req *TaskRequest, door string) (*cloneSource, error) {
	path, info, err := tk.takeBundle(ctx, id, req.Bundle)
	d := fetchDecision{allow: err == nil, rule: "bundle", reason: "the repository came in the request as a git bundle"}
	name := "bundle"
	if info != nil {
		name = bundleName(info.SHA256)
	}
	if err != nil {
		d.reason = err.Error()
	}
	if rerr := tk.c.Record(ctx, audit.Entry{TaskID: id, Kind: "fetch.request", Payload: d.payload(name, door)}); rerr != nil {
		return nil, rerr
	}
	if err != nil {
		return nil, err
	}
	req.Repo = name
	// The bundle transport is git's file transport; no other is allowed.
	opts := []string{"-c", "protocol.allow=never", "-c", "protocol.file.allow=always", "-c", "transfer.fsckObjects=true"}
	return &cloneSource{src: path, opts: opts, bundle: info}, nil
}

// takeBundle writes r to the task's directory (at most maxBundle bytes,
// hashed on the way), then checks its header and has git verify it.
func (tk *Tasks) takeBundle(ctx context.Context, id string, r io.Reader) (string, *BundleInfo, error) {
	path := filepath.Join(tk.dir(id), "repo.bundle")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", nil, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, tk.maxBundle()+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return "", nil, fmt.Errorf("read the bundle: %w", err)
		}
		// A client that went away or sent a broken body: its error.
		return "", nil, fmt.Errorf("read the bundle: %v: %w", err, errdefs.ErrInvalid)
	}
	if n > tk.maxBundle() {
		return "", nil, fmt.Errorf("the bundle is more than %d bytes (the daemon's bound): %w", tk.maxBundle(), errdefs.ErrLimitExceeded)
	}
	info := &BundleInfo{SHA256: hex.EncodeToString(h.Sum(nil)), Bytes: n}
	f, err = os.Open(path)
	if err != nil {
		return "", info, err
	}
	hdr, err := gitbundle.ReadHeader(f)
	f.Close()
	if err == nil {
		err = hdr.Check()
	}
	if err != nil {
		return "", info, err
	}
	// git bundle verify needs a repository: an empty one, so that the
	// bundle must stand alone. Its complaint is about the client's own
	// file; only the daemon's paths are taken out of it.
	scratch := filepath.Join(tk.dir(id), "verify.git")
	defer os.RemoveAll(scratch)
	if _, err := git(ctx, tk.dir(id), nil, "init", "--quiet", "--bare", scratch); err != nil {
		return "", info, err
	}
	if _, err := git(ctx, scratch, nil, "bundle", "verify", "--quiet", path); err != nil {
		return "", info, fmt.Errorf("the bundle is refused: git bundle verify: %s: %w", tk.gitSays(id, err), errdefs.ErrInvalid)
	}
	return path, info, nil
}

// gitSays is a failed git's message about a bundle, without the
// daemon's paths, cut to 2,000 bytes.
func (tk *Tasks) gitSays(id string, err error) string {
	var ge *gitError
	msg := err.Error()
	if errors.As(err, &ge) {
		msg = ge.stderr
	}
	msg = strings.ReplaceAll(msg, tk.dir(id)+string(filepath.Separator), "")
	msg = strings.ReplaceAll(msg, tk.dir(id), "")
	if len(msg) > 2000 {
		msg = msg[:2000]
	}
	return strings.TrimSpace(msg)
}

// maxCheckoutFiles bounds the files of a bundle's commit (each is an
// inode on the host, then in the sandbox; a variable: the tests make it
// small).
var maxCheckoutFiles = 1 << 20

// checkBundleClone runs after a bundle's clone, before its checkout: git
// fsck (strict) over every object the bundle brought (a tree entry named
// .git, .., a malicious .gitmodules: git's own checks), and the files of
// commit bounded by maxCheckout bytes and maxCheckoutFiles entries.
func (tk *Tasks) checkBundleClone(ctx context.Context, id, base, commit string) error {
	if _, err := git(ctx, base, nil, "fsck", "--strict", "--no-dangling", "--no-progress"); err != nil {
		return fmt.Errorf("the bundle is refused: git fsck: %s: %w", tk.gitSays(id, err), errdefs.ErrInvalid)
	}
	out, err := git(ctx, base, nil, "ls-tree", "-r", "--format=%(objectsize)", "--end-of-options", commit)
	if err != nil {
		return fmt.Errorf("the bundle's files: %w", err)
	}
	var total int64
	sizes := strings.Fields(string(out))
	if len(sizes) > maxCheckoutFiles {
		return fmt.Errorf("the bundle's commit %.12s has more than %d files (the daemon's bound): %w", commit, maxCheckoutFiles, errdefs.ErrLimitExceeded)
	}
	for _, f := range sizes {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil { // a submodule's commit: no size, nothing checked out
			continue
		}
		if total += n; total > tk.maxCheckout() {
			return fmt.Errorf("the bundle's commit %.12s has more than %d bytes of files (the daemon's bound): %w", commit, tk.maxCheckout(), errdefs.ErrLimitExceeded)
		}
	}
	return nil
}
