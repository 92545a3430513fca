package wire

import "time"

// SecretValue is the body of PUT /v1/secrets/{name}.
type SecretValue struct {
	// Value is the secret (1 byte to 64 KiB, no NUL).
	Value string `json:"value"`
}

// SecretInfo is a stored secret: its name and times, never its value.
type SecretInfo struct {
	// Project is the project it is of (a name is a project's: another
	// project may hold a secret of the same name).
	Project string `json:"project"`
	// Name is the secret's.
	Name string `json:"name"`
	// Created is when it was first set.
	Created time.Time `json:"created"`
	// Updated is when it was last set.
	Updated time.Time `json:"updated"`
}

// SecretList is the answer of GET /v1/secrets.
type SecretList struct {
	// Secrets are the stored secrets.
	Secrets []SecretInfo `json:"secrets"`
}

// SecretGrantRequest is the body of POST /v1/secrets/{name}/grants.
type SecretGrantRequest struct {
	// SandboxID names the sandbox (exactly one of it and TaskID).
	SandboxID string `json:"sandbox_id,omitempty"`
	// TaskID names a task, whose sandbox the grant is for.
	TaskID string `json:"task_id,omitempty"`
	// Mode is "env" (the default) or "broker".
	Mode string `json:"mode,omitempty"`
	// Env is the variable's name (env mode); "": the secret's name.
	Env string `json:"env,omitempty"`
	// Hosts are the hosts the value may go to.
	Hosts []string `json:"hosts"`
	// Headers are the request headers the value goes in (broker mode);
	// empty: Authorization only. Never Cookie.
	Headers []string `json:"headers,omitempty"`
	// TTLSeconds is how long the grant lasts; 0: 1 hour; at most 24h.
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// SecretGrant lets one sandbox use a secret, for the named hosts, until it
// expires or is revoked.
type SecretGrant struct {
	// ID names the grant (sg-...).
	ID string `json:"id"`
	// Project is its sandbox's project, whose secret it grants.
	Project string `json:"project"`
	// Secret names the secret.
	Secret string `json:"secret"`
	// SandboxID is the sandbox it is for.
	SandboxID string `json:"sandbox_id"`
	// TaskID is the task it was asked for, if any.
	TaskID string `json:"task_id,omitempty"`
	// Mode "env" puts the value into every command's environment as Env;
	// "broker" puts Placeholder there, and the egress proxy swaps it for
	// the value in requests to Hosts.
	Mode string `json:"mode"`
	// Env is the variable's name.
	Env string `json:"env"`
	// Hosts are the hosts the value may go to.
	Hosts []string `json:"hosts"`
	// Placeholder stands for the value in broker mode.
	Placeholder string `json:"placeholder,omitempty"`
	// Headers are the request headers the value goes in (broker mode).
	Headers []string `json:"headers,omitempty"`
	// Created is when it was made.
	Created time.Time `json:"created"`
	// Expires is when it ends.
	Expires time.Time `json:"expires"`
	// CreatedBy is the operator who made it.
	CreatedBy string `json:"created_by"`
	// Revoked is when it was revoked, if it was.
	Revoked *time.Time `json:"revoked,omitempty"`
	// State is "active", "expired" or "revoked".
	State string `json:"state"`
}

// SecretGrantList is the answer of GET /v1/secret-grants.
type SecretGrantList struct {
	// Grants, newest first.
	Grants []SecretGrant `json:"grants"`
}
