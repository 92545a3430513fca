// Package tasks is the tasks feature, a module of the sandbox core
// (internal/manager): a repository checked out at an exact commit in a
// sandbox's /workspace, with a write scope and a test command, whose
// change the host computes from the files alone and whose result (patch,
// changed files, test runs, exec log, review bundle) it keeps.
//
// The module reaches the core only through its hook.Core: the
// task's sandbox is made by Core.CreateForTask, its write scope held by
// Core.RestrictWrites (again after every reset), its finish by
// Core.BeginFinishing, its tests run by Core.ExecTaskTest (the one policy
// exception, for the test command its task was started with), its review
// bundle written by the core's TaskBundler module (Core.Bundles: the
// review module; without one a task is neither finished nor exported).
// As a StopHook it keeps the diff of an open task whose sandbox stops.
package tasks

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/redacted"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// Config configures the tasks module.
type Config struct {
	// Dir holds the host's clone and results of each task (one
	// directory per task id); "": tasks are not configured (Start fails
	// with ErrUnsupported).
	Dir string
	// Caches are the per-project dependency caches (internal/depcache);
	// nil: none, every task starts with its template's caches (and so
	// does a task from a bundle, which names no project).
	Caches Caches
	// MaxBundle bounds an uploaded bundle (0: DefaultMaxBundle), and
	// MaxCheckout the files of its commit (0: DefaultMaxCheckout): a
	// small pack can inflate to a large tree, checked out on the host.
	MaxBundle, MaxCheckout int64
}

// Defaults of Config's bounds of a bundle.
const (
	DefaultMaxBundle   = 256 << 20
	DefaultMaxCheckout = 4 << 30
)

// Caches is what the tasks module asks of the dependency caches. repo
// is the repository as the task's record names it (a local path made
// absolute; a URL without its credentials).
type Caches interface {
	// Seed puts repo's caches into the sandbox, before its checkout.
	Seed(ctx context.Context, sandboxID, taskID, repo string) error
	// Collect adds what the sandbox's caches hold that the base commit's
	// lockfiles pin (lockfile reads one at that commit, by its path in
	// the repository), as the task is finished.
	Collect(ctx context.Context, sandboxID, taskID, repo string, lockfile func(name string) ([]byte, error)) error
}

// Tasks is the tasks module.
type Tasks struct {
	cfg Config
	c   hook.Core

	mu sync.Mutex
	// finishing: tasks a Finish is under way for (by task id), also of
	// one whose sandbox is gone (there is no live sandbox to mark).
	finishing map[string]bool
}

// New makes the module; attach it through manager.Config.Modules.
func New(cfg Config) *Tasks { return &Tasks{cfg: cfg, finishing: map[string]bool{}} }

// Name is the module's name.
func (tk *Tasks) Name() string { return "tasks" }

// Attach takes the core's handle and removes what a killed daemon left in
// the task directories.
func (tk *Tasks) Attach(c hook.Core) error {
	if tk.c != nil {
		return fmt.Errorf("tasks: attached twice: %w", errdefs.ErrInvalid)
	}
	tk.c = c
	tk.cleanLeftovers()
	return nil
}

// OnStop keeps the diff of an open task whose sandbox stops (destroyed,
// expired, shut down; not failed: a sandbox whose init died has no files
// to read). It runs before the files go.
func (tk *Tasks) OnStop(ctx context.Context, ev hook.StopEvent) map[string]any {
	if ev.Sandbox == nil || ev.TaskID == "" || ev.Reason == sandbox.StopFailed {
		return nil
	}
	return tk.keepDiff(ctx, ev)
}

func (tk *Tasks) dir(id string) string     { return filepath.Join(tk.cfg.Dir, id) }
func (tk *Tasks) baseDir(id string) string { return filepath.Join(tk.dir(id), "base") }

// Check is sandbox.CheckCreate for the sandbox a task asks for: the API
// refuses a bad request with it before the task starts.
func Check(req TaskRequest, maxLifetime time.Duration) (time.Duration, error) {
	return sandbox.CheckCreate(sandbox.CreateRequest{Limits: req.Limits, TTLSeconds: req.TTLSeconds, Env: req.Env}, maxLifetime)
}

// shownTask is a task as the API shows it: every string redacted but the
// daemon's own words (field names, times, ids and states tagged
// redact:"keep", internal/redacted), since any caller can teach the
// redactor a value; a record a secret would have to be shown in (a
// number that is a secret) refused.
func (tk *Tasks) shownTask(rec *store.Task) (*Task, error) {
	t, err := taskView(rec)
	if err != nil {
		return nil, err
	}
	return redacted.Scrubbed(tk.c.Redactor(), t)
}
