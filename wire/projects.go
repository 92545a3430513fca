package wire

import "time"

// ProjectRequest is the body of POST /v1/projects.
type ProjectRequest struct {
	// Name is the project's: a lower-case letter, then at most 39
	// lower-case letters, digits or '-'.
	Name string `json:"name"`
}

// Project is a project (a tenant: every sandbox, task, key and record
// belongs to one).
type Project struct {
	// ID is its name.
	ID string `json:"id"`
	// Created is when it was made.
	Created time.Time `json:"created"`
	// Removed is when it was removed (it keeps its records and its name).
	Removed *time.Time `json:"removed,omitempty"`
}

// ProjectList is the answer of GET /v1/projects.
type ProjectList struct {
	// Projects are those the caller sees (the operator: every one).
	Projects []Project `json:"projects"`
}

// ProjectQuotas are a project's quotas in force: the daemon's defaults
// (airlock serve --project-quota) with what the project sets over them.
// A zero field bounds nothing.
type ProjectQuotas struct {
	// Sandboxes: live at once (running or paused), creates under way
	// included.
	Sandboxes int64 `json:"sandboxes"`
	// MemoryBytes: the sum of the live sandboxes' memory limits (a limit
	// left to the backend counts its default).
	MemoryBytes int64 `json:"memory_bytes"`
	// CPUs: the sum of their CPU limits, in cores (no CPU limit counts
	// every core of the host).
	CPUs float64 `json:"cpus"`
	// DiskBytes: the sum of their disk limits (one left to the backend
	// counts its default).
	DiskBytes int64 `json:"disk_bytes"`
	// ExecsPerMinute: commands started in the last 60 seconds.
	ExecsPerMinute int64 `json:"execs_per_minute"`
	// StoredOutputBytes: the output the store keeps of the project's
	// commands (checked as each starts; airlock purge removes old output).
	StoredOutputBytes int64 `json:"stored_output_bytes"`
	// EgressBytesPerDay: the bytes its sandboxes' connections through the
	// egress proxy moved, both ways, in the last 24 hours (past it a new
	// connection is refused and an open tunnel cut).
	EgressBytesPerDay int64 `json:"egress_bytes_per_day"`
}

// QuotaSettings is the body of PUT /v1/projects/{id}/quotas and what a
// project sets over the daemon's defaults: a field left out is the
// default's, 0 bounds nothing, a number bounds. A PUT replaces every
// field (one left out goes back to the default).
type QuotaSettings struct {
	// Sandboxes: as ProjectQuotas.Sandboxes.
	Sandboxes *int64 `json:"sandboxes,omitempty"`
	// MemoryBytes: as ProjectQuotas.MemoryBytes.
	MemoryBytes *int64 `json:"memory_bytes,omitempty"`
	// CPUs: as ProjectQuotas.CPUs.
	CPUs *float64 `json:"cpus,omitempty"`
	// DiskBytes: as ProjectQuotas.DiskBytes.
	DiskBytes *int64 `json:"disk_bytes,omitempty"`
	// ExecsPerMinute: as ProjectQuotas.ExecsPerMinute.
	ExecsPerMinute *int64 `json:"execs_per_minute,omitempty"`
	// StoredOutputBytes: as ProjectQuotas.StoredOutputBytes.
	StoredOutputBytes *int64 `json:"stored_output_bytes,omitempty"`
	// EgressBytesPerDay: as ProjectQuotas.EgressBytesPerDay.
	EgressBytesPerDay *int64 `json:"egress_bytes_per_day,omitempty"`
}

// ProjectUsageFigures is what a project holds now against its quotas.
type ProjectUsageFigures struct {
	// Sandboxes: live now, and creates under way.
	Sandboxes int64 `json:"sandboxes"`
	// MemoryBytes: the sum of their memory limits.
	MemoryBytes int64 `json:"memory_bytes"`
	// CPUs: the sum of their CPU limits.
	CPUs float64 `json:"cpus"`
	// DiskBytes: the sum of their disk limits.
	DiskBytes int64 `json:"disk_bytes"`
	// ExecsLastMinute: commands started in the last 60 seconds.
	ExecsLastMinute int64 `json:"execs_last_minute"`
	// StoredOutputBytes: the output the store keeps of its commands.
	StoredOutputBytes int64 `json:"stored_output_bytes"`
	// EgressBytesLastDay: what its sandboxes' egress moved in the last
	// 24 hours.
	EgressBytesLastDay int64 `json:"egress_bytes_last_day"`
}

// ProjectUsage is the answer of GET /v1/projects/{id}/usage and of PUT
// /v1/projects/{id}/quotas.
type ProjectUsage struct {
	// Project is the project's id.
	Project string `json:"project"`
	// Quotas are those in force.
	Quotas ProjectQuotas `json:"quotas"`
	// Set is what the project sets over the daemon's defaults.
	Set QuotaSettings `json:"set"`
	// Usage is what it holds now.
	Usage ProjectUsageFigures `json:"usage"`
}

// ProjectPolicy is the answer of GET and PUT /v1/projects/{id}/policy:
// the project's own policy layer, set by its admin or the operator. The
// body of the PUT is the layer itself (a PolicyLayer; {} clears it).
type ProjectPolicy struct {
	// Project is the project's id.
	Project string `json:"project"`
	// Policy is its layer; absent: none. Each new sandbox of the project
	// gets it after the policy file's section for the project (never
	// looser than its template's section: docs/tenancy.md).
	Policy *PolicyLayer `json:"policy,omitempty"`
}

// ProjectSettingsRequest is the body of PUT /v1/projects/{id}/settings:
// what the project sets for its new sandboxes. A PUT replaces both
// fields (one left out: the daemon's).
type ProjectSettingsRequest struct {
	// DefaultTemplate is the template of a create that names none
	// (absent: the daemon's, host); whether the project may start from
	// it is decided at each create.
	DefaultTemplate string `json:"default_template,omitempty"`
	// MaxLifetimeSeconds bounds the life of its sandboxes from their
	// creation, at most the daemon's maximum lifetime (absent or 0: the
	// daemon's): a create without a TTL gets it, a longer TTL is refused.
	MaxLifetimeSeconds int64 `json:"max_lifetime_seconds,omitempty"`
}

// ProjectSettings is the answer of GET and PUT /v1/projects/{id}/settings.
type ProjectSettings struct {
	// Project is the project's id.
	Project string `json:"project"`
	// DefaultTemplate: as ProjectSettingsRequest.DefaultTemplate.
	DefaultTemplate string `json:"default_template,omitempty"`
	// MaxLifetimeSeconds: as ProjectSettingsRequest.MaxLifetimeSeconds.
	MaxLifetimeSeconds int64 `json:"max_lifetime_seconds,omitempty"`
}
