package review

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/redacted"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/store"
)

// writeBundle writes tb's bundle: its contents, redacted, with the
// sandbox's audit events, signed with the audit log's key at its head;
// then records task.export (the head it was signed at).
func (r *Review) writeBundle(ctx context.Context, tb *hook.TaskBundle, w io.Writer) error {
	log := r.c.AuditLog()
	if log == nil {
		// The core gives no bundler without an audit log (Core.Bundles).
		return fmt.Errorf("bundles need the audit log: %w", errdefs.ErrUnsupported)
	}
	rec := tb.Task
	c, err := r.bundleContents(ctx, tb)
	if err != nil {
		return err
	}
	events, err := log.Query(ctx, store.AuditFilter{SandboxID: rec.SandboxID})
	if err != nil {
		return err
	}
	seq, hash := log.Head()
	if err := bundle.Write(w, c, events, seq, hash, log); err != nil {
		return err
	}
	return r.c.Record(ctx, audit.Entry{SandboxID: rec.SandboxID, TaskID: rec.ID, Kind: "task.export", Payload: map[string]any{"chain_seq": seq, "chain_hash": hash}})
}

// bundleContents gathers what the bundle holds of tb's task and sandbox;
// every string of it is redacted (scrubContents).
func (r *Review) bundleContents(ctx context.Context, tb *hook.TaskBundle) (*bundle.Contents, error) {
	red := r.c.Redactor()
	rec := tb.Task
	sb, err := r.c.Sandbox(ctx, rec.SandboxID)
	if err != nil {
		return nil, err
	}
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
	outputs, err := r.commands(ctx, rec.SandboxID, c)
	if err != nil {
		return nil, err
	}
	c.Tests = testRuns(red, tb.Tests, c.Commands, outputs)
	if c.Approvals, err = r.bundleApprovals(ctx, rec.SandboxID); err != nil {
		return nil, err
	}
	if c.Network, err = r.networkRequests(ctx, rec.SandboxID); err != nil {
		return nil, err
	}
	c.Dependencies = dependencies(c.Patch)
	if tb.Dependencies != nil {
		c.Dependencies = *tb.Dependencies
	}
	if err := r.packageRecords(ctx, rec.SandboxID, &c.Dependencies); err != nil {
		return nil, err
	}
	if err := r.artifacts(ctx, rec.SandboxID, tb.Files, c); err != nil {
		return nil, err
	}
	return scrubContents(red, c)
}

// commands adds the sandbox's exec records and their stored output
// (redacted) to c; outputs is each exec's output, stdout then stderr,
// for the test summaries.
func (r *Review) commands(ctx context.Context, sandboxID string, c *bundle.Contents) (outputs map[string]string, err error) {
	red := r.c.Redactor()
	execs, err := r.c.Execs(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	outputs = map[string]string{}
	for _, e := range execs {
		cmd := command(red, e)
		out, _ := r.c.Store().GetOutput(ctx, e.ID, store.Stdout)
		errOut, _ := r.c.Store().GetOutput(ctx, e.ID, store.Stderr)
		out, _ = red.Redact(out)
		errOut, _ = red.Redact(errOut)
		cmd.StdoutBytes, cmd.StderrBytes = len(out), len(errOut)
		if len(out)+len(errOut) > 0 {
			c.Outputs[e.ID] = [2][]byte{out, errOut}
		}
		outputs[e.ID] = string(out) + string(errOut)
		c.Commands = append(c.Commands, cmd)
	}
	return outputs, nil
}

// command is an exec record as the bundle lists it.
func command(red sandbox.Redactor, e *sandbox.Exec) bundle.Command {
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
	return cmd
}

// testRunnerRE finds a test runner in a command line: an agent's verify
// command counts as a test run when its output is a test framework's or
// it runs one (issue 19: gofmt counted as a test run).
var testRunnerRE = lazyre.New(`\b(?:(?:go|cargo|npm|pnpm|yarn|bun|deno|dotnet|mvn|gradle|\./gradlew|make)\s+(?:-\S+(?:\s+[^-\s]\S*)?\s+|\+\S+\s+|run(?:-script)?\s+)*(?:test|nextest)\b|make\s+(?:-\S+(?:\s+[^-\s]\S*)?\s+)*check\b|(?:pytest|py\.test|mocha|jest|vitest|tox|nox|ctest|rspec|phpunit|unittest)\b|node\s+--test\b)`)

// testRuns are the task's test runs and the agent's own verification
// commands (go test, npm test, linters...), oldest first, each with the
// summary of its output: the reviewer asks whether tests ran at all.
func testRuns(red sandbox.Redactor, task []bundle.TestRun, cmds []bundle.Command, outputs map[string]string) []bundle.TestRun {
	var runs []bundle.TestRun
	for _, t := range task {
		t.Command, t.Summary = red.String(t.Command), bundle.ParseTestOutput(outputs[t.ExecID])
		runs = append(runs, t)
	}
	taskRuns := map[string]bool{}
	for _, t := range task {
		taskRuns[t.ExecID] = true
	}
	for _, cmd := range cmds {
		if taskRuns[cmd.ExecID] || cmd.Policy == nil || cmd.ExitCode == nil || !slices.Contains(cmd.Policy.Classes, "verify") {
			continue
		}
		line := strings.Join(cmd.Argv, " ")
		sum := bundle.ParseTestOutput(outputs[cmd.ExecID])
		if sum == nil && !testRunnerRE().MatchString(line) {
			continue // a linter or formatter verifies, but runs no tests
		}
		runs = append(runs, bundle.TestRun{ExecID: cmd.ExecID, Command: line, Passed: *cmd.ExitCode == 0 && cmd.Limit == "",
			ExitCode: *cmd.ExitCode, Started: cmd.Started, Finished: cmd.Ended, Summary: sum})
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Started.Before(runs[j].Started) })
	return runs
}

// bundleApprovals are the approvals the sandbox's commands were held
// for, oldest first, from the store (the approvals module wrote them;
// the whole bundle is redacted after, scrubContents).
func (r *Review) bundleApprovals(ctx context.Context, sandboxID string) ([]bundle.Approval, error) {
	list, err := r.c.Store().ListApprovals(ctx, sandboxID, "")
	if err != nil {
		return nil, err
	}
	red, now := r.c.Redactor(), r.c.Now()
	var out []bundle.Approval
	for _, a := range list {
		ba := bundle.Approval{ID: a.ID, State: a.State, RequestedBy: a.RequestedBy, Created: a.Created, DecidedBy: a.DecidedBy, Decided: a.Decided,
			Reason: red.String(a.Reason), Grant: a.GrantID}
		if ba.State == store.ApprovalPending && !now.Before(a.Deadline) {
			ba.State = store.ApprovalExpired
		}
		var prompt struct {
			Command string   `json:"command"`
			Effect  string   `json:"effect"`
			Classes []string `json:"classes"`
		}
		if json.Unmarshal(a.Request, &prompt) == nil {
			ba.Command, ba.Effect = red.String(prompt.Command), prompt.Effect
			ba.Classes = append(ba.Classes, prompt.Classes...)
		}
		out = append(out, ba)
	}
	return out, nil
}

// scrubContents redacts every string of the bundle's contents
// (internal/redacted's walk): the manifest, commands, approvals,
// network requests, tests, artifacts' names, whatever field they gain,
// but the daemon's own words (field names, times, the ids, states and
// kinds internal/bundle tags redact:"keep"), since any caller can teach
// the redactor a value. The bulk (the patch, the outputs and the
// artifacts' bytes) is redacted (or left out) on its own, once; an
// artifact whose name changes here is no longer included (its bytes
// are filed under its name). A record that cannot be redacted is an
// error: the bundle is not written.
func scrubContents(red sandbox.Redactor, c *bundle.Contents) (*bundle.Contents, error) {
	patch, outputs, data := c.Patch, c.Outputs, c.ArtifactData
	c.Patch, c.Outputs, c.ArtifactData = "", nil, nil
	out, err := redacted.Scrubbed(red, c)
	c.Patch, c.Outputs, c.ArtifactData = patch, outputs, data
	if err != nil {
		return nil, err
	}
	out.Patch, out.Outputs, out.ArtifactData = patch, outputs, data
	for i := range out.Artifacts {
		if out.Artifacts[i].Path != c.Artifacts[i].Path {
			out.Artifacts[i].Included = false
		}
	}
	return out, nil
}

func appendUniq(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}
