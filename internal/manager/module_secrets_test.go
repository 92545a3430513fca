package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/store"
)

// source is a module with the secrets surface: it gives every command
// NAME_TOKEN=value (or fails), brokers one secret, and logs task ends.
type source struct {
	name, value string
	log         *hookLog
	core        hook.Core
	failEnv     bool
	failEnd     bool
	brokerErr   error
}

func (s *source) Name() string             { return s.name }
func (s *source) Attach(c hook.Core) error { s.core = c; return nil }

func (s *source) SecretEnv(_ context.Context, sb hook.SandboxRef) ([]string, []map[string]any, error) {
	if s.failEnv {
		return nil, nil, errors.New("the vault is shut")
	}
	return []string{s.name + "_TOKEN=" + s.value}, []map[string]any{{"from": s.name, "sandbox": sb.ID}}, nil
}

func (s *source) GrantedVars(context.Context, string) []string { return []string{s.name + "_TOKEN"} }

func (s *source) BrokeredSecrets(_ context.Context, id string) ([]egress.Secret, error) {
	return []egress.Secret{{ID: s.name + "-" + id, Placeholder: "ph-" + s.name, Hosts: []string{"a.test"}, Value: s.value}}, s.brokerErr
}

func (s *source) OnTaskEnd(_ context.Context, sb hook.SandboxRef) error {
	s.log.add(s.name + ".end:" + sb.TaskID)
	if s.failEnd {
		return errors.New("cannot end")
	}
	return nil
}

// The "secrets" stage: every SecretSource's env reaches the command, in
// module order, after the ExecHooks; the policy counts its variables as
// granted; exec.start names the uses but not the variables; a source's
// error ends the exec before anything is recorded of it.
func TestSecretSourcesInThePipeline(t *testing.T) {
	ctx := context.Background()
	log := &hookLog{}
	a, b := &source{name: "A", value: "va", log: log}, &source{name: "B", value: "vb", log: log}
	m, alog := fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{a, b} })
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	execID, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", `echo "$A_TOKEN $B_TOKEN"`}}, nil, &out, nil)
	if err != nil || out.String() != "va vb\n" {
		t.Fatalf("the sources' env: %q %v", out.String(), err)
	}
	evs, err := alog.Query(ctx, store.AuditFilter{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	var start struct {
		EnvNames []string         `json:"env_names"`
		Secrets  []map[string]any `json:"secrets"`
	}
	for _, e := range evs {
		if e.Kind == "exec.start" && e.ExecID == execID {
			_ = json.Unmarshal(e.Payload, &start)
		}
	}
	if len(start.Secrets) != 2 || start.Secrets[0]["from"] != "A" || start.Secrets[1]["from"] != "B" || slices.Contains(start.EnvNames, "A_TOKEN") {
		t.Errorf("exec.start: %+v", start)
	}
	before, _ := m.recs.Execs(ctx, sb.ID)
	b.failEnv = true
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil); err == nil {
		t.Error("a source's error did not end the exec")
	}
	if after, _ := m.recs.Execs(ctx, sb.ID); len(after) != len(before) {
		t.Errorf("the exec a source failed was recorded: %d execs, had %d", len(after), len(before))
	}
	if got := m.hooks.GrantedVars(ctx, sb.ID); !slices.Equal(got, []string{"A_TOKEN", "B_TOKEN"}) {
		t.Errorf("granted vars: %v", got)
	}
}

// BrokerSources' secrets join the egress policy (the shown one without
// values); an error fails it. TaskEnded runs the TaskEndHooks in order
// and stops at the first error.
func TestBrokerSourcesAndTaskEnded(t *testing.T) {
	ctx := context.Background()
	log := &hookLog{}
	a, b := &source{name: "A", value: "va", log: log}, &source{name: "B", value: "vb", log: log}
	m, _ := fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{a, b} })
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The network module's broker is the core's: every source's secrets,
	// in module order, with their values (the network module hides them
	// from the policy it shows: internal/sandboxnet's tests).
	bs, err := a.core.BrokeredSecrets(ctx, sb.ID)
	if err != nil || len(bs) != 2 || bs[0].ID != "A-"+sb.ID || bs[1].Placeholder != "ph-B" || bs[0].Value != "va" {
		t.Errorf("brokered secrets: %+v %v", bs, err)
	}
	b.brokerErr = errors.New("broken")
	if _, err := a.core.BrokeredSecrets(ctx, sb.ID); err == nil {
		t.Error("a broker source's error did not fail the brokered secrets")
	}
	ref := hook.SandboxRef{ID: sb.ID, TaskID: "t-1"}
	if err := a.core.TaskEnded(ctx, ref); err != nil || !slices.Equal(log.take(), []string{"A.end:t-1", "B.end:t-1"}) {
		t.Errorf("task ended: %v", err)
	}
	a.failEnd = true
	if err := a.core.TaskEnded(ctx, ref); err == nil || !slices.Equal(log.take(), []string{"A.end:t-1"}) {
		t.Errorf("a hook's error: %v, want it returned and the next hook not called", err)
	}
	if a.core.HasEgress() || a.core.Actor(sandbox.WithActor(ctx, "operator:x")) != "operator:x" || a.core.Actor(ctx) != "unknown" {
		t.Error("core: egress or actor wrong")
	}
	if err := a.core.ApplyEgress(ctx, sb.ID); err != nil {
		t.Errorf("apply egress without the service: %v", err)
	}
}
