package tasks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// MaxPatch bounds a task's patch (and any git output the daemon reads):
// the workspace is the agent's, and the daemon must not hold unbounded
// agent-made data in memory.
const MaxPatch = 64 << 20

// limitedBuffer fails writes past its limit. (Not an embedded
// bytes.Buffer: io.Copy would use its ReadFrom and skip the limit.)
type limitedBuffer struct {
	buf   bytes.Buffer
	limit int
}

func (b *limitedBuffer) Len() int       { return b.buf.Len() }
func (b *limitedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *limitedBuffer) String() string { return b.buf.String() }

var errTooLarge = fmt.Errorf("output larger than %d MiB: %w", MaxPatch>>20, errdefs.ErrLimitExceeded)

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, errTooLarge
	}
	return b.buf.Write(p)
}

// git runs host git with a configuration that ignores the user's and the
// system's, and never runs anything a repository asks for.
func git(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	return gitIn(ctx, dir, env, nil, args...)
}

// gitIn is git with stdin.
func gitIn(ctx context.Context, dir string, env []string, stdin io.Reader, args ...string) ([]byte, error) {
	full := append([]string{"-c", "protocol.ext.allow=never", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir, cmd.Stdin = dir, stdin
	cmd.Env = append([]string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", "HOME=/nonexistent", "PATH=/usr/bin:/bin"}, env...)
	out, errb := &limitedBuffer{limit: MaxPatch}, &limitedBuffer{limit: 1 << 20}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Run(); err != nil {
		if out.Len() >= MaxPatch-(64<<10) {
			return nil, fmt.Errorf("git %s: %w", args[0], errTooLarge)
		}
		return nil, &gitError{args: args, err: err, stderr: strings.TrimSpace(errb.String())}
	}
	return out.Bytes(), nil
}

// gitError is a git that failed, with its exit status.
type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, e.stderr)
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode is a gitError's exit status, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func newTaskID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t-" + hex.EncodeToString(b[:])
}
