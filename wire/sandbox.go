package wire

import "time"

// Health is the answer of GET /v1/health (200, or 503 when the daemon
// takes no work).
type Health struct {
	// OK is false when the daemon takes no work (status 503).
	OK bool `json:"ok"`
	// Version is the daemon's version.
	Version string `json:"version"`
	// Backend is the daemon's default backend ("native", "gvisor").
	Backend string `json:"backend"`
	// Cgroup is the host's cgroup version ("v1" or "v2").
	Cgroup string `json:"cgroup,omitempty"`
	// Problem says why the daemon takes no work: an audit log that can no
	// longer be written.
	Problem string `json:"problem,omitempty"`
	// Code is the problem's error code (with ok false), for clients that
	// read any non-2xx answer as an error.
	Code string `json:"code,omitempty"`
	// Message repeats Problem as that error's message.
	Message string `json:"message,omitempty"`
}

// Limits are the hard resource limits of a sandbox. In a request a zero
// field means the daemon's default; a Sandbox reports the limits applied.
type Limits struct {
	// MemoryBytes bounds the sandbox's memory.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Pids bounds its processes and threads.
	Pids int64 `json:"pids,omitempty"`
	// CPUs is a CPU quota; 0: none.
	CPUs float64 `json:"cpus,omitempty"`
	// DiskBytes bounds the writable layer, /workspace and home.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
	// TmpBytes bounds /tmp.
	TmpBytes int64 `json:"tmp_bytes,omitempty"`
	// Inodes bounds the files on the writable layer.
	Inodes int64 `json:"inodes,omitempty"`
	// NoFile is the open files limit of each process.
	NoFile uint64 `json:"nofile,omitempty"`
	// Lifetime destroys the sandbox after this long.
	Lifetime time.Duration `json:"lifetime,omitempty"`
	// Ptys bounds the terminals open at once; 0: the backend's default
	// (16 on native; gvisor takes none).
	Ptys int64 `json:"ptys,omitempty"`
}

// Isolation reports what the daemon's backend actually applied.
type Isolation struct {
	// Boundary names the isolation boundary.
	Boundary string `json:"boundary"`
	// Namespaces are the Linux namespaces the sandbox has of its own.
	Namespaces []string `json:"namespaces"`
	// UIDBase is the host uid of sandbox uid 0.
	UIDBase int `json:"uid_base"`
	// Seccomp names the seccomp filter.
	Seccomp string `json:"seccomp"`
	// LandlockABI is the Landlock ABI applied; 0: none.
	LandlockABI int `json:"landlock_abi"`
	// Cgroup is "v1" or "v2".
	Cgroup string `json:"cgroup"`
	// WriteScope is the write scope enforced inside the sandbox (a task's
	// scope); absent: none.
	WriteScope *WriteScope `json:"write_scope,omitempty"`
}

// WriteScope is a write scope enforced inside a sandbox.
type WriteScope struct {
	// Paths are where writes are allowed now, sorted: the requested paths
	// intersected with every earlier scope.
	Paths []string `json:"paths"`
	// Scratch are the places that stay writable under any scope.
	Scratch []string `json:"scratch"`
	// LandlockABI is the ABI of the Landlock layer enforcing it (0: the
	// backend enforces it otherwise).
	LandlockABI int `json:"landlock_abi,omitempty"`
}

// Sandbox states (Sandbox.State).
const (
	StateRunning = "running"
	StatePaused  = "paused" // frozen until resumed
	StateStopped = "stopped"
)

// Why a sandbox stopped (Sandbox.StopReason).
const (
	StopDestroyed = "destroyed"
	StopExpired   = "expired"
	StopLost      = "lost"           // the daemon restarted while it ran
	StopFailed    = "failed"         // its init died on its own
	StopShutdown  = "daemon-stopped" // the daemon was stopped
)

// Sandbox is one sandbox as the daemon describes it. Records of stopped
// sandboxes stay (state "stopped").
type Sandbox struct {
	// ID names the sandbox.
	ID string `json:"id"`
	// Project owns it.
	Project string `json:"project,omitempty"`
	// State is "running", "paused" or "stopped".
	State string `json:"state"`
	// Backend is "native" or "gvisor".
	Backend string `json:"backend"`
	// Template is the template it was made from.
	Template string `json:"template"`
	// TemplateVersion is that template's version (content hash).
	TemplateVersion string `json:"template_version"`
	// Labels are the caller's.
	Labels map[string]string `json:"labels,omitempty"`
	// Limits are the limits applied.
	Limits Limits `json:"limits"`
	// Isolation is what the backend applied.
	Isolation Isolation `json:"isolation"`
	// Created is when it was made.
	Created time.Time `json:"created"`
	// Expires is when its time to live ends; absent: none.
	Expires time.Time `json:"expires,omitzero"`
	// Stopped is when it stopped; absent while it runs.
	Stopped time.Time `json:"stopped,omitzero"`
	// StopReason is "destroyed", "expired", "lost" (daemon restart),
	// "failed" or "daemon-stopped".
	StopReason string `json:"stop_reason,omitempty"`
	// Policy is the version of the sandbox's effective policy.
	Policy string `json:"policy,omitempty"`
	// PolicySources are the layers that made it (defaults, file,
	// template, task or sandbox).
	PolicySources []string `json:"policy_sources,omitempty"`
	// Egress is what a running sandbox's egress has put in the audit
	// record against its budget (GET of one sandbox; absent without the
	// egress proxy).
	Egress *EgressUsage `json:"egress,omitempty"`
}

// EgressUsage counts a sandbox's egress events against its audit budget
// (0: no bound).
type EgressUsage struct {
	// Events is how many egress events were recorded.
	Events int64 `json:"events"`
	// Bytes is how many bytes they took.
	Bytes int64 `json:"bytes"`
	// BudgetEvents bounds Events; 0: none.
	BudgetEvents int64 `json:"budget_events,omitempty"`
	// BudgetBytes bounds Bytes; 0: none.
	BudgetBytes int64 `json:"budget_bytes,omitempty"`
	// Cut is set once the budget is used up: the sandbox's egress is
	// refused from then on.
	Cut *EgressCut `json:"cut,omitempty"`
}

// EgressCut says when and why a sandbox's egress was cut.
type EgressCut struct {
	// At is when.
	At time.Time `json:"at"`
	// Reason is why.
	Reason string `json:"reason"`
}

// CreateSandboxRequest is the body of POST /v1/sandboxes. Every field is
// optional.
type CreateSandboxRequest struct {
	// Template names the template; "": "host".
	Template string `json:"template,omitempty"`
	// Project owns the sandbox: "" the caller's (the operator's: the
	// default project). An API key may name only its own project.
	Project string `json:"project,omitempty"`
	// Backend is "native" or "gvisor"; "": the daemon's default. One the
	// daemon does not have is an error, never a fallback.
	Backend string `json:"backend,omitempty"`
	// Limits: absent or zero fields are the daemon's defaults.
	Limits *Limits `json:"limits,omitempty"`
	// TTLSeconds destroys the sandbox after this long; 0: the daemon's
	// maximum lifetime, which it may not exceed.
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
	// Labels are kept with the sandbox.
	Labels map[string]string `json:"labels,omitempty"`
	// Env is the base environment ("K=V") of every command.
	Env []string `json:"env,omitempty"`
	// Policy is the sandbox's own policy layer over the daemon's; over
	// TCP it may only tighten.
	Policy *PolicyLayer `json:"policy,omitempty"`
	// OneShot destroys the sandbox when its first command ends (however:
	// a status, a refusal, its client gone), or a minute after the create
	// if no command was asked for by then ('airlock run' makes its so).
	OneShot bool `json:"one_shot,omitempty"`
}

// SandboxList is the answer of GET /v1/sandboxes.
type SandboxList struct {
	// Sandboxes, newest first.
	Sandboxes []Sandbox `json:"sandboxes"`
}

// TimeoutRequest is the body of POST /v1/sandboxes/{id}/timeout.
type TimeoutRequest struct {
	// TTLSeconds is the new time to live, from now (required; 0: none of
	// its own, the daemon's maximum lifetime still bounds it).
	TTLSeconds *int64 `json:"ttl_seconds"`
}

// SnapshotRequest is the body of POST /v1/sandboxes/{id}/snapshot.
type SnapshotRequest struct {
	// Name is the template the snapshot is a new version of.
	Name string `json:"name"`
}

// Snapshot is a snapshot template version.
type Snapshot struct {
	// Name is the template's.
	Name string `json:"name"`
	// Version is this version's content hash.
	Version string `json:"version"`
	// Base is the template it was made on.
	Base string `json:"base"`
	// BaseVersion is that template's version, pinned.
	BaseVersion string `json:"base_version"`
	// FromSandbox is the sandbox it was taken from.
	FromSandbox string `json:"from_sandbox"`
	// Created is when.
	Created time.Time `json:"created"`
	// SeedBytes is the size of the files it keeps.
	SeedBytes int64 `json:"seed_bytes"`
	// Project owns it (the project of the sandbox it was taken from):
	// only that project's keys see it and start from it.
	Project string `json:"project,omitempty"`
}

// TemplateImportRequest is POST /v1/templates: import an image.
type TemplateImportRequest struct {
	// Name is the new template's.
	Name string `json:"name"`
	// Source is an OCI layout directory, an OCI or docker archive (paths
	// on the daemon's host) or a registry reference.
	Source string `json:"source"`
	// RegistrySecret names the daemon's secret holding the credential
	// for the registry of a registry reference (USER:PASSWORD or a
	// docker-style JSON auth entry); its value is in no answer, error,
	// log or template record. With a local source: 400.
	RegistrySecret string `json:"registry_secret,omitempty"`
}

// TemplateImportEvent is one line of the answer of POST
// /v1/templates?progress=1 (newline-delimited JSON): progress lines, then
// the template or an error, last.
type TemplateImportEvent struct {
	// Progress is one step of the import (a layer pulled and unpacked).
	Progress string `json:"progress,omitempty"`
	// Template is the imported template (the last line).
	Template *Template `json:"template,omitempty"`
	// Error ends a failed import (the last line).
	Error *Error `json:"error,omitempty"`
}

// TemplateBuildRequest is POST /v1/templates/build: build a template
// from an airlock.template file, its RUN steps in the daemon's sandboxes.
type TemplateBuildRequest struct {
	// Name is the new template's.
	Name string `json:"name"`
	// File is the build file's absolute path on the daemon's host.
	File string `json:"file"`
	// Context is the directory COPY reads from, an absolute path on the
	// daemon's host ("": the build file's directory).
	Context string `json:"context,omitempty"`
}

// TemplateBuild is a finished build.
type TemplateBuild struct {
	// Template is the built template; its digest is the last step's.
	Template Template `json:"template"`
	// Cached is how many steps came from the build cache.
	Cached int `json:"cached"`
	// Built is how many steps were carried out.
	Built int `json:"built"`
	// Same: the template existed and the build made exactly it again.
	Same bool `json:"same,omitempty"`
}

// TemplateBuildEvent is one line of the answer of POST
// /v1/templates/build?progress=1 (newline-delimited JSON): progress
// lines (each step, the RUN steps' output), then the build or an error.
type TemplateBuildEvent struct {
	// Progress is a step begun or a line of a RUN step's output.
	Progress string `json:"progress,omitempty"`
	// Build is the finished build (the last line).
	Build *TemplateBuild `json:"build,omitempty"`
	// Error ends a failed build (the last line).
	Error *Error `json:"error,omitempty"`
}

// Template is a template sandboxes can start from.
type Template struct {
	// Name is the template's.
	Name string `json:"name"`
	// Version is its current version.
	Version string `json:"version"`
	// Kind is "builtin", "snapshot", "image", "debian" or "build".
	Kind string `json:"kind"`
	// Base is a snapshot's base template (an image's source).
	Base string `json:"base,omitempty"`
	// Digest pins an imported image (its manifest's digest).
	Digest string `json:"digest,omitempty"`
	// Created is when it was made.
	Created time.Time `json:"created"`
	// Project owns it ("": a shared template, read-only to every
	// project; a snapshot is its project's alone).
	Project string `json:"project,omitempty"`
}

// TemplateList is the answer of GET /v1/templates.
type TemplateList struct {
	// Templates are the built-in templates and the snapshots.
	Templates []Template `json:"templates"`
}
