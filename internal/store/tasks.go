package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Task is one task's record: a repository checked out in a sandbox. Spec
// and Result are the caller's JSON, verbatim.
type Task struct {
	ID, SandboxID, State string
	Spec                 json.RawMessage // required
	Result               json.RawMessage // nil until there is one
	Created              time.Time
	Finished             *time.Time
}

func taskValues(t *Task) ([]any, error) {
	if t == nil {
		return nil, invalidf("nil task")
	}
	if err := checkID("task", t.ID); err != nil {
		return nil, err
	}
	if err := checkID("sandbox", t.SandboxID); err != nil {
		return nil, err
	}
	if t.State == "" {
		return nil, invalidf("task %q: empty state", t.ID)
	}
	if len(t.Spec) == 0 {
		return nil, invalidf("task %q: empty spec", t.ID)
	}
	spec, err := rawJSON("spec", t.Spec)
	if err != nil {
		return nil, err
	}
	result, err := rawJSON("result", t.Result)
	if err != nil {
		return nil, err
	}
	created, err := nanos("created", t.Created)
	if err != nil {
		return nil, err
	}
	finished, err := optNanos("finished", t.Finished)
	if err != nil {
		return nil, err
	}
	return []any{t.ID, t.SandboxID, t.State, spec, result, created, finished}, nil
}

const taskColumns = `id, sandbox_id, state, spec, result, created, finished`

func scanTask(row interface{ Scan(...any) error }) (*Task, error) {
	var t Task
	var spec string
	var result sql.NullString
	var created int64
	var finished sql.NullInt64
	if err := row.Scan(&t.ID, &t.SandboxID, &t.State, &spec, &result, &created, &finished); err != nil {
		return nil, err
	}
	t.Spec = json.RawMessage(spec)
	if result.Valid {
		t.Result = json.RawMessage(result.String)
	}
	t.Created = fromNanos(created)
	t.Finished = fromOptNanos(finished)
	return &t, nil
}

// PutTask inserts a task; its sandbox must exist (ErrNotFound), its id must
// be new (ErrConflict).
func (s *Store) PutTask(ctx context.Context, t *Task) error {
	vals, err := taskValues(t)
	if err != nil {
		return fmt.Errorf("store: put task: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO tasks (`+taskColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`, vals...); err != nil {
		switch {
		case isDuplicate(err):
			return fmt.Errorf("store: task %q already exists: %w", t.ID, errdefs.ErrConflict)
		case isForeignKey(err):
			return fmt.Errorf("store: task %q: sandbox %q: %w", t.ID, t.SandboxID, errdefs.ErrNotFound)
		}
		return fmt.Errorf("store: put task %q: %w", t.ID, err)
	}
	return nil
}

// UpdateTask replaces the state, result and finish time of a task.
func (s *Store) UpdateTask(ctx context.Context, t *Task) error {
	vals, err := taskValues(t)
	if err != nil {
		return fmt.Errorf("store: update task: %w", err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE tasks SET state = ?, result = ?, finished = ? WHERE id = ?`, vals[2], vals[4], vals[6], t.ID)
	if err != nil {
		return fmt.Errorf("store: update task %q: %w", t.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: task %q: %w", t.ID, errdefs.ErrNotFound)
	}
	return nil
}

// GetTask returns one task; unknown ids are ErrNotFound.
func (s *Store) GetTask(ctx context.Context, id string) (*Task, error) {
	if err := checkID("task", id); err != nil {
		return nil, fmt.Errorf("store: get task: %w", err)
	}
	t, err := scanTask(s.r.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: task %q: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get task %q: %w", id, err)
	}
	return t, nil
}

// ListTasks returns every task, newest first.
func (s *Store) ListTasks(ctx context.Context) ([]*Task, error) {
	return s.ListProjectTasks(ctx, "")
}

// ListProjectTasks is ListTasks of one project's tasks (those of its
// sandboxes; "": every project's).
func (s *Store) ListProjectTasks(ctx context.Context, project string) ([]*Task, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+taskColumns+` FROM tasks
	WHERE ?1 = '' OR sandbox_id IN (SELECT id FROM sandboxes WHERE project = ?1) ORDER BY created DESC, id`, project)
	if err != nil {
		return nil, fmt.Errorf("store: list tasks: %w", err)
	}
	defer rows.Close()
	out := []*Task{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
