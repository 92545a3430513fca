// Package tenant names who acts and for which project (issue 22): the
// principal of a request, its role, and what each role may do.
//
// Invariants:
//   - Every object belongs to exactly one project, fixed when it is made.
//   - A principal sees only its own project's objects, except the host's
//     operator (the daemon's unix socket), who sees every project.
//   - A context without a principal is the daemon itself (its timers, its
//     pools, its modules' own work) and acts as the operator: every door
//     puts a principal on each request before anything else reads it.
//   - Roles are ordered (agent < reviewer < admin < operator); a role may
//     do what the roles below it may.
//
// It imports only errdefs.
package tenant

import (
	"context"
	"fmt"
	"regexp"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Role is what a principal may do in its project.
type Role string

// The roles, lowest first.
const (
	// Agent creates and uses sandboxes and tasks; it can only tighten
	// policy, never approves, never reads secrets.
	Agent Role = "agent"
	// Reviewer is an agent that also decides approvals (never its own
	// requests), exports bundles and reads its project's audit log.
	Reviewer Role = "reviewer"
	// Admin is a reviewer that also manages its project's keys, policy
	// and egress layers, secrets, quotas and break-glass.
	Admin Role = "admin"
	// Operator is the host's: every project, kill switches and the
	// daemon-wide settings. Only the unix socket is the operator.
	Operator Role = "operator"
)

// Roles are the roles a key may have, lowest first (the operator is
// not a key's role: it is the socket's).
var Roles = []Role{Agent, Reviewer, Admin}

func (r Role) rank() int {
	switch r {
	case Agent:
		return 1
	case Reviewer:
		return 2
	case Admin:
		return 3
	case Operator:
		return 4
	}
	return 0
}

// AtLeast says whether r may do what min may. An unknown role may do
// nothing, and nothing is enough for an unknown min (fail closed).
func (r Role) AtLeast(min Role) bool {
	return r.rank() > 0 && min.rank() > 0 && r.rank() >= min.rank()
}

// ParseKeyRole checks a role named for an API key.
func ParseKeyRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("role %q: one of agent, reviewer, admin (the operator is the daemon's unix socket, not a key): %w", s, errdefs.ErrInvalid)
}

// Default is the project everything of a database made before projects
// belongs to, and where the operator's requests that name none go.
const Default = "default"

var projectName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// CheckProject checks a project's name: a lower-case letter, then up to
// 39 lower-case letters, digits and dashes.
func CheckProject(name string) error {
	if !projectName.MatchString(name) {
		return fmt.Errorf("project %q: a lower-case letter, then at most 39 lower-case letters, digits or '-': %w", name, errdefs.ErrInvalid)
	}
	return nil
}

// Principal is who makes a request: a key of a project in a role, or
// the operator.
type Principal struct {
	// Project is the key's project ("" for the operator: every project).
	Project string
	Role    Role
	// KeyID names the key ("" for the operator).
	KeyID string
}

// OperatorPrincipal is the unix socket's caller.
var OperatorPrincipal = Principal{Role: Operator}

// IsOperator says whether p sees every project.
func (p Principal) IsOperator() bool { return p.Role == Operator }

// Sees says whether p may see an object of project (the operator sees
// every one).
func (p Principal) Sees(project string) bool {
	return p.IsOperator() || (p.Project != "" && p.Project == project)
}

type principalKey struct{}

// With puts p on ctx.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// Of is the principal of ctx; a context with none is the daemon's own
// work, the operator (see the package invariants).
func Of(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return OperatorPrincipal
}

// Scope is the project a list made for ctx is confined to: "" for the
// operator (every project).
func Scope(ctx context.Context) string {
	p := Of(ctx)
	if p.IsOperator() {
		return ""
	}
	return p.Project
}

// NewObjectProject is the project a new object made for ctx belongs to:
// the principal's own; the operator's goes to asked, or Default. A key
// asking for another project than its own is refused as that project not
// existing (a key learns nothing of other projects).
func NewObjectProject(ctx context.Context, asked string) (string, error) {
	p := Of(ctx)
	if p.IsOperator() {
		if asked == "" {
			return Default, nil
		}
		return asked, CheckProject(asked)
	}
	if asked != "" && asked != p.Project {
		return "", fmt.Errorf("project %q: %w", asked, errdefs.ErrNotFound)
	}
	return p.Project, nil
}

// Kind is a kind of object a project owns, as a route names it.
type Kind string

// The kinds of object a route's path may name.
const (
	Sandbox  Kind = "sandbox"
	Task     Kind = "task"
	Approval Kind = "approval"
	APIKey   Kind = "apikey"
	Grant    Kind = "secret grant"
	Project  Kind = "project"
)

// Kinds are every Kind, for the tests that cover each.
var Kinds = []Kind{Sandbox, Task, Approval, APIKey, Grant, Project}
