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
