package secrets

import (
	"context"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/egress"
)

// The module's part in the core: hook.SecretSource (the exec
// pipeline's "secrets" stage and the policy's granted variables) and
// hook.BrokerSource (the egress broker's values).

var (
	_ hook.SecretSource = (*Secrets)(nil)
	_ hook.BrokerSource = (*Secrets)(nil)
	_ hook.TaskEndHook  = (*Secrets)(nil)
)

// SecretEnv is what a command of sb gets from its grants in force:
// values (env) and placeholders (broker), each use for the record of the
// exec's start. Every value is one the redactor learned when it was set
// or when the module was attached.
func (s *Secrets) SecretEnv(ctx context.Context, sb hook.SandboxRef) ([]string, []map[string]any, error) {
	if s.key == nil {
		return nil, nil, nil
	}
	grants, err := s.st.ActiveSecretGrants(ctx, sb.ID, s.c.Now())
	if err != nil {
		return nil, nil, err
	}
	var env []string
	var uses []map[string]any
	for _, g := range grants {
		val := g.Placeholder
		if g.Mode == "env" {
			sec, err := s.st.GetSecret(ctx, g.Project, g.Secret)
			if err != nil {
				continue // deleted since: its grants went with it
			}
			v, err := s.open(sec)
			if err != nil {
				return nil, nil, err
			}
			val = string(v)
		}
		env = append(env, g.Env+"="+val)
		uses = append(uses, map[string]any{"grant": g.ID, "secret": g.Secret, "mode": g.Mode, "env": g.Env})
	}
	return env, uses, nil
}

// GrantedVars are the variables the sandbox's grants in force put into
// its commands' environment (none when they cannot be read).
func (s *Secrets) GrantedVars(ctx context.Context, sandboxID string) []string {
	if s.key == nil {
		return nil
	}
	grants, err := s.st.ActiveSecretGrants(ctx, sandboxID, s.c.Now())
	if err != nil {
		return nil
	}
	var vars []string
	for _, g := range grants {
		vars = appendUniq(vars, g.Env)
	}
	return vars
}

// BrokeredSecrets are the sandbox's brokered grants in force with their
// values, for the egress proxy to put into headers to the grants' hosts.
func (s *Secrets) BrokeredSecrets(ctx context.Context, sandboxID string) ([]egress.Secret, error) {
	grants, err := s.st.ActiveSecretGrants(ctx, sandboxID, s.c.Now())
	if err != nil {
		return nil, err
	}
	var out []egress.Secret
	for _, g := range grants {
		if g.Mode != "broker" {
			continue
		}
		sec, err := s.st.GetSecret(ctx, g.Project, g.Secret)
		if err != nil {
			continue
		}
		v, err := s.open(sec)
		if err != nil {
			return nil, err
		}
		out = append(out, egress.Secret{ID: g.ID, Placeholder: g.Placeholder, Hosts: g.Hosts, Headers: g.Headers, Value: string(v)})
	}
	return out, nil
}
