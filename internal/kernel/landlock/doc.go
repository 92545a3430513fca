// Package landlock restricts the calling OS thread, and every process it forks or execs, with a
// filesystem Landlock ruleset; it is for the native runtime's sandbox setup and nothing else.
// Invariants: a restriction can never be loosened or removed; RestrictThread either enforces
// exactly what its Applied result reports or, on error, enforces nothing; other threads of the
// calling process are never restricted; a kernel without Landlock yields ErrUnsupported, never a
// silent no-op.
package landlock
