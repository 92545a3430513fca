package filesapi

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/reqcheck"
)

// MaxRenamed bounds the entries of a directory the file API moves: each
// is judged on its own, so a larger tree is refused (move it with a
// command, which the policy judges as one).
const MaxRenamed = 10000

// Rename moves from to to. A move reads what it moves and writes it
// somewhere else, so it is judged as both: from is read and removed, to
// is written; for a directory, every entry beneath it too, on its old
// path (read) and its new one (write), so that a move can neither carry
// a secret file out from under the rules that keep it (~/.ssh to /tmp)
// nor put one where a write would be refused. One event records it.
func (f *policedFiles) Rename(ctx context.Context, from, to string) error {
	from, err := reqcheck.AbsPath(from)
	if err != nil {
		return err
	}
	if to, err = reqcheck.AbsPath(to); err != nil {
		return err
	}
	if from == "/" || to == "/" {
		return fmt.Errorf("rename %s to %s: the root cannot be moved or replaced: %w", from, to, errdefs.ErrInvalid)
	}
	if to == from || strings.HasPrefix(to, from+"/") {
		return fmt.Errorf("rename %s to %s: a directory cannot be moved into itself: %w", from, to, errdefs.ErrInvalid)
	}
	if err := f.judgeMove(ctx, from, to); err != nil {
		return err
	}
	fi, err := f.Files.Stat(ctx, from)
	if err != nil {
		return err
	}
	if fi.Type == "dir" {
		n := 0
		if err := f.judgeTree(ctx, from, to, &n); err != nil {
			return err
		}
	}
	if err := f.record(ctx, "file.rename", map[string]any{"from": from, "to": to}); err != nil {
		return err
	}
	return f.Files.Rename(ctx, from, to)
}

// judgeMove judges one entry's move: its read and removal at from, its
// write at to.
func (f *policedFiles) judgeMove(ctx context.Context, from, to string) error {
	if err := f.check(ctx, "read", from, false); err != nil {
		return err
	}
	if _, err := f.decide(ctx, "rename", from, true, false); err != nil {
		return err
	}
	_, err := f.decide(ctx, "rename", to, true, false)
	return err
}

// judgeTree judges the move of every entry beneath the directory from
// (symlinks are moved, never followed); n counts them against
// MaxRenamed.
func (f *policedFiles) judgeTree(ctx context.Context, from, to string, n *int) error {
	list, err := f.Files.List(ctx, from)
	if err != nil {
		return err
	}
	for _, fi := range list {
		if *n++; *n > MaxRenamed {
			return fmt.Errorf("rename %s: more than %d entries to judge: move it with a command: %w", from, MaxRenamed, errdefs.ErrLimitExceeded)
		}
		old, moved := path.Join(from, fi.Name), path.Join(to, fi.Name)
		if err := f.judgeMove(ctx, old, moved); err != nil {
			return err
		}
		if fi.Type == "dir" {
			if err := f.judgeTree(ctx, old, moved, n); err != nil {
				return err
			}
		}
	}
	return nil
}
