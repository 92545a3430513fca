// Package templatebuild runs the RUN steps of template builds
// (internal/template/build) inside the daemon's boundary: each step in a
// fresh sandbox of the daemon's core, created from the build's stack so
// far, its command through the core's exec pipeline (the command policy:
// a denied or held step fails the build naming the denial or the
// approval; the audit log: the sandbox's and the exec's events), its
// network through the egress proxy to the hosts of the build file's
// egress: presets only (added to the daemon's policy, and a layer that
// closes everything else it allows), and the egress record of its
// sandbox (every request: host, port, path, status, bytes, decision)
// kept as the step's provenance in the template's record, with the
// review module's package evidence of it (the lockfiles a dependency
// command changed: packages and versions, the lockfile's hash, the
// registries reached).
//
// Stacks is the daemon's module that lends the core each step's stack as
// a template for the sandbox's life only (never listed); Runner is the
// build.Runner over the core.
package templatebuild

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/build"
)

// LabelBuild is the label of a build step's sandbox: the template being
// built (its sandbox.create event carries it); LabelLine the step's line.
const (
	LabelBuild = "airlock.build"
	LabelLine  = "airlock.build.line"
)

// Stacks is the module of the stacks lent to running steps.
type Stacks struct {
	mu sync.Mutex
	m  map[string]*sandbox.Base
	c  hook.Core
}

// New makes the module.
func New() *Stacks { return &Stacks{m: map[string]*sandbox.Base{}} }

// Name implements hook.Module.
func (s *Stacks) Name() string { return "templatebuild" }

// Attach implements hook.Module.
func (s *Stacks) Attach(c hook.Core) error {
	s.c = c
	return nil
}

// Template implements hook.TemplateSource: a stack lent to a running
// step, taken by the first create that asks for it (the step's own,
// made right after the lend): no other caller, even one that learns the
// name from the step's sandbox record, starts a sandbox of a build's
// insides (its COPY'd context files).
func (s *Stacks) Template(_ context.Context, name string) (*sandbox.Base, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.m[name]; ok {
		delete(s.m, name)
		return b, nil
	}
	return nil, fmt.Errorf("no build stack %q: %w", name, errdefs.ErrNotFound)
}

// Templates implements hook.TemplateSource: a lent stack is no template
// anyone else may start from, so none is listed.
func (s *Stacks) Templates(context.Context) ([]*sandbox.TemplateInfo, error) { return nil, nil }

// lend makes t a template of a fresh name until the returned func runs;
// from is the build's FROM, whose section of the policy file its
// sandboxes get (sandbox.Base.Lineage) before the stack's own (none).
func (s *Stacks) lend(t *template.Template, version, from string) (string, func()) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "build-step-" + hex.EncodeToString(b[:])
	s.mu.Lock()
	s.m[name] = &sandbox.Base{Name: name, Version: version, RootFS: t.Dir, Lowers: t.Lowers, Env: t.Env, WorkDir: t.WorkDir}
	if from != "" {
		s.m[name].Lineage = []string{from}
	}
	s.mu.Unlock()
	return name, func() {
		s.mu.Lock()
		delete(s.m, name)
		s.mu.Unlock()
	}
}

// Core is what Runner uses of the sandbox core (*manager.Manager).
type Core interface {
	Create(ctx context.Context, req sandbox.CreateRequest) (*sandbox.Sandbox, error)
	Exec(ctx context.Context, id string, req sandbox.ExecRequest, started func(execID string, pid int), stdout, stderr io.Writer) (string, *runtime.ExitStatus, error)
	Files(ctx context.Context, id string) (runtime.Files, error)
	Destroy(ctx context.Context, id string) error
}

// Runner is a build.Runner of one build (Name) on the daemon's core.
type Runner struct {
	Core   Core
	Stacks *Stacks // attached to Core's manager
	Name   string  // the template being built (the sandboxes' label)
	Limits runtime.Limits
	// Output hears the steps' stdout and stderr (nil: discarded; the
	// exec records keep them, capped, either way).
	Output io.Writer
	// From is the build's FROM: the policy file's section for it applies
	// to the steps' sandboxes.
	From string
	// Presets are the daemon's egress presets (name -> hosts): a step
	// reaches only the hosts of those its file's egress: names.
	Presets netpolicy.Presets
}

// onlyPresets is a step's network layer: everything denied but the
// hosts of the named presets. The presets open those hosts over the
// daemon's policy; this layer closes whatever else the daemon's policy
// lets every sandbox reach, so a step reaches only what its build file
// names (the "egress allowed only to what egress: names"). A
// layer only narrows: it never opens what the daemon's policy does not.
func onlyPresets(names []string, presets netpolicy.Presets) *netpolicy.Policy {
	var hosts []string
	for _, n := range names {
		for _, h := range presets[n] {
			// an exception names a host, on every port: which ports are
			// open is the preset's (the allow the presets add)
			if hh, _, err := net.SplitHostPort(h); err == nil {
				h = hh
			}
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	return &netpolicy.Policy{Rules: []netpolicy.Rule{{ID: "build-egress-only", Action: netpolicy.Deny,
		CIDRs: []string{"0.0.0.0/0", "::/0"}, ExceptHosts: hosts}}}
}

// Run implements build.Runner.
func (r *Runner) Run(ctx context.Context, t *template.Template, req build.RunRequest, w io.Writer) (*build.RunRecord, error) {
	if r.Stacks == nil || r.Stacks.c == nil {
		return nil, errdefs.Wrap(errdefs.ErrUnsupported, "this daemon runs no build steps (the templatebuild module is not attached)")
	}
	name, give := r.Stacks.lend(t, shortDigest(req.Stack), r.From)
	defer give()
	creq := sandbox.CreateRequest{Template: name, Limits: r.Limits, Labels: map[string]string{LabelBuild: r.Name}}
	if req.Line > 0 {
		creq.Labels[LabelLine] = fmt.Sprint(req.Line)
	}
	if len(req.Egress) > 0 {
		creq.Policy = &policy.Layer{Egress: &netpolicy.Policy{Presets: req.Egress}}
	}
	creq.NetworkLayer = onlyPresets(req.Egress, r.Presets)
	sb, err := r.Core.Create(ctx, creq)
	if err != nil {
		return nil, fmt.Errorf("the step's sandbox: %w", err)
	}
	rec := &build.RunRecord{Sandbox: sb.ID}
	err = r.runIn(ctx, sb.ID, req, w, rec)
	// the record is read once the sandbox is gone (its connections closed,
	// their last bytes recorded), whatever the step did: a refused fetch
	// is evidence of a failed step too
	_ = r.Core.Destroy(context.WithoutCancel(ctx), sb.ID)
	var eerr error
	if rec.Fetched, eerr = r.fetched(ctx, sb.ID); eerr == nil {
		rec.Packages, eerr = r.packages(ctx, sb.ID)
	}
	if err == nil && eerr != nil {
		err = fmt.Errorf("the step's egress record: %w", eerr)
	}
	return rec, err
}

// runIn runs the step in the live sandbox id and writes its layer to w.
func (r *Runner) runIn(ctx context.Context, id string, req build.RunRequest, w io.Writer, rec *build.RunRecord) error {
	out := r.Output
	if out == nil {
		out = io.Discard
	}
	execID, st, err := r.Core.Exec(ctx, id, sandbox.ExecRequest{Argv: req.Argv, Cwd: req.Cwd}, nil, out, out)
	rec.Exec = execID
	if err != nil {
		return stepRefused(err)
	}
	if st.Code != 0 || st.Limit != "" {
		return fmt.Errorf("the command exited %d%s (exec %s of sandbox %s)", st.Code, limitNote(st.Limit), execID, id)
	}
	f, err := r.Core.Files(ctx, id)
	if err != nil {
		return err
	}
	return build.ChangesTar(ctx, f, w)
}

// shortDigest is a stack's version as templates show theirs.
func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return d
}

func limitNote(l runtime.Limit) string {
	if l == "" {
		return ""
	}
	return fmt.Sprintf(" (limit %s)", l)
}

// stepRefused names the policy's refusal of a step: its code and the
// approval a held step waited for.
func stepRefused(err error) error {
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) {
		return err
	}
	what := "the daemon's policy refused the command (" + pe.Code
	if pe.Approval != "" {
		what += ", approval " + pe.Approval
	}
	if len(pe.Rules) > 0 {
		what += ", rules " + strings.Join(pe.Rules, ", ")
	}
	return fmt.Errorf("%s): %w", what, err)
}

// egressPayload is what fetched reads of an egress event.
type egressPayload struct {
	Conn      uint64 `json:"conn"`
	Decision  string `json:"decision"`
	Rule      string `json:"rule"`
	Method    string `json:"method"`
	Host      string `json:"host"`
	Port      int    `json:"port"`
	Path      string `json:"path"`
	Status    int    `json:"status"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
	Of        string `json:"of"`
	Count     int64  `json:"count"`
}

// fetched is the egress record of the step's sandbox, one entry per
// CONNECT or HTTP request with the bytes and status of its connection
// (as the review bundle's network requests are read), with the path.
func (r *Runner) fetched(ctx context.Context, id string) ([]template.Fetch, error) {
	c := r.Stacks.c
	log := c.AuditLog()
	if log == nil {
		return nil, nil // no audit log: nothing is kept, and no egress runs without one
	}
	c.FlushRefusals(ctx, id)
	events, err := log.Query(ctx, store.AuditFilter{SandboxID: id, Kind: "egress"})
	if err != nil {
		return nil, err
	}
	var out []template.Fetch
	last := map[uint64]int{}
	for _, e := range events {
		var p egressPayload
		if json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		switch egress.EventKind(e.Kind) {
		case egress.KindConnect, egress.KindRequest:
			m := p.Method
			if e.Kind == string(egress.KindConnect) {
				m = "CONNECT"
			}
			out = append(out, template.Fetch{Method: m, Host: p.Host, Port: p.Port, Path: p.Path, Decision: p.Decision, Rule: p.Rule})
			if p.Conn != 0 {
				last[p.Conn] = len(out) - 1
			}
		case egress.KindRefusedSummary:
			if p.Of == string(egress.KindConnect) || p.Of == string(egress.KindRequest) {
				out = append(out, template.Fetch{Method: p.Method, Host: p.Host, Port: p.Port, Path: p.Path, Decision: "deny", Rule: p.Rule, Count: p.Count})
			}
		case egress.KindClose, egress.KindResponse:
			if i, ok := last[p.Conn]; ok && p.Conn != 0 {
				f := &out[i]
				f.BytesOut += p.BytesUp
				f.BytesIn += p.BytesDown
				if p.Status != 0 {
					f.Status = p.Status
				}
				if p.Decision == "deny" {
					f.Decision, f.Rule = p.Decision, p.Rule
				}
			}
		}
	}
	return out, nil
}

// packagePayload is what packages reads of a package.change event.
type packagePayload struct {
	Lockfile   string                    `json:"lockfile"`
	Manager    string                    `json:"manager"`
	After      string                    `json:"after_sha256"`
	Changes    []template.PackageVersion `json:"changes"`
	Registries []string                  `json:"registries"`
	Hashes     map[string]string         `json:"hashes"`
	ParseError string                    `json:"parse_error"`
}

// packages is the review module's package evidence of the step's
// sandbox: each package.change event (a dependency command's lockfile
// before and after it).
func (r *Runner) packages(ctx context.Context, id string) ([]template.PackageChange, error) {
	log := r.Stacks.c.AuditLog()
	if log == nil {
		return nil, nil
	}
	events, err := log.Query(ctx, store.AuditFilter{SandboxID: id, Kind: "package.change"})
	if err != nil {
		return nil, err
	}
	var out []template.PackageChange
	for _, e := range events {
		var p packagePayload
		if json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		out = append(out, template.PackageChange{Lockfile: p.Lockfile, Manager: p.Manager, SHA256: p.After, Changes: p.Changes, Registries: p.Registries, Hashes: p.Hashes, ParseError: p.ParseError})
	}
	return out, nil
}
