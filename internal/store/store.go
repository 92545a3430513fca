// Package store is airlock's embedded state: sandboxes, exec records and their
// captured output, in SQLite (WAL) through the pure-Go modernc.org/sqlite
// driver. Only the daemon's manager imports it; every other layer (the API,
// the CLI) sees that state through the manager. All methods are safe for
// concurrent use; errors wrap the errdefs kinds (ErrNotFound, ErrConflict,
// ErrInvalid) where the caller can act on them.
package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Sandbox states the daemon uses. The store only insists that a state is not
// empty; MarkRunningStopped and ListSandboxes(StateRunning) rely on these.
const (
	StateRunning = "running"
	StateStopped = "stopped"
)

// ErrNotDatabase is wrapped by the error Open returns when the file at path
// exists but is not an SQLite database (or is damaged beyond being one).
var ErrNotDatabase = errors.New("not an SQLite database")

// busyTimeout bounds how long a statement waits for a lock held by another
// connection (another process, or the read pool during a checkpoint).
const busyTimeout = 5 * time.Second

// sqliteHeader starts every SQLite 3 database file.
const sqliteHeader = "SQLite format 3\x00"

// Store is an open database. Writes go through a pool of exactly one
// connection, so concurrent writers queue in Go (honouring their contexts)
// instead of failing with SQLITE_BUSY; reads use a separate read-only pool,
// which WAL lets run beside the writer.
type Store struct {
	path string
	w    *sql.DB
	r    *sql.DB

	// auditInsert is prepared once: parsing the statement for every event
	// cost more than writing it.
	auditOnce   sync.Once
	auditInsert *sql.Stmt
	auditErr    error

	// from is the schema's version when it was opened (0: a new database).
	from int
}

// OpenedAt is the schema version the database had before Open migrated
// it (0: it was new), for the daemon's upgrade log.
func (s *Store) OpenedAt() int { return s.from }

// openedVersion is db's version before migrating (0: none recorded).
func openedVersion(ctx context.Context, db *sql.DB) int {
	var v int
	if err := db.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE id = 1`).Scan(&v); err != nil {
		return 0
	}
	return v
}

// Open opens (creating if needed, dir 0700, file 0600) the database at path,
// with WAL, foreign keys, a busy timeout (5 s), and migrates the schema (a
// schema_version table; migrations are forward-only, numbered). A file that is
// not an SQLite database is refused with an error wrapping ErrNotDatabase, and
// left untouched; a database whose schema is newer than this binary knows is
// refused too.
func Open(path string) (*Store, error) {
	return open(path, migrations)
}

// open is Open with the migration list as a parameter, for tests.
func open(path string, migs []string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("store: open: empty path: %w", errdefs.ErrInvalid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	if err := prepareFile(abs); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}

	ctx := context.Background()
	w, err := openPool(ctx, abs, 1,
		"_busy_timeout="+strconv.FormatInt(busyTimeout.Milliseconds(), 10),
		"_foreign_keys=1",
		"_journal_mode=WAL",
		"_synchronous=NORMAL",
		"_txlock=immediate",
	)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	s := &Store{path: abs, w: w}
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: open %s: %w", abs, classify(err))
	}
	if !strings.EqualFold(mode, "wal") {
		s.Close()
		return nil, fmt.Errorf("store: open %s: journal mode is %q, not wal (does the filesystem support shared memory?)", abs, mode)
	}
	s.from = openedVersion(ctx, w)
	if err := migrate(ctx, w, migs); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	r, err := openPool(ctx, abs, readers,
		"_busy_timeout="+strconv.FormatInt(busyTimeout.Milliseconds(), 10),
		"_foreign_keys=1",
		"_query_only=1",
	)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("store: open %s (read pool): %w", abs, err)
	}
	s.r = r
	return s, nil
}

// prepareFile creates the database file 0600 if it is missing, tightens its
// mode to 0600 if it is wider, and checks that a non-empty file starts with
// the SQLite header, so a wrong path is refused before SQLite writes to it.
// SQLite gives the -wal and -shm files the database file's mode.
func prepareFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return err
		}
	}
	if fi.Size() == 0 {
		return nil // new database: SQLite writes the header
	}
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	if !bytes.Equal(head[:n], []byte(sqliteHeader)) {
		return fmt.Errorf("%w (the file does not start with the SQLite header)", ErrNotDatabase)
	}
	return nil
}

// openPool opens a database/sql pool on path with the driver's DSN parameters
// and at most conns connections, and connects once so that a bad file fails
// here rather than on first use.
func openPool(ctx context.Context, path string, conns int, params ...string) (*sql.DB, error) {
	// A "file:" URI; the few characters that would end or escape the path are
	// percent-encoded. The values in params are constants of this package.
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", "file:"+esc+"?"+strings.Join(params, "&"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, classify(err)
	}
	return db, nil
}

// Close closes both pools. The last connection to close checkpoints the WAL
// into the database file.
func (s *Store) Close() error {
	var errs []error
	if s.auditInsert != nil {
		errs = append(errs, s.auditInsert.Close())
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}

// sqliteCode returns the extended SQLite result code in err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// classify wraps SQLITE_NOTADB as ErrNotDatabase and returns other errors
// unchanged.
func classify(err error) error {
	if sqliteCode(err)&0xff == sqlite3.SQLITE_NOTADB {
		return fmt.Errorf("%w: %v", ErrNotDatabase, err)
	}
	return err
}

func isDuplicate(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

func isForeignKey(err error) bool {
	return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// rollback ends tx after a failure; the failure is the error worth reporting.
func rollback(tx *sql.Tx) { _ = tx.Rollback() }
