package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrations[i] takes the schema from version i to version i+1. The list is
// append-only: a released migration is never edited, reordered or removed;
// a change to the schema is a new entry at the end. Each runs in its own
// transaction together with the version bump, so a database is always at
// exactly one numbered version.
//
// Conventions: ids are non-empty TEXT; times are INTEGER nanoseconds since
// the Unix epoch, UTC (NULL = unset); labels, argv, env_names are JSON TEXT
// (NULL = nil); spec, isolation and status are the caller's JSON, verbatim.
var migrations = []string{
	// 1: sandboxes, execs, outputs.
	`
CREATE TABLE sandboxes (
	id               TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	state            TEXT    NOT NULL CHECK (state <> ''),
	backend          TEXT    NOT NULL,
	template         TEXT    NOT NULL,
	template_version TEXT    NOT NULL,
	labels           TEXT,
	spec             TEXT,
	isolation        TEXT,
	created          INTEGER NOT NULL,
	expires          INTEGER,
	stopped          INTEGER,
	stop_reason      TEXT    NOT NULL
) STRICT;
CREATE INDEX sandboxes_by_created ON sandboxes (created DESC, id);
CREATE INDEX sandboxes_by_state ON sandboxes (state, created DESC, id);

CREATE TABLE execs (
	id         TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	sandbox_id TEXT    NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
	argv       TEXT,
	cwd        TEXT    NOT NULL,
	env_names  TEXT,
	started    INTEGER NOT NULL,
	ended      INTEGER,
	status     TEXT,
	error      TEXT    NOT NULL
) STRICT;
-- rowid is implicitly the last column of the index: ORDER BY started, rowid.
CREATE INDEX execs_by_sandbox ON execs (sandbox_id, started);

CREATE TABLE outputs (
	exec_id TEXT NOT NULL REFERENCES execs (id) ON DELETE CASCADE,
	stream  TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr')),
	data    BLOB NOT NULL,
	PRIMARY KEY (exec_id, stream)
) STRICT;
`,
	// 2: tasks (a repository checked out in a sandbox, with its workflow).
	`
CREATE TABLE tasks (
	id         TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	sandbox_id TEXT    NOT NULL REFERENCES sandboxes (id),
	state      TEXT    NOT NULL CHECK (state <> ''),
	spec       TEXT    NOT NULL,
	result     TEXT,
	created    INTEGER NOT NULL,
	finished   INTEGER
) STRICT;
CREATE INDEX tasks_by_created ON tasks (created DESC, id);
`,
	// 3: API keys (only their SHA-256 is stored).
	`
CREATE TABLE api_keys (
	id      TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	name    TEXT    NOT NULL,
	hash    TEXT    NOT NULL UNIQUE CHECK (length(hash) = 64),
	created INTEGER NOT NULL
) STRICT;
`,
	// 4: the policy plane: each exec's decision, approvals held for a
	// human, the grants they made, and operator break-glass overrides.
	`
ALTER TABLE execs ADD COLUMN decision TEXT;

CREATE TABLE approvals (
	id         TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	sandbox_id TEXT    NOT NULL REFERENCES sandboxes (id),
	task_id    TEXT    NOT NULL,
	line       TEXT    NOT NULL,
	cwd        TEXT    NOT NULL,
	request    TEXT    NOT NULL,
	requested_by TEXT  NOT NULL,
	state      TEXT    NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'expired')),
	created    INTEGER NOT NULL,
	deadline   INTEGER NOT NULL,
	decided    INTEGER,
	decided_by TEXT    NOT NULL,
	reason     TEXT    NOT NULL,
	grant_id   TEXT    NOT NULL
) STRICT;
CREATE INDEX approvals_by_state ON approvals (state, created, id);
CREATE INDEX approvals_by_sandbox ON approvals (sandbox_id, created, id);

CREATE TABLE grants (
	id          TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	sandbox_id  TEXT    NOT NULL REFERENCES sandboxes (id),
	task_id     TEXT    NOT NULL,
	approval_id TEXT    NOT NULL REFERENCES approvals (id),
	scope       TEXT    NOT NULL CHECK (scope IN ('command', 'class')),
	line        TEXT    NOT NULL,
	cwd         TEXT    NOT NULL,
	classes     TEXT,
	created     INTEGER NOT NULL,
	expires     INTEGER NOT NULL,
	created_by  TEXT    NOT NULL
) STRICT;
CREATE INDEX grants_by_sandbox ON grants (sandbox_id, expires);

CREATE TABLE break_glass (
	id         TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	sandbox_id TEXT    NOT NULL REFERENCES sandboxes (id),
	actor      TEXT    NOT NULL,
	reason     TEXT    NOT NULL CHECK (reason <> ''),
	created    INTEGER NOT NULL,
	expires    INTEGER NOT NULL
) STRICT;
CREATE INDEX break_glass_by_sandbox ON break_glass (sandbox_id, expires);
`,
	// 5: the audit log: hash-chained events and content-addressed blobs.
	// Events are never updated or deleted by airlock (the triggers say so
	// to any code that tries); the chain shows edits made around them.
	`
CREATE TABLE audit_events (
	seq        INTEGER NOT NULL PRIMARY KEY CHECK (seq > 0),
	time       INTEGER NOT NULL,
	sandbox_id TEXT    NOT NULL,
	task_id    TEXT    NOT NULL,
	exec_id    TEXT    NOT NULL,
	actor      TEXT    NOT NULL,
	kind       TEXT    NOT NULL CHECK (kind <> ''),
	payload    TEXT    NOT NULL,
	prev       TEXT    NOT NULL,
	hash       TEXT    NOT NULL
) STRICT;
CREATE INDEX audit_by_sandbox ON audit_events (sandbox_id, seq);
CREATE INDEX audit_by_task ON audit_events (task_id, seq);
CREATE INDEX audit_by_kind ON audit_events (kind, seq);
CREATE INDEX audit_by_time ON audit_events (time, seq);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_events BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_events BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;

CREATE TABLE audit_blobs (
	hash    TEXT    NOT NULL PRIMARY KEY CHECK (length(hash) = 64),
	data    BLOB    NOT NULL,
	created INTEGER NOT NULL
) STRICT;
`,
	// 6: secrets, sealed with the daemon's key (the store never sees a
	// value), and their grants to a sandbox or task: injected into the
	// environment, or brokered (the sandbox holds a placeholder).
	`
CREATE TABLE secrets (
	name    TEXT    NOT NULL PRIMARY KEY CHECK (name <> ''),
	sealed  BLOB    NOT NULL,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL
) STRICT;

CREATE TABLE secret_grants (
	id          TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	secret      TEXT    NOT NULL REFERENCES secrets (name) ON DELETE CASCADE,
	sandbox_id  TEXT    NOT NULL REFERENCES sandboxes (id),
	task_id     TEXT    NOT NULL,
	mode        TEXT    NOT NULL CHECK (mode IN ('env', 'broker')),
	env         TEXT    NOT NULL CHECK (env <> ''),
	hosts       TEXT    NOT NULL,
	placeholder TEXT    NOT NULL,
	created     INTEGER NOT NULL,
	expires     INTEGER NOT NULL,
	created_by  TEXT    NOT NULL,
	revoked     INTEGER
) STRICT;
CREATE INDEX secret_grants_by_sandbox ON secret_grants (sandbox_id, expires);
`,
	// 7: the request headers a brokered grant's value may go in (JSON;
	// NULL = Authorization only).
	`
ALTER TABLE secret_grants ADD COLUMN headers TEXT;
`,
	// 8: projects (tenants, issue 22). Every sandbox and API key belongs
	// to one, fixed when it is made; what a database held before goes to
	// "default", and its keys become that project's agent keys. A removed
	// project keeps its records (and its name) but takes nothing new. A
	// key's expires is its rotation's overlap (NULL: no end). SQLite
	// cannot add a column that REFERENCES with a default, so triggers
	// keep the columns to existing projects.
	`
CREATE TABLE projects (
	id      TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	created INTEGER NOT NULL,
	removed INTEGER,
	quotas  TEXT
) STRICT;
INSERT INTO projects (id, created) VALUES ('default', CAST(unixepoch('subsec') * 1000000000 AS INTEGER));

ALTER TABLE sandboxes ADD COLUMN project TEXT NOT NULL DEFAULT 'default';
CREATE INDEX sandboxes_by_project ON sandboxes (project, created DESC, id);
CREATE TRIGGER sandboxes_project BEFORE INSERT ON sandboxes
	WHEN NOT EXISTS (SELECT 1 FROM projects WHERE id = NEW.project AND removed IS NULL)
	BEGIN SELECT RAISE(ABORT, 'airlock: no such project'); END;
CREATE TRIGGER sandboxes_project_fixed BEFORE UPDATE OF project ON sandboxes
	WHEN NEW.project <> OLD.project
	BEGIN SELECT RAISE(ABORT, 'airlock: a sandbox''s project is fixed'); END;

ALTER TABLE api_keys ADD COLUMN project TEXT NOT NULL DEFAULT 'default';
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'agent' CHECK (role IN ('agent', 'reviewer', 'admin'));
ALTER TABLE api_keys ADD COLUMN expires INTEGER;
CREATE INDEX api_keys_by_project ON api_keys (project, created, id);
CREATE TRIGGER api_keys_project BEFORE INSERT ON api_keys
	WHEN NOT EXISTS (SELECT 1 FROM projects WHERE id = NEW.project AND removed IS NULL)
	BEGIN SELECT RAISE(ABORT, 'airlock: no such project'); END;
`,
	// 9: secrets and the audit log per project (issue 22). A secret is
	// keyed by (project, name); the ones a database held go to
	// "default", and a copy goes to each other project a sandbox of
	// which was granted it (the operator did so before projects had
	// secrets of their own; the grant keeps working). A grant is its
	// sandbox's project's and references a secret of that project only.
	// SQLite cannot change a primary key in place: both tables are made
	// anew, filled, and take the old names (grants dropped first, so the
	// old secrets' drop cascades to nothing). An audit event's project
	// is "" for the events written before; audit_blob_refs says which
	// projects' events (written since) refer to a blob.
	`
CREATE TABLE secrets_v9 (
	project TEXT    NOT NULL REFERENCES projects (id),
	name    TEXT    NOT NULL CHECK (name <> ''),
	sealed  BLOB    NOT NULL,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	PRIMARY KEY (project, name)
) STRICT;
INSERT INTO secrets_v9 (project, name, sealed, created, updated)
	SELECT 'default', name, sealed, created, updated FROM secrets;
INSERT INTO secrets_v9 (project, name, sealed, created, updated)
	SELECT DISTINCT b.project, s.name, s.sealed, s.created, s.updated
	FROM secret_grants g JOIN sandboxes b ON b.id = g.sandbox_id JOIN secrets s ON s.name = g.secret
	WHERE b.project <> 'default';

CREATE TABLE secret_grants_v9 (
	id          TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	project     TEXT    NOT NULL,
	secret      TEXT    NOT NULL,
	sandbox_id  TEXT    NOT NULL REFERENCES sandboxes (id),
	task_id     TEXT    NOT NULL,
	mode        TEXT    NOT NULL CHECK (mode IN ('env', 'broker')),
	env         TEXT    NOT NULL CHECK (env <> ''),
	hosts       TEXT    NOT NULL,
	placeholder TEXT    NOT NULL,
	created     INTEGER NOT NULL,
	expires     INTEGER NOT NULL,
	created_by  TEXT    NOT NULL,
	revoked     INTEGER,
	headers     TEXT,
	FOREIGN KEY (project, secret) REFERENCES secrets_v9 (project, name) ON DELETE CASCADE
) STRICT;
INSERT INTO secret_grants_v9 (id, project, secret, sandbox_id, task_id, mode, env, hosts, placeholder, created, expires, created_by, revoked, headers)
	SELECT g.id, b.project, g.secret, g.sandbox_id, g.task_id, g.mode, g.env, g.hosts, g.placeholder, g.created, g.expires, g.created_by, g.revoked, g.headers
	FROM secret_grants g JOIN sandboxes b ON b.id = g.sandbox_id;

DROP TABLE secret_grants;
DROP TABLE secrets;
ALTER TABLE secrets_v9 RENAME TO secrets;
ALTER TABLE secret_grants_v9 RENAME TO secret_grants;
CREATE INDEX secret_grants_by_sandbox ON secret_grants (sandbox_id, expires);
CREATE INDEX secret_grants_by_secret ON secret_grants (project, secret);
CREATE INDEX secret_grants_by_project ON secret_grants (project, created DESC, id);
CREATE TRIGGER secrets_project BEFORE INSERT ON secrets
	WHEN NOT EXISTS (SELECT 1 FROM projects WHERE id = NEW.project AND removed IS NULL)
	BEGIN SELECT RAISE(ABORT, 'airlock: no such project'); END;
CREATE TRIGGER secret_grants_project BEFORE INSERT ON secret_grants
	WHEN EXISTS (SELECT 1 FROM sandboxes WHERE id = NEW.sandbox_id AND project <> NEW.project)
	BEGIN SELECT RAISE(ABORT, 'airlock: a secret grant is of its sandbox''s project'); END;

ALTER TABLE audit_events ADD COLUMN project TEXT NOT NULL DEFAULT '';
CREATE INDEX audit_by_project ON audit_events (project, seq);
CREATE TABLE audit_blob_refs (
	hash    TEXT NOT NULL CHECK (length(hash) = 64),
	project TEXT NOT NULL CHECK (project <> ''),
	PRIMARY KEY (hash, project)
) STRICT, WITHOUT ROWID;
`,
	// 9 -> 10: a project's own policy layer (issue 22), set by its admin
	// or the operator and applied to its sandboxes after the policy
	// file's section for it, and its settings (default template, a
	// lifetime bound under the daemon's); the caller's JSON, NULL: none.
	`
ALTER TABLE projects ADD COLUMN policy TEXT;
ALTER TABLE projects ADD COLUMN settings TEXT;
`,
}

// schemaVersionDDL creates the one-row table that records the version.
const schemaVersionDDL = `CREATE TABLE IF NOT EXISTS schema_version (
	id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
	version INTEGER NOT NULL
) STRICT`

// migrate brings db to version len(migs), one migration per transaction. The
// write pool begins transactions IMMEDIATE, so two processes opening the same
// database at once take turns rather than both applying a step.
func migrate(ctx context.Context, db *sql.DB, migs []string) error {
	for {
		done, err := migrateStep(ctx, db, migs)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration, if any, and reports whether the
// schema is now current.
func migrateStep(ctx context.Context, db *sql.DB, migs []string) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate: %w", classify(err))
	}
	defer func() {
		if err != nil {
			rollback(tx)
		}
	}()
	if _, err := tx.ExecContext(ctx, schemaVersionDDL); err != nil {
		return false, fmt.Errorf("migrate: schema_version: %w", classify(err))
	}
	var v int
	err = tx.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE id = 1`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		v = 0
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_version (id, version) VALUES (1, 0)`)
	}
	if err != nil {
		return false, fmt.Errorf("migrate: schema_version: %w", classify(err))
	}
	switch {
	case v < 0:
		return false, fmt.Errorf("migrate: schema version %d is not valid", v)
	case v > len(migs):
		return false, fmt.Errorf("migrate: schema version %d is newer than this airlock knows (%d); use a newer airlock", v, len(migs))
	case v == len(migs):
		return true, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, migs[v]); err != nil {
		return false, fmt.Errorf("migrate: version %d to %d: %w", v, v+1, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ? WHERE id = 1`, v+1); err != nil {
		return false, fmt.Errorf("migrate: version %d to %d: %w", v, v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate: version %d to %d: commit: %w", v, v+1, err)
	}
	return v+1 == len(migs), nil
}
