package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Exec is one command run in a sandbox.
type Exec struct {
	ID, SandboxID string
	Argv          []string // nil and empty round-trip as themselves
	Cwd           string
	EnvNames      []string // names only, never values: a name with '=' is refused
	Started       time.Time
	Ended         *time.Time      // nil while running
	Status        json.RawMessage // caller's JSON (exit code, limit hit, byte counts...), nil while running
	Error         string          // why it could not start, if so
	// Decision is the policy's decision (caller's JSON); nil if none.
	Decision json.RawMessage
}

// Output streams.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

const (
	insertExec = `INSERT INTO execs
	(id, sandbox_id, argv, cwd, env_names, started, ended, status, error, decision)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	finishExec = `UPDATE execs SET ended = ?, status = ?, error = ?
	WHERE id = ? AND ended IS NULL`
	selectExec = `SELECT id, sandbox_id, argv, cwd, env_names, started, ended, status, error, decision
	FROM execs WHERE id = ?`
	listExecs = `SELECT id, sandbox_id, argv, cwd, env_names, started, ended, status, error, decision
	FROM execs WHERE sandbox_id = ? ORDER BY started, rowid`
	listUnended = `SELECT id, sandbox_id, argv, cwd, env_names, started, ended, status, error, decision
	FROM execs WHERE ended IS NULL ORDER BY started, rowid`
	existsExec    = `SELECT 1 FROM execs WHERE id = ?`
	existsSandbox = `SELECT 1 FROM sandboxes WHERE id = ?`
	upsertOutput  = `INSERT INTO outputs (exec_id, stream, data) VALUES (?, ?, ?)
	ON CONFLICT (exec_id, stream) DO UPDATE SET data = excluded.data`
	selectOutput = `SELECT o.data FROM execs e
	LEFT JOIN outputs o ON o.exec_id = e.id AND o.stream = ?
	WHERE e.id = ?`
)

// PutExec inserts a new exec record. Its sandbox must exist (else
// ErrNotFound); a duplicate id is ErrConflict. Ended, Status and Error may
// already be set, for a command that could not start.
func (s *Store) PutExec(ctx context.Context, e *Exec) error {
	if e == nil {
		return fmt.Errorf("store: put exec: %w", invalidf("nil exec"))
	}
	vals, err := execValues(e)
	if err != nil {
		return fmt.Errorf("store: put exec: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, insertExec, vals...); err != nil {
		switch {
		case isDuplicate(err):
			return fmt.Errorf("store: exec %q already exists: %w", e.ID, errdefs.ErrConflict)
		case isForeignKey(err):
			return fmt.Errorf("store: put exec %q: sandbox %q: %w", e.ID, e.SandboxID, errdefs.ErrNotFound)
		}
		return fmt.Errorf("store: put exec %q: %w", e.ID, err)
	}
	return nil
}

func execValues(e *Exec) ([]any, error) {
	if err := checkID("exec", e.ID); err != nil {
		return nil, err
	}
	if err := checkID("sandbox", e.SandboxID); err != nil {
		return nil, err
	}
	argv, err := stringsJSON("argv", e.Argv)
	if err != nil {
		return nil, fmt.Errorf("exec %q: %w", e.ID, err)
	}
	for _, n := range e.EnvNames {
		if n == "" || strings.ContainsAny(n, "=\x00") {
			return nil, fmt.Errorf("exec %q: %w", e.ID, invalidf("env name %q is not a bare variable name", n))
		}
	}
	env, err := stringsJSON("env_names", e.EnvNames)
	if err != nil {
		return nil, fmt.Errorf("exec %q: %w", e.ID, err)
	}
	started, err := nanos("started", e.Started)
	if err != nil {
		return nil, fmt.Errorf("exec %q: %w", e.ID, err)
	}
	ended, err := optNanos("ended", e.Ended)
	if err != nil {
		return nil, fmt.Errorf("exec %q: %w", e.ID, err)
	}
	status, err := rawJSON("status", e.Status)
	if err != nil {
		return nil, fmt.Errorf("exec %q: %w", e.ID, err)
	}
	decision, err := rawJSON("decision", e.Decision)
	if err != nil {
		return nil, fmt.Errorf("exec %q: %w", e.ID, err)
	}
	return []any{e.ID, e.SandboxID, argv, e.Cwd, env, started, ended, status, e.Error, decision}, nil
}

// FinishExec records the end of a running exec: its end time, status (the
// caller's JSON; may be nil) and error message. An unknown id is ErrNotFound;
// an exec that already ended is ErrConflict (a result, once recorded, is not
// rewritten).
func (s *Store) FinishExec(ctx context.Context, id string, ended time.Time, status json.RawMessage, errMsg string) error {
	if err := checkID("exec", id); err != nil {
		return fmt.Errorf("store: finish exec: %w", err)
	}
	n, err := nanos("ended", ended)
	if err != nil {
		return fmt.Errorf("store: finish exec %q: %w", id, err)
	}
	st, err := rawJSON("status", status)
	if err != nil {
		return fmt.Errorf("store: finish exec %q: %w", id, err)
	}
	res, err := s.w.ExecContext(ctx, finishExec, n, st, errMsg, id)
	if err != nil {
		return fmt.Errorf("store: finish exec %q: %w", id, err)
	}
	rows, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: finish exec %q: %w", id, err)
	}
	if rows == 1 {
		return nil
	}
	// Nothing updated: unknown, or already ended. Exec records are never
	// deleted, so the answer cannot change between the two statements.
	if err := s.exists(ctx, existsExec, id); err != nil {
		return fmt.Errorf("store: finish exec: exec %q: %w", id, err)
	}
	return fmt.Errorf("store: finish exec %q: already ended: %w", id, errdefs.ErrConflict)
}

// GetExec returns the exec record with id; an unknown id is ErrNotFound.
func (s *Store) GetExec(ctx context.Context, id string) (*Exec, error) {
	if err := checkID("exec", id); err != nil {
		return nil, fmt.Errorf("store: get exec: %w", err)
	}
	e, err := scanExec(s.r.QueryRowContext(ctx, selectExec, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: exec %q: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get exec %q: %w", id, err)
	}
	return e, nil
}

// ListExecs returns a sandbox's execs, oldest first (by started, then in
// insertion order). An unknown sandbox is ErrNotFound; a sandbox without
// execs gives an empty, non-nil slice.
func (s *Store) ListExecs(ctx context.Context, sandboxID string) ([]*Exec, error) {
	if err := checkID("sandbox", sandboxID); err != nil {
		return nil, fmt.Errorf("store: list execs: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, listExecs, sandboxID)
	if err != nil {
		return nil, fmt.Errorf("store: list execs of %q: %w", sandboxID, err)
	}
	defer rows.Close()
	out := []*Exec{}
	for rows.Next() {
		e, err := scanExec(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list execs of %q: %w", sandboxID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list execs of %q: %w", sandboxID, err)
	}
	if len(out) == 0 {
		if err := s.exists(ctx, existsSandbox, sandboxID); err != nil {
			return nil, fmt.Errorf("store: list execs: sandbox %q: %w", sandboxID, err)
		}
	}
	return out, nil
}

// UnendedExecs returns every exec not yet ended, of any sandbox, oldest
// first (a daemon that starts finds those of its predecessor's lost
// sandboxes here). The slice is empty, not nil, when there are none.
func (s *Store) UnendedExecs(ctx context.Context) ([]*Exec, error) {
	rows, err := s.r.QueryContext(ctx, listUnended)
	if err != nil {
		return nil, fmt.Errorf("store: list unended execs: %w", err)
	}
	defer rows.Close()
	out := []*Exec{}
	for rows.Next() {
		e, err := scanExec(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list unended execs: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list unended execs: %w", err)
	}
	return out, nil
}

func checkStream(stream string) error {
	if stream != Stdout && stream != Stderr {
		return invalidf("stream %q is not %q or %q", stream, Stdout, Stderr)
	}
	return nil
}

// PutOutput stores the captured output of an exec for one stream ("stdout"
// or "stderr"), replacing what was stored before. The caller caps its size.
// An unknown exec is ErrNotFound.
func (s *Store) PutOutput(ctx context.Context, execID, stream string, data []byte) error {
	if err := checkID("exec", execID); err != nil {
		return fmt.Errorf("store: put output: %w", err)
	}
	if err := checkStream(stream); err != nil {
		return fmt.Errorf("store: put output of %q: %w", execID, err)
	}
	if data == nil {
		data = []byte{} // an empty blob, not NULL
	}
	if _, err := s.w.ExecContext(ctx, upsertOutput, execID, stream, data); err != nil {
		if isForeignKey(err) {
			return fmt.Errorf("store: put output: exec %q: %w", execID, errdefs.ErrNotFound)
		}
		return fmt.Errorf("store: put output of %q: %w", execID, err)
	}
	return nil
}

// GetOutput returns the stored output of an exec for one stream: an empty
// slice if none was stored, ErrNotFound for an unknown exec.
func (s *Store) GetOutput(ctx context.Context, execID, stream string) ([]byte, error) {
	if err := checkID("exec", execID); err != nil {
		return nil, fmt.Errorf("store: get output: %w", err)
	}
	if err := checkStream(stream); err != nil {
		return nil, fmt.Errorf("store: get output of %q: %w", execID, err)
	}
	var data []byte
	err := s.r.QueryRowContext(ctx, selectOutput, stream, execID).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: get output: exec %q: %w", execID, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get output of %q: %w", execID, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// exists runs a "SELECT 1 ... WHERE id = ?" query and returns nil if it finds
// a row, an error wrapping ErrNotFound if not.
func (s *Store) exists(ctx context.Context, query, id string) error {
	var one int
	err := s.r.QueryRowContext(ctx, query, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return errdefs.ErrNotFound
	}
	return err
}

func scanExec(sc scanner) (*Exec, error) {
	var (
		e                 Exec
		argv, env, status []byte
		decision          []byte
		started           int64
		ended             sql.NullInt64
	)
	if err := sc.Scan(&e.ID, &e.SandboxID, &argv, &e.Cwd, &env, &started, &ended, &status, &e.Error, &decision); err != nil {
		return nil, err
	}
	var err error
	if e.Argv, err = fromStringsJSON("argv", argv); err != nil {
		return nil, fmt.Errorf("exec %q: %w", e.ID, err)
	}
	if e.EnvNames, err = fromStringsJSON("env_names", env); err != nil {
		return nil, fmt.Errorf("exec %q: %w", e.ID, err)
	}
	e.Started = fromNanos(started)
	e.Ended = fromOptNanos(ended)
	e.Status = toRaw(status)
	e.Decision = toRaw(decision)
	return &e, nil
}
