package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/review"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/secrets"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/wire"
)

// The conversions between the daemon's own types and the API's bodies
// (package wire), field by field, so that what the API sends is what wire
// spells (wire_test.go fails when a field of the daemon's would be
// dropped here). A nil list stays null, as the daemon always sent it.

func mapAll[T, W any](in []T, f func(T) W) []W {
	if in == nil {
		return nil
	}
	out := make([]W, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func names[S ~string](in []S) []string {
	return mapAll(in, func(s S) string { return string(s) })
}

func limitsOut(l runtime.Limits) wire.Limits {
	return wire.Limits{MemoryBytes: l.MemoryBytes, Pids: l.Pids, CPUs: l.CPUs, DiskBytes: l.DiskBytes, TmpBytes: l.TmpBytes,
		Inodes: l.Inodes, NoFile: l.NoFile, Lifetime: l.Lifetime, Ptys: l.Ptys}
}

func limitsIn(l wire.Limits) runtime.Limits {
	return runtime.Limits{MemoryBytes: l.MemoryBytes, Pids: l.Pids, CPUs: l.CPUs, DiskBytes: l.DiskBytes, TmpBytes: l.TmpBytes,
		Inodes: l.Inodes, NoFile: l.NoFile, Lifetime: l.Lifetime, Ptys: l.Ptys}
}

func isolationOut(i runtime.Isolation) wire.Isolation {
	w := wire.Isolation{Boundary: i.Boundary, Namespaces: i.Namespaces, UIDBase: i.UIDBase, Seccomp: i.Seccomp,
		LandlockABI: i.LandlockABI, Cgroup: i.Cgroup}
	if s := i.WriteScope; s != nil {
		w.WriteScope = &wire.WriteScope{Paths: s.Paths, Scratch: s.Scratch, LandlockABI: s.LandlockABI}
	}
	return w
}

func usageOut(u *egress.Usage) *wire.EgressUsage {
	if u == nil {
		return nil
	}
	w := &wire.EgressUsage{Events: u.Events, Bytes: u.Bytes, BudgetEvents: u.BudgetEvents, BudgetBytes: u.BudgetBytes}
	if u.Cut != nil {
		w.Cut = &wire.EgressCut{At: u.Cut.At, Reason: u.Cut.Reason}
	}
	return w
}

func sandboxOut(s *sandbox.Sandbox) wire.Sandbox {
	return wire.Sandbox{ID: s.ID, Project: s.Project, State: s.State, Backend: s.Backend, Template: s.Template, TemplateVersion: s.TemplateVersion,
		Labels: s.Labels, Limits: limitsOut(s.Limits), Isolation: isolationOut(s.Isolation), Created: s.Created,
		Expires: timeOf(s.Expires), Stopped: timeOf(s.Stopped), StopReason: s.StopReason, Policy: s.Policy,
		PolicySources: s.PolicySources, Egress: usageOut(s.Egress)}
}

func exitOut(s *runtime.ExitStatus) *wire.ExitStatus {
	if s == nil {
		return nil
	}
	w := &wire.ExitStatus{Code: s.Code, Signal: s.Signal, Limit: string(s.Limit), StdoutBytes: s.StdoutBytes, StderrBytes: s.StderrBytes,
		StdoutTruncated: s.StdoutTruncated, StderrTruncated: s.StderrTruncated, Duration: s.Duration, UserTime: s.UserTime,
		SystemTime: s.SystemTime, MaxRSSBytes: s.MaxRSSBytes}
	if f := s.Files; f != nil {
		w.Files = &wire.FileActivity{Written: f.Written, Deleted: f.Deleted, Chmod: f.Chmod, Read: f.Read, Incomplete: f.Incomplete, Shared: f.Shared}
	}
	return w
}

func execOut(e *sandbox.Exec) wire.Exec {
	w := wire.Exec{ID: e.ID, SandboxID: e.SandboxID, Argv: e.Argv, Cwd: e.Cwd, EnvNames: e.EnvNames, Started: e.Started,
		Ended: timeOf(e.Ended), Status: exitOut(e.Status), Error: e.Error}
	if p := e.Policy; p != nil {
		w.Policy = &wire.ExecPolicy{Action: string(p.Action), Classes: names(p.Classes), Rules: p.Rules, Reason: p.Reason,
			Grant: p.Grant, BreakGlass: p.BreakGlass, Version: p.Version}
	}
	return w
}

func fileInfoOut(f runtime.FileInfo) wire.FileInfo {
	return wire.FileInfo{Name: f.Name, Path: f.Path, Type: f.Type, Size: f.Size, Mode: f.Mode, ModTime: f.ModTime, UID: f.UID, GID: f.GID, Target: f.Target}
}

func snapshotOut(s *snapshots.Snapshot) wire.Snapshot {
	return wire.Snapshot{Name: s.Name, Version: s.Version, Base: s.Base, BaseVersion: s.BaseVersion, FromSandbox: s.FromSandbox,
		Created: s.Created, SeedBytes: s.SeedBytes, Project: s.Project}
}

func templateOut(t *sandbox.TemplateInfo) wire.Template {
	return wire.Template{Name: t.Name, Version: t.Version, Kind: t.Kind, Base: t.Base, Created: t.Created, Project: t.Project}
}

func testRunOut(r tasks.TestRun) wire.TestRun {
	return wire.TestRun{ExecID: r.ExecID, Passed: r.Passed, Status: *exitOut(&r.Status), Started: r.Started, Finished: r.Finished}
}

func taskOut(t *tasks.Task) *wire.Task {
	if t == nil {
		return nil
	}
	w := &wire.Task{ID: t.ID, SandboxID: t.SandboxID, State: t.State, Repo: t.Repo, Ref: t.Ref, Commit: t.Commit, Scope: t.Scope,
		Test: t.Test, Prompt: t.Prompt, Tests: mapAll(t.Tests, testRunOut), OutputDir: t.OutputDir, Created: t.Created, Finished: t.Finished}
	if g := t.WorkspaceGone; g != nil {
		w.WorkspaceGone = &wire.WorkspaceGone{Reason: g.Reason, Stopped: g.Stopped, DiffKept: g.DiffKept, DiffError: g.DiffError, Note: g.Note}
	}
	if b := t.Bundle; b != nil {
		w.Bundle = &wire.TaskBundle{SHA256: b.SHA256, Bytes: b.Bytes}
	}
	return w
}

func diffOut(d *tasks.Diff) *wire.Diff {
	if d == nil {
		return nil
	}
	w := &wire.Diff{Base: d.Base, Patch: d.Patch, OutOfScope: d.OutOfScope, Files: mapAll(d.Files, func(f tasks.ChangedFile) wire.ChangedFile {
		return wire.ChangedFile{Path: f.Path, Status: f.Status, InScope: f.InScope}
	})}
	if ig := d.Ignored; ig != nil {
		w.Ignored = &wire.Ignored{Files: ig.Files, Bytes: ig.Bytes, Roots: ig.Roots}
	}
	w.Dependencies = mapAll(d.Dependencies, func(c tasks.DependencyChange) wire.DependencyChange {
		return wire.DependencyChange{Manager: c.Manager, Lockfile: c.Lockfile, Name: c.Name, From: c.From, To: c.To, Change: c.Change, Integrity: c.Integrity}
	})
	w.UnreadableLockfiles = d.UnreadableLockfiles
	return w
}

func finishOut(r *tasks.FinishResult) wire.FinishResult {
	w := wire.FinishResult{Task: taskOut(r.Task), OutputDir: r.OutputDir, Files: r.Files, Diff: diffOut(r.Diff)}
	if r.Test != nil {
		t := testRunOut(*r.Test)
		w.Test = &t
	}
	return w
}

func decisionOut(d *policy.Decision) (wire.Decision, error) {
	w := wire.Decision{Action: string(d.Action), Reason: d.Reason, OutOfScope: d.OutOfScope, Policy: d.Policy, Grant: d.Grant,
		BreakGlass: d.BreakGlass, Matches: mapAll(d.Matches, func(m policy.Match) wire.PolicyMatch {
			return wire.PolicyMatch{Rule: m.Rule, Action: string(m.Action), Command: m.Command, Class: string(m.Class), Reason: m.Reason}
		})}
	a, err := json.Marshal(d.Analysis)
	w.Analysis = a
	return w, err
}

func approvalOut(a *approvals.Approval) wire.Approval {
	w := wire.Approval{ID: a.ID, SandboxID: a.SandboxID, TaskID: a.TaskID, State: a.State, RequestedBy: a.RequestedBy,
		Created: a.Created, Deadline: a.Deadline, Decided: timeOf(a.Decided), DecidedBy: a.DecidedBy, Reason: a.Reason, GrantID: a.GrantID}
	if p := a.Prompt; p != nil {
		w.Prompt = &wire.Prompt{Command: p.Command, Argv: p.Argv, Cwd: p.Cwd, Classes: names(p.Classes), Held: names(p.Held),
			Writes: p.Writes, Network: p.Network, Credentials: p.Credentials, Effect: p.Effect, Reason: p.Reason, Rules: p.Rules, Policy: p.Policy}
	}
	return w
}

func breakGlassOut(b *approvals.BreakGlass) wire.BreakGlass {
	return wire.BreakGlass{ID: b.ID, SandboxID: b.SandboxID, Actor: b.Actor, Reason: b.Reason, Created: b.Created, Expires: b.Expires}
}

func secretInfoOut(s *secrets.Info) wire.SecretInfo {
	return wire.SecretInfo{Name: s.Name, Created: s.Created, Updated: s.Updated}
}

func secretGrantOut(g *secrets.Grant) wire.SecretGrant {
	return wire.SecretGrant{ID: g.ID, Secret: g.Secret, SandboxID: g.SandboxID, TaskID: g.TaskID, Mode: g.Mode, Env: g.Env,
		Hosts: g.Hosts, Placeholder: g.Placeholder, Headers: g.Headers, Created: g.Created, Expires: g.Expires,
		CreatedBy: g.CreatedBy, Revoked: g.Revoked, State: g.State}
}

func auditEventOut(e *audit.Event) wire.AuditEvent {
	return wire.AuditEvent{Seq: e.Seq, Time: e.Time, SandboxID: e.SandboxID, TaskID: e.TaskID, ExecID: e.ExecID, Actor: e.Actor,
		Kind: e.Kind, Payload: e.Payload, Prev: e.Prev, Hash: e.Hash}
}

func auditReportOut(r *audit.Report) wire.AuditReport {
	return wire.AuditReport{Events: r.Events, Head: r.Head, Hash: r.Hash, Blobs: r.Blobs, Purged: r.Purged,
		Problems: mapAll(r.Problem, func(p audit.Problem) wire.AuditProblem { return wire.AuditProblem{Seq: p.Seq, What: p.What} })}
}

func purgeOut(r *review.PurgeResult) wire.PurgeResult {
	return wire.PurgeResult{Before: r.Before, TaskResults: r.TaskResults, Outputs: r.Outputs, AuditBlobs: r.AuditBlobs}
}

func apiKeyOut(k *apikeys.Key) wire.APIKey {
	return wire.APIKey{ID: k.ID, Name: k.Name, Created: k.Created, Project: k.Project, Role: string(k.Role), Expires: k.Expires}
}

// policyLayerIn reads a request's policy layer as the daemon's own type,
// as strictly as the body itself (an unknown field is refused).
func policyLayerIn(l *wire.PolicyLayer) (*policy.Layer, error) {
	if l == nil {
		return nil, nil
	}
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: policy: %v: %w", err, errdefs.ErrInvalid)
	}
	var out policy.Layer
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("malformed JSON: policy: %v: %w", err, errdefs.ErrInvalid)
	}
	return &out, nil
}

func createIn(r wire.CreateSandboxRequest) (sandbox.CreateRequest, error) {
	req := sandbox.CreateRequest{Template: r.Template, Project: r.Project, Backend: r.Backend, TTLSeconds: r.TTLSeconds, Labels: r.Labels, Env: r.Env, OneShot: r.OneShot}
	if r.Limits != nil {
		req.Limits = limitsIn(*r.Limits)
	}
	var err error
	req.Policy, err = policyLayerIn(r.Policy)
	return req, err
}

func taskIn(r wire.TaskRequest) (tasks.TaskRequest, error) {
	req := tasks.TaskRequest{Repo: r.Repo, Ref: r.Ref, Scope: r.Scope, Test: r.Test, Prompt: r.Prompt, Template: r.Template,
		Backend: r.Backend, Limits: limitsIn(r.Limits), TTLSeconds: r.TTLSeconds, Env: r.Env, Commit: r.Commit}
	var err error
	req.Policy, err = policyLayerIn(r.Policy)
	return req, err
}

func grantIn(r wire.SecretGrantRequest) secrets.GrantRequest {
	return secrets.GrantRequest{SandboxID: r.SandboxID, TaskID: r.TaskID, Mode: r.Mode, Env: r.Env, Hosts: r.Hosts,
		Headers: r.Headers, TTLSeconds: r.TTLSeconds}
}
