package quotas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// The quotas' names, as errors, the usage answer and the stored JSON
// call them.
const (
	NameSandboxes      = "sandboxes"
	NameMemory         = "memory_bytes"
	NameCPUs           = "cpus"
	NameDisk           = "disk_bytes"
	NameExecsPerMinute = "execs_per_minute"
	NameStoredOutput   = "stored_output_bytes"
	NameEgressPerDay   = "egress_bytes_per_day"
)

// Limits are a project's quotas in force. A zero field bounds nothing
// (as the daemon's caps: internal/caps).
type Limits struct {
	// Sandboxes: live ones (running, paused, being reset or finished) and
	// creates under way.
	Sandboxes int64
	// MemoryBytes, CPUs, DiskBytes: the sum of the live sandboxes'
	// limits (what each may take, not what it uses now).
	MemoryBytes int64
	CPUs        float64
	DiskBytes   int64
	// ExecsPerMinute: commands admitted in the last 60 seconds.
	ExecsPerMinute int64
	// StoredOutputBytes: the output the store keeps of the project's
	// commands; checked as each command starts (those running add theirs,
	// each capped by the daemon's stored-output cap, as they end).
	StoredOutputBytes int64
	// EgressBytesPerDay: the bytes its sandboxes' connections through
	// the egress proxy moved (both ways) in the last 24 hours.
	EgressBytesPerDay int64
}

// Settings are what a project's own quotas set over the daemon's
// defaults: a nil field is the default's, 0 bounds nothing, a number
// bounds. It is the JSON kept in the project's record (projects.quotas).
type Settings struct {
	Sandboxes         *int64   `json:"sandboxes,omitempty"`
	MemoryBytes       *int64   `json:"memory_bytes,omitempty"`
	CPUs              *float64 `json:"cpus,omitempty"`
	DiskBytes         *int64   `json:"disk_bytes,omitempty"`
	ExecsPerMinute    *int64   `json:"execs_per_minute,omitempty"`
	StoredOutputBytes *int64   `json:"stored_output_bytes,omitempty"`
	EgressBytesPerDay *int64   `json:"egress_bytes_per_day,omitempty"`
}

// Over is l with the fields s sets.
func (s Settings) Over(l Limits) Limits {
	pick := func(v *int64, d int64) int64 {
		if v != nil {
			return *v
		}
		return d
	}
	l.Sandboxes = pick(s.Sandboxes, l.Sandboxes)
	l.MemoryBytes = pick(s.MemoryBytes, l.MemoryBytes)
	l.DiskBytes = pick(s.DiskBytes, l.DiskBytes)
	l.ExecsPerMinute = pick(s.ExecsPerMinute, l.ExecsPerMinute)
	l.StoredOutputBytes = pick(s.StoredOutputBytes, l.StoredOutputBytes)
	l.EgressBytesPerDay = pick(s.EgressBytesPerDay, l.EgressBytesPerDay)
	if s.CPUs != nil {
		l.CPUs = *s.CPUs
	}
	return l
}

// Check refuses a negative or non-finite field, naming it.
func (s Settings) Check() error {
	for _, f := range []struct {
		name string
		v    *int64
	}{{NameSandboxes, s.Sandboxes}, {NameMemory, s.MemoryBytes}, {NameDisk, s.DiskBytes}, {NameExecsPerMinute, s.ExecsPerMinute}, {NameStoredOutput, s.StoredOutputBytes}, {NameEgressPerDay, s.EgressBytesPerDay}} {
		if f.v != nil && *f.v < 0 {
			return fmt.Errorf("quota %s: %d is negative (0 bounds nothing): %w", f.name, *f.v, errdefs.ErrInvalid)
		}
	}
	if c := s.CPUs; c != nil && (*c < 0 || math.IsNaN(*c) || math.IsInf(*c, 0) || *c > 1<<20) {
		return fmt.Errorf("quota %s: %g is not a number of cores from 0 (no bound) up: %w", NameCPUs, *c, errdefs.ErrInvalid)
	}
	return nil
}

// Check refuses a negative or non-finite field of the daemon's
// defaults, naming it.
func (l Limits) Check() error {
	return Settings{Sandboxes: &l.Sandboxes, MemoryBytes: &l.MemoryBytes, CPUs: &l.CPUs, DiskBytes: &l.DiskBytes, ExecsPerMinute: &l.ExecsPerMinute, StoredOutputBytes: &l.StoredOutputBytes, EgressBytesPerDay: &l.EgressBytesPerDay}.Check()
}

// decodeSettings reads a project's stored quotas (empty or null: none
// set). A field this daemon does not know fails: a quota it cannot
// enforce is not silently dropped.
func decodeSettings(raw []byte) (Settings, error) {
	var s Settings
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("the project's stored quotas cannot be read (%v): creates and commands are refused until the operator sets them again: %w", err, errdefs.ErrUnsupported)
	}
	if err := s.Check(); err != nil {
		return s, err
	}
	return s, nil
}

// tighter says whether every quota of n bounds at least as much as the
// same one of o (0 bounds nothing: it is the loosest), naming the first
// that does not.
func tighter(n, o Limits) (string, bool) {
	loose := func(nv, ov float64) bool { return ov > 0 && (nv == 0 || nv > ov) }
	for _, f := range []struct {
		name   string
		nv, ov float64
	}{
		{NameSandboxes, float64(n.Sandboxes), float64(o.Sandboxes)},
		{NameMemory, float64(n.MemoryBytes), float64(o.MemoryBytes)},
		{NameCPUs, n.CPUs, o.CPUs},
		{NameDisk, float64(n.DiskBytes), float64(o.DiskBytes)},
		{NameExecsPerMinute, float64(n.ExecsPerMinute), float64(o.ExecsPerMinute)},
		{NameStoredOutput, float64(n.StoredOutputBytes), float64(o.StoredOutputBytes)},
		{NameEgressPerDay, float64(n.EgressBytesPerDay), float64(o.EgressBytesPerDay)},
	} {
		if loose(f.nv, f.ov) {
			return f.name, false
		}
	}
	return "", true
}
