package task

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/sdk"
)

// startSource sets where the task's repository comes from: a bundle
// file (or stdin), a bundle made here of --repo DIR (--upload), or the
// path or URL for the daemon to clone (a local path made absolute: the
// daemon's working directory is not this one). It returns what the
// progress line names and what removes a bundle made here.
func startSource(req *sdk.TaskRequest, bundleFile string, upload bool) (string, func(), error) {
	none := func() {}
	switch {
	case bundleFile == "-":
		req.Bundle = os.Stdin
		return "the bundle on stdin", none, nil
	case bundleFile != "":
		f, err := os.Open(bundleFile)
		if err != nil {
			return "", none, err
		}
		req.Bundle = f
		return bundleFile, func() { f.Close() }, nil
	}
	if st, err := os.Stat(req.Repo); err == nil && st.IsDir() {
		abs, err := filepath.Abs(req.Repo)
		if err != nil {
			return "", none, err
		}
		req.Repo = abs
	} else if upload {
		return "", none, fmt.Errorf("--upload: %s is not a directory here", req.Repo)
	}
	if !upload {
		return req.Repo, none, nil
	}
	path, commit, err := makeBundle(context.Background(), req.Repo, req.Ref)
	if err != nil {
		return "", none, err
	}
	f, err := os.Open(path)
	if err != nil {
		os.Remove(path)
		return "", none, err
	}
	if req.Commit == "" {
		req.Commit = commit
	}
	what := req.Repo + " (bundled)"
	req.Repo, req.Bundle = "", f
	return what, func() { f.Close(); os.Remove(path) }, nil
}

// makeBundle bundles ref of the repository in dir into a temporary file:
// the branch or tag ref names (with HEAD for HEAD), or, for a commit id,
// HEAD with every branch and tag (a bundle names refs, not commits). It
// returns the file and the commit ref is now.
func makeBundle(ctx context.Context, dir, ref string) (string, string, error) {
	if strings.HasPrefix(ref, "-") {
		return "", "", fmt.Errorf("--ref %q: not a ref", ref)
	}
	commit, err := gitOut(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return "", "", fmt.Errorf("--upload: %s has no commit %q: %v", dir, ref, err)
	}
	refs := []string{"HEAD", "--branches", "--tags"}
	if ref == "HEAD" {
		refs = []string{"HEAD"}
	} else if full, err := gitOut(ctx, dir, "rev-parse", "--symbolic-full-name", ref); err == nil &&
		(strings.HasPrefix(full, "refs/heads/") || strings.HasPrefix(full, "refs/tags/")) {
		refs = []string{full}
	}
	f, err := os.CreateTemp("", "airlock-*.bundle")
	if err != nil {
		return "", "", err
	}
	f.Close()
	if _, err := gitOut(ctx, dir, append([]string{"bundle", "create", "--quiet", f.Name()}, refs...)...); err != nil {
		os.Remove(f.Name())
		return "", "", fmt.Errorf("--upload: git bundle create: %v", err)
	}
	if st, err := os.Stat(f.Name()); err != nil || st.Size() > sdk.MaxBundle {
		os.Remove(f.Name())
		if err == nil {
			err = fmt.Errorf("--upload: the bundle of %s is %d MiB, more than the daemon takes (%d MiB)", ref, st.Size()>>20, sdk.MaxBundle>>20)
		}
		return "", "", err
	}
	return f.Name(), commit, nil
}

// gitOut runs git in dir as the user (their repository, their
// configuration) and returns its output, trimmed; no fsmonitor runs.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.fsmonitor=false"}, args...)...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}
