// Package records is the exec records module: what the API shows of a
// sandbox's commands once they ran, read from the store (each record
// redacted again as it is shown, by the core's view) and their stored
// output. It writes nothing: the core records every exec as it runs.
package records

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/redacted"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Records is the module. Attach it to the manager (Config.Modules)
// before any call: unattached, every call is refused as unsupported.
type Records struct{ c hook.Core }

// New returns the module, not yet attached.
func New() *Records { return &Records{} }

// Name is the module's name.
func (*Records) Name() string { return "records" }

// Attach keeps the core's handle.
func (r *Records) Attach(c hook.Core) error {
	r.c = c
	return nil
}

var errUnattached = fmt.Errorf("the exec records are not attached to a sandbox core: %w", errdefs.ErrUnsupported)

// Execs lists sandbox id's exec records, oldest first (an unknown
// sandbox: not found).
func (r *Records) Execs(ctx context.Context, id string) ([]*sandbox.Exec, error) {
	if r.c == nil {
		return nil, errUnattached
	}
	return r.c.Execs(ctx, id)
}

// GetExec is one exec record of sandbox id (not found: unknown, or
// another sandbox's).
func (r *Records) GetExec(ctx context.Context, id, execID string) (*sandbox.Exec, error) {
	if r.c == nil {
		return nil, errUnattached
	}
	return r.c.ExecRecord(ctx, id, execID)
}

// Output is the stored output of one stream ("stdout" or "stderr") of
// an exec of sandbox id, as it was kept (capped, redacted as it was
// stored).
func (r *Records) Output(ctx context.Context, id, execID, stream string) ([]byte, error) {
	if r.c == nil {
		return nil, errUnattached
	}
	st := r.c.Store()
	e, err := st.GetExec(ctx, execID)
	if err != nil {
		return nil, err
	}
	if e.SandboxID != id {
		return nil, fmt.Errorf("exec %s not found in sandbox %s: %w", execID, id, errdefs.ErrNotFound)
	}
	return st.GetOutput(ctx, execID, stream)
}

// RedactedJSON is v as JSON with every string value in it redacted: for
// the doors that answer with what a client once sent (the E2B process
// list's commands, arguments, directories and environment). Its keys
// follow redacted.RawJSON's rule: one shaped like the daemon's field
// names is kept (a value any caller teaches the redactor must not hide
// a field of another sandbox's answer), any other redacted.
func (r *Records) RedactedJSON(v any) (json.RawMessage, error) {
	if r.c == nil {
		return nil, errUnattached
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	return redacted.RawJSON(r.c.Redactor(), b)
}
