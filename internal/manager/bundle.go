package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/store"
)

// TaskBundle is a task as its review bundle needs it, from the tasks
// module; nothing in it is redacted yet (the bundle is, as a whole).
type TaskBundle struct {
	Task *store.Task // its record
	// Manifest has the task's own fields: task, sandbox, repo, ref,
	// commit, prompt, scope, test, created, workspace_gone.
	Manifest   bundle.Manifest
	Patch      string
	Files      []bundle.File // the changed files, paths as the sandbox has them
	OutOfScope []string
	Tests      []bundle.TestRun // the task's test runs (their summary is the bundle's)
}

// TaskBundler writes a task's signed review bundle.
type TaskBundler interface {
	// WriteBundle writes tb's bundle to w: its sandbox's record,
	// commands, outputs, approvals, network requests and the added
	// files (read from the sandbox while it lives) with the audit
	// events, signed, and records task.export.
	WriteBundle(ctx context.Context, tb *TaskBundle, w io.Writer) error
}

// bundler is the core's TaskBundler (the daemon keeps an audit log).
type bundler struct{ m *Manager }

func (b bundler) WriteBundle(ctx context.Context, tb *TaskBundle, w io.Writer) error {
	return b.m.writeBundle(ctx, tb, w)
}

func (m *Manager) writeBundle(ctx context.Context, tb *TaskBundle, w io.Writer) error {
	rec := tb.Task
	c, err := m.bundleContents(ctx, tb)
	if err != nil {
		return err
	}
	events, err := m.cfg.Audit.Query(ctx, store.AuditFilter{SandboxID: rec.SandboxID})
	if err != nil {
		return err
	}
	seq, hash := m.cfg.Audit.Head()
	if err := bundle.Write(w, c, events, seq, hash, m.cfg.Audit); err != nil {
		return err
	}
	return m.record(ctx, audit.Entry{SandboxID: rec.SandboxID, TaskID: rec.ID, Kind: "task.export", Payload: map[string]any{"chain_seq": seq, "chain_hash": hash}})
}

func (m *Manager) bundleContents(ctx context.Context, tb *TaskBundle) (*bundle.Contents, error) {
	red := m.cfg.Redactor
	rec := tb.Task
	sbRec, err := m.cfg.Store.GetSandbox(ctx, rec.SandboxID)
	if err != nil {
		return nil, err
	}
	sb := view(sbRec)
	mf := tb.Manifest
	mf.Repo, mf.Prompt, mf.Test = red.String(mf.Repo), red.String(mf.Prompt), red.String(mf.Test)
	mf.Template, mf.TemplateVersion, mf.Backend, mf.Policy, mf.Finished = sb.Template, sb.TemplateVersion, sb.Backend, sb.Policy, time.Now().UTC()
	c := &bundle.Contents{Manifest: mf, Outputs: map[string][2][]byte{}}
	// Paths are redacted too: a file may be named after a secret.
	c.Patch = red.String(tb.Patch)
	for _, f := range tb.Files {
		f.Path = red.String(f.Path)
		c.Files = append(c.Files, f)
	}
	for _, p := range tb.OutOfScope {
		c.OutOfScope = append(c.OutOfScope, red.String(p))
	}
	execs, err := m.Execs(ctx, rec.SandboxID)
	if err != nil {
		return nil, err
	}
	outputs := map[string]string{}
	for _, e := range execs {
		cmd := bundle.Command{ExecID: e.ID, Argv: e.Argv, Cwd: e.Cwd, Started: e.Started, Error: e.Error}
		if e.Ended != nil {
			cmd.Ended = *e.Ended
		}
		if e.Status != nil {
			code := e.Status.Code
			cmd.ExitCode, cmd.Signal, cmd.Limit = &code, e.Status.Signal, string(e.Status.Limit)
			if fa := e.Status.Files; fa != nil {
				// What it changed, as the sandbox saw it (not as predicted).
				for _, l := range [][]string{fa.Written, fa.Deleted, fa.Chmod} {
					for _, p := range l {
						cmd.Writes = appendUniq(cmd.Writes, red.String(p))
					}
				}
				sort.Strings(cmd.Writes)
			}
		}
		if p := e.Policy; p != nil {
			ps := &bundle.PolicySummary{Action: string(p.Action), Rules: p.Rules, Grant: p.Grant, BreakGlass: p.BreakGlass}
			for _, cl := range p.Classes {
				ps.Classes = append(ps.Classes, string(cl))
			}
			cmd.Policy = ps
		}
		out, _ := m.cfg.Store.GetOutput(ctx, e.ID, store.Stdout)
		errOut, _ := m.cfg.Store.GetOutput(ctx, e.ID, store.Stderr)
		out, _ = red.Redact(out)
		errOut, _ = red.Redact(errOut)
		cmd.StdoutBytes, cmd.StderrBytes = len(out), len(errOut)
		if len(out)+len(errOut) > 0 {
			c.Outputs[e.ID] = [2][]byte{out, errOut}
		}
		outputs[e.ID] = string(out) + string(errOut)
		c.Commands = append(c.Commands, cmd)
	}
	for _, t := range tb.Tests {
		t.Command, t.Summary = red.String(t.Command), bundle.ParseTestOutput(outputs[t.ExecID])
		c.Tests = append(c.Tests, t)
	}
	// The agent's own verification commands (go test, npm test, linters...)
	// are test runs too: the reviewer asks whether tests ran at all.
	taskRuns := map[string]bool{}
	for _, t := range tb.Tests {
		taskRuns[t.ExecID] = true
	}
	for _, cmd := range c.Commands {
		if taskRuns[cmd.ExecID] || cmd.Policy == nil || cmd.ExitCode == nil || !slices.Contains(cmd.Policy.Classes, "verify") {
			continue
		}
		c.Tests = append(c.Tests, bundle.TestRun{ExecID: cmd.ExecID, Command: strings.Join(cmd.Argv, " "), Passed: *cmd.ExitCode == 0 && cmd.Limit == "",
			ExitCode: *cmd.ExitCode, Started: cmd.Started, Finished: cmd.Ended, Summary: bundle.ParseTestOutput(outputs[cmd.ExecID])})
	}
	sort.SliceStable(c.Tests, func(i, j int) bool { return c.Tests[i].Started.Before(c.Tests[j].Started) })
	if c.Approvals, err = m.bundleApprovals(ctx, rec.SandboxID); err != nil {
		return nil, err
	}
	if c.Network, err = m.networkRequests(ctx, rec.SandboxID); err != nil {
		return nil, err
	}
	c.Dependencies = dependencies(c.Patch)
	if err := m.artifacts(ctx, rec.SandboxID, tb.Files, c); err != nil {
		return nil, err
	}
	return m.scrubContents(c)
}

// bundleApprovals are the approvals the sandbox's commands were held
// for, oldest first, from the store (the approvals module wrote them;
// the whole bundle is redacted after, scrubContents).
func (m *Manager) bundleApprovals(ctx context.Context, sandboxID string) ([]bundle.Approval, error) {
	list, err := m.cfg.Store.ListApprovals(ctx, sandboxID, "")
	if err != nil {
		return nil, err
	}
	now := m.now()
	var out []bundle.Approval
	for _, a := range list {
		ba := bundle.Approval{ID: a.ID, State: a.State, RequestedBy: a.RequestedBy, Created: a.Created, DecidedBy: a.DecidedBy, Decided: a.Decided,
			Reason: m.cfg.Redactor.String(a.Reason), Grant: a.GrantID}
		if ba.State == store.ApprovalPending && !now.Before(a.Deadline) {
			ba.State = store.ApprovalExpired
		}
		var prompt struct {
			Command string   `json:"command"`
			Effect  string   `json:"effect"`
			Classes []string `json:"classes"`
		}
		if json.Unmarshal(a.Request, &prompt) == nil {
			ba.Command, ba.Effect = m.cfg.Redactor.String(prompt.Command), prompt.Effect
			ba.Classes = append(ba.Classes, prompt.Classes...)
		}
		out = append(out, ba)
	}
	return out, nil
}

// scrubContents redacts every string of the bundle's contents (records.go):
// the manifest, commands, approvals, network requests, tests, artifacts'
// names, whatever field they gain. The bulk (the patch, the outputs and
// the artifacts' bytes) is redacted (or left out) on its own, once.
func (m *Manager) scrubContents(c *bundle.Contents) (*bundle.Contents, error) {
	patch, outputs, data := c.Patch, c.Outputs, c.ArtifactData
	c.Patch, c.Outputs, c.ArtifactData = "", nil, nil
	out, err := scrubbed(m.cfg.Redactor, c)
	if err != nil {
		return nil, err
	}
	out.Patch, out.Outputs, out.ArtifactData = patch, outputs, data
	return out, nil
}

// networkRequests is what the sandbox's egress proxy decided, from the
// audit record: one entry per CONNECT or HTTP request, with the bytes and
// status of its connection. Never nil: with no egress service, no request
// could leave the sandbox at all.
func (m *Manager) networkRequests(ctx context.Context, sandboxID string) ([]bundle.NetworkRequest, error) {
	out := []bundle.NetworkRequest{}
	if m.egressSvc != nil {
		m.egressSvc.FlushRefusals(ctx, sandboxID) // the counts of the window still open
	}
	events, err := m.cfg.Audit.Query(ctx, store.AuditFilter{SandboxID: sandboxID, Kind: "egress"})
	if err != nil {
		return nil, err
	}
	last := map[uint64]int{} // connection -> its latest request in out
	for _, e := range events {
		var p struct {
			Time      time.Time `json:"time"`
			Exec      string    `json:"exec"`
			Conn      uint64    `json:"conn"`
			Decision  string    `json:"decision"`
			Rule      string    `json:"rule"`
			Method    string    `json:"method"`
			Host      string    `json:"host"`
			Port      int       `json:"port"`
			Status    int       `json:"status"`
			BytesUp   int64     `json:"bytes_up"`
			BytesDown int64     `json:"bytes_down"`
			Of        string    `json:"of"`
			Count     int64     `json:"count"`
			Last      time.Time `json:"last"`
		}
		if json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		switch e.Kind {
		case string(egress.KindConnect), string(egress.KindRequest):
			method := p.Method
			if e.Kind == string(egress.KindConnect) {
				method = "CONNECT"
			}
			out = append(out, bundle.NetworkRequest{Time: p.Time, ExecID: p.Exec, Host: p.Host, Port: p.Port, Method: method, Decision: p.Decision, Rule: p.Rule})
			if p.Conn != 0 {
				last[p.Conn] = len(out) - 1
			}
		case string(egress.KindRefusedSummary):
			// Refusals counted, not recorded one by one.
			if p.Of == string(egress.KindConnect) || p.Of == string(egress.KindRequest) {
				method := p.Method
				if p.Of == string(egress.KindConnect) && method == "" {
					method = "CONNECT"
				}
				out = append(out, bundle.NetworkRequest{Time: p.Last, ExecID: p.Exec, Host: p.Host, Port: p.Port, Method: method, Decision: "deny", Rule: p.Rule, Count: p.Count})
			}
		case string(egress.KindClose), string(egress.KindResponse):
			i, ok := last[p.Conn]
			if !ok || p.Conn == 0 {
				continue
			}
			r := &out[i]
			r.BytesOut += p.BytesUp
			r.BytesIn += p.BytesDown
			if p.Status != 0 {
				r.Status = p.Status
			}
			if p.Decision == "deny" { // refused after it opened (SNI)
				r.Decision, r.Rule = p.Decision, p.Rule
			}
		}
	}
	return out, nil
}

// artifacts scans the files the task added (read from the live sandbox).
func (m *Manager) artifacts(ctx context.Context, sandboxID string, files []bundle.File, c *bundle.Contents) error {
	c.ArtifactData = map[string][]byte{}
	f, err := m.Files(ctx, sandboxID)
	if err != nil {
		return nil // a stopped sandbox: no artifacts to read
	}
	for _, cf := range files {
		if cf.Status != "added" {
			continue
		}
		rel, err := bundle.SafePath(cf.Path)
		if err != nil {
			continue
		}
		p := path.Join("/workspace", rel)
		st, err := f.Stat(ctx, p)
		if err != nil {
			continue
		}
		var data []byte
		if st.Type == "file" && st.Size <= bundle.LargeArtifact {
			var buf bytes.Buffer
			if _, err := f.ReadFile(ctx, p, &buf, bundle.LargeArtifact); err == nil {
				data = buf.Bytes()
			}
		}
		a := bundle.ScanArtifact(rel, data, st.Type == "symlink", st.Size, m.findSecrets)
		// A path that holds a secret is shown redacted, and its file is
		// not copied (its entry name would carry the secret).
		if kinds := m.findSecrets([]byte(a.Path)); len(kinds) > 0 {
			a.Path, a.Included = m.cfg.Redactor.String(a.Path), false
			for _, k := range kinds {
				a.Findings = appendUniq(a.Findings, k)
			}
			sort.Strings(a.Findings)
		}
		c.Artifacts = append(c.Artifacts, a)
		if a.Included {
			c.ArtifactData[rel] = data
		}
	}
	return nil
}

// findSecrets reports the kinds of secrets in data (for artifact scans).
func (m *Manager) findSecrets(data []byte) []string {
	red, changed := m.cfg.Redactor.Redact(data)
	if !changed {
		return nil
	}
	var kinds []string
	for _, k := range redactedKindRE().FindAllSubmatch(red, -1) {
		kinds = appendUniq(kinds, string(k[1]))
	}
	sort.Strings(kinds)
	return kinds
}

var redactedKindRE = lazyre.New(`\[REDACTED:([a-z0-9-]+)\]`)

var lockfiles = map[string]string{"package-lock.json": "npm", "npm-shrinkwrap.json": "npm", "yarn.lock": "yarn", "pnpm-lock.yaml": "pnpm",
	"go.sum": "go", "Cargo.lock": "cargo", "poetry.lock": "pip", "Pipfile.lock": "pip", "uv.lock": "pip", "composer.lock": "composer",
	"Gemfile.lock": "bundler", "requirements.txt": "pip"}

var (
	goRequireRE = lazyre.New(`^([+-])\s*(?:require\s+)?([a-zA-Z0-9.\-_/~]+\.[a-z]{2,}[a-zA-Z0-9.\-_/~]*)\s+(v[0-9][^\s/]*)(\s*//.*)?$`)
	npmDepRE    = lazyre.New(`^([+-])\s*"(@?[a-zA-Z0-9._\-/]+)":\s*"([^"]+)",?$`)
	pipReqRE    = lazyre.New(`^([+-])([A-Za-z0-9_.\-\[\]]+)\s*(?:==|>=|~=|<=|>|<)?\s*([A-Za-z0-9_.*\-]*)\s*$`)
)

// dependencies reads dependency changes from the patch: lines added and
// removed in go.mod, package.json dependency blocks and requirements
// files, and which lockfiles changed.
func dependencies(patch string) bundle.Dependencies {
	deps := bundle.Dependencies{Changes: []bundle.DependencyChange{}, Lockfiles: []string{}}
	type key struct{ mgr, name string }
	seen := map[key]*bundle.DependencyChange{}
	var order []key
	file := ""
	for _, line := range strings.Split(patch, "\n") {
		if strings.HasPrefix(line, "+++ ") {
			file = strings.TrimPrefix(strings.TrimPrefix(line, "+++ "), "b/")
			if _, ok := lockfiles[path.Base(file)]; ok {
				deps.Lockfiles = append(deps.Lockfiles, file)
			}
			continue
		}
		if strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "diff ") {
			continue
		}
		var mgr string
		var m []string
		switch base := path.Base(file); {
		case base == "go.mod":
			mgr, m = "go", goRequireRE().FindStringSubmatch(line)
		case base == "package.json":
			mgr, m = "npm", npmDepRE().FindStringSubmatch(line)
			if m != nil && (m[2] == "version" || m[2] == "name" || m[2] == "main" || strings.HasPrefix(m[3], "node ") || strings.Contains(m[3], " ")) {
				m = nil // not a dependency line
			}
		case strings.HasPrefix(base, "requirements") && strings.HasSuffix(base, ".txt"):
			mgr, m = "pip", pipReqRE().FindStringSubmatch(line)
		}
		if m == nil {
			continue
		}
		k := key{mgr, m[2]}
		ch := seen[k]
		if ch == nil {
			ch = &bundle.DependencyChange{Manager: mgr, Name: m[2]}
			seen[k] = ch
			order = append(order, k)
		}
		if m[1] == "+" {
			ch.To = m[3]
		} else {
			ch.From = m[3]
		}
	}
	for _, k := range order {
		ch := seen[k]
		switch {
		case ch.From == "":
			ch.Change = "added"
		case ch.To == "":
			ch.Change = "removed"
		case ch.From == ch.To:
			continue
		default:
			ch.Change = "changed"
		}
		deps.Changes = append(deps.Changes, *ch)
	}
	return deps
}

// PurgeResult says what a purge removed.
type PurgeResult struct {
	Before      time.Time `json:"before"`
	TaskResults int       `json:"task_results"`
	Outputs     int64     `json:"outputs"`
	AuditBlobs  int64     `json:"audit_blobs"`
}

// Purge removes what is older than d: finished tasks' result directories
// (bundles included), stored command output and audit blobs. Records
// (sandboxes, execs, tasks, approvals) and the audit events themselves
// stay, so the chain still verifies; the purge is itself recorded first,
// so a missing blob is explained.
func (m *Manager) Purge(ctx context.Context, d time.Duration) (*PurgeResult, error) {
	if d <= 0 {
		return nil, fmt.Errorf("purge needs a positive age: %w", errdefs.ErrInvalid)
	}
	before := m.now().Add(-d)
	if err := m.record(ctx, audit.Entry{Kind: audit.PurgeKind, Payload: map[string]any{"older_than": d.String(), "blobs_before": before}}); err != nil {
		return nil, err
	}
	res := &PurgeResult{Before: before}
	ids, err := m.cfg.Store.TasksFinishedBefore(ctx, before)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		dir := filepath.Join(m.cfg.TaskDir, id, "result")
		if _, err := os.Stat(dir); err == nil {
			if err := os.RemoveAll(dir); err != nil {
				return nil, err
			}
			res.TaskResults++
		}
	}
	if res.Outputs, err = m.cfg.Store.PurgeOutputs(ctx, before); err != nil {
		return nil, err
	}
	if res.AuditBlobs, err = m.cfg.Store.PurgeAuditBlobs(ctx, before); err != nil {
		return nil, err
	}
	m.cfg.Logf("purged what is older than %s: %+v", d, res)
	return res, nil
}
