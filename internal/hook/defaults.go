package hook

import (
	"context"
	"time"
)

// CreateDefaults are what a project sets for its new sandboxes (the
// projects module's settings): the template of a create that names none,
// and a bound on their lifetime below the daemon's.
type CreateDefaults struct {
	// Template is the template of a create that names none ("": the
	// daemon's, host).
	Template string
	// MaxLifetime bounds the life of the project's sandboxes, as the
	// daemon's MaxLifetime does every sandbox's: a create without a TTL
	// gets it, and a longer TTL (at create or later) is refused. 0: the
	// daemon's; the core takes the shorter of the two.
	MaxLifetime time.Duration
}

// Defaulter is a module that gives a project's creates their defaults.
// At most one attaches (the first in module order answers).
type Defaulter interface {
	// CreateDefaults is project's; an error refuses the create (its
	// settings cannot be read: fail closed).
	CreateDefaults(ctx context.Context, project string) (CreateDefaults, error)
}

// CreateDefaults is the attached Defaulter's answer for project (none
// attached: no defaults).
func (s *Set) CreateDefaults(ctx context.Context, project string) (CreateDefaults, error) {
	if len(s.Defaults) == 0 {
		return CreateDefaults{}, nil
	}
	return s.Defaults[0].Hook.CreateDefaults(ctx, project)
}
