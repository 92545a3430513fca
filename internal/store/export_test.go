package store

import "context"

// OpenAt opens path migrated only up to version (for the migration
// tests of package store_test).
func OpenAt(path string, version int) (*Store, error) { return open(path, migrations[:version]) }

// ExecRaw runs a statement on the write pool, as an older airlock would.
func ExecRaw(s *Store, q string, args ...any) error {
	_, err := s.w.ExecContext(context.Background(), q, args...)
	return err
}
