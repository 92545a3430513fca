package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

// Hints of a tool (MCP tool annotations): whether it only reads, whether
// what it changes can be lost, whether calling it twice is calling it
// once, whether it reaches beyond the daemon's own world.
type hints struct{ readOnly, destructive, idempotent, openWorld bool }

func tool(name, title, desc string, h hints) *mcpsdk.Tool {
	a := &mcpsdk.ToolAnnotations{ReadOnlyHint: h.readOnly, IdempotentHint: h.idempotent, OpenWorldHint: &h.openWorld}
	if !h.readOnly {
		a.DestructiveHint = &h.destructive
	}
	return &mcpsdk.Tool{Name: name, Title: title, Description: desc, Annotations: a}
}

var (
	reads   = hints{readOnly: true, idempotent: true}
	creates = hints{}
	writes  = hints{destructive: true, idempotent: true}
	// exec runs what the agent says, network included where the policy
	// lets it: destructive and open-world.
	runs = hints{destructive: true, openWorld: true}
)

func (s *Server) addTools(srv *mcpsdk.Server) {
	addTool(srv, tool("create_sandbox", "Create sandbox", "An isolated Linux sandbox; workspace /workspace.", creates), plain(s.createSandbox))
	addTool(srv, tool("list_sandboxes", "List sandboxes", "Your sandboxes, or one in full.", reads), s.listSandboxes)
	addTool(srv, tool("destroy", "Destroy sandbox", "Destroy a sandbox and its files (a task's: finish_task).", writes), plain(s.destroy))
	addTool(srv, tool("reset_sandbox", "Reset sandbox", "Start a sandbox over from its template or snapshot; id kept.", writes), s.resetSandbox)
	addTool(srv, tool("snapshot_sandbox", "Snapshot sandbox", "Save /workspace and home as template name, for create_sandbox.", creates), s.snapshotSandbox)
	addTool(srv, tool("start_task", "Start task", "Check out a repository or bundle at a commit in a new sandbox, with scope and tests.", hints{openWorld: true}), plain(s.startTask))
	addTool(srv, tool("list_tasks", "List tasks", "Your tasks, or one in full (scope, test, state).", reads), s.listTasks)
	addTool(srv, tool("finish_task", "Finish task", "Run the tests, record the results, destroy the sandbox (unless keep).", writes), s.finishTask)
	addTool(srv, tool("exec", "Run command", "Run sh -c COMMAND in a sandbox; policy may deny it or hold it for a human.", runs), s.exec)
	addTool(srv, tool("exec_output", "Read command output", "A command's output by offset or tail; whether it still runs.", reads), plain(s.execOutput))
	addTool(srv, tool("exec_input", "Send input", "Write to a background command's stdin, or close it.", hints{}), s.execInput)
	addTool(srv, tool("exec_kill", "Stop command", "Signal (default KILL) a running command's processes.", writes), s.execKill)
	addTool(srv, tool("list_execs", "List commands", "The commands run in a sandbox, newest last.", reads), s.listExecs)
	addTool(srv, tool("get_approval", "Get approval", "An approval's state and reason.", reads), s.getApproval)
	addTool(srv, tool("read_file", "Read file", "A text file with line numbers, by line range.", reads), plain(s.readFile))
	addTool(srv, tool("write_file", "Write file", "Create or replace a file (parents made).", writes), plain(s.writeFile))
	addTool(srv, tool("edit_file", "Edit file", "Replace exact text in a file; once unless replace_all.", hints{destructive: true}), plain(s.editFile))
	addTool(srv, tool("list_files", "List directory", "List a directory, or get its tree as a tar.", reads), plain(s.listFiles))
	addTool(srv, tool("upload_tree", "Upload tree", "Unpack a base64 tar (at most 16 MiB) under a directory (made).", writes), s.uploadTree)
	addTool(srv, tool("search", "Search files", "grep -E pattern and/or glob files under a directory, paged.", reads), plain(s.search))
	addTool(srv, tool("diff", "Task diff", "The task's patch (paged) and files changed.", reads), s.diff)
	addTool(srv, tool("run_tests", "Run tests", "Run the task's test command and record the result.", hints{destructive: true, openWorld: true}), s.runTests)
	addTool(srv, tool("export_bundle", "Export review bundle", "The task's signed review bundle (resource link).", reads), s.exportBundle)
	s.addResources(srv)
}

// addTool adds a tool with its schemas inferred from In and Out (none
// for an Out of any), each nullable type made plain: Go's nil slice or
// pointer makes the inferred schema admit null (["null","array"]), which
// lets null stand for absent and which single-type schema dialects
// (OpenAPI's, Gemini's) refuse (the Inspector's --strict warns of it).
func addTool[In, Out any](srv *mcpsdk.Server, t *mcpsdk.Tool, h mcpsdk.ToolHandlerFor[In, Out]) {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: %s input schema: %v", t.Name, err))
	}
	t.InputSchema = notNull(in)
	if reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		out, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("mcp: %s output schema: %v", t.Name, err))
		}
		t.OutputSchema = openSchema(notNull(out))
	}
	mcpsdk.AddTool(srv, t, h)
}

// openSchema drops additionalProperties: false from an output schema (what
// the server sends needs no guard against unknown fields, and tools/list
// has a budget).
func openSchema(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	s.AdditionalProperties = nil
	for _, p := range s.Properties {
		openSchema(p)
	}
	openSchema(s.Items)
	return s
}

// notNull drops "null" from every type list in s.
func notNull(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	if len(s.Types) > 0 {
		var keep []string
		for _, t := range s.Types {
			if t != "null" {
				keep = append(keep, t)
			}
		}
		if len(keep) == 1 {
			s.Type, s.Types = keep[0], nil
		} else {
			s.Types = keep
		}
	}
	for _, p := range s.Properties {
		notNull(p)
	}
	notNull(s.Items)
	notNull(s.AdditionalProperties)
	return s
}

// plain drops a tool's output schema (its structured result stays): the
// schemas of every tool's result would take tools/list past its budget
// (3k tokens), so only the results an agent branches on (exec, its
// output, tests, diff, listings) publish theirs.
func plain[In, Out any](h mcpsdk.ToolHandlerFor[In, Out]) mcpsdk.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest, in In) (*mcpsdk.CallToolResult, any, error) {
		res, out, err := h(ctx, req, in)
		if err != nil {
			return nil, nil, err
		}
		return res, out, nil
	}
}

type sandboxIn struct {
	SandboxID string `json:"sandbox_id"`
}

type taskIn struct {
	TaskID string `json:"task_id"`
}

type idOut struct {
	SandboxID string `json:"sandbox_id,omitempty"`
	TaskID    string `json:"task_id,omitempty"`
}

type createIn struct {
	Template   string            `json:"template,omitempty" jsonschema:"or a snapshot; default host"`
	Backend    string            `json:"backend,omitempty" jsonschema:"native or gvisor"`
	TTLSeconds float64           `json:"ttl_seconds,omitempty" jsonschema:"seconds to live"`
	Env        []string          `json:"env,omitempty" jsonschema:"each K=V"`
	Labels     map[string]string `json:"labels,omitempty"`
	Limits     map[string]any    `json:"limits,omitempty" jsonschema:"as POST /v1/sandboxes takes"`
	Policy     map[string]any    `json:"policy,omitempty" jsonschema:"over TCP: only tighter"`
}

// strictDecode decodes v (an argument object) into out, refusing fields
// out does not have.
func strictDecode(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// clientLabel is the label naming the MCP client (its name and version
// as it announced them at initialize: asserted, not authenticated) on a
// sandbox it creates. Every event of every call also names it
// (viaClient); the label keeps it on the sandbox itself.
const clientLabel = "mcp.client"

func (s *Server) createSandbox(ctx context.Context, _ *mcpsdk.CallToolRequest, in createIn) (*mcpsdk.CallToolResult, idOut, error) {
	ttl, err := seconds("ttl_seconds", in.TTLSeconds)
	if err != nil {
		return nil, idOut{}, err
	}
	if c := sdk.ClientName(ctx); c != "" {
		in.Labels = maps.Clone(in.Labels)
		if in.Labels == nil {
			in.Labels = map[string]string{}
		}
		in.Labels[clientLabel] = c
	}
	r := sdk.CreateRequest{Template: in.Template, Backend: in.Backend, TTL: ttl, Env: in.Env, Labels: in.Labels}
	if in.Limits != nil {
		// Checked here, not in the schema (which would spell out every
		// limit in tools/list): unknown limits are refused all the same.
		if err := strictDecode(in.Limits, &r.Limits); err != nil {
			return nil, idOut{}, fmt.Errorf("limits: %v", err)
		}
	}
	if in.Policy != nil {
		r.Policy = &sdk.PolicyLayer{}
		if err := strictDecode(in.Policy, r.Policy); err != nil {
			return nil, idOut{}, fmt.Errorf("policy: %v", err)
		}
	}
	sb, err := s.Client.CreateSandbox(ctx, r)
	if err != nil {
		return nil, idOut{}, err
	}
	return textResult("sandbox " + sb.ID + " is ready; its workspace is /workspace"), idOut{SandboxID: sb.ID}, nil
}

type listIn struct {
	ID string `json:"id,omitempty"`
}

func (s *Server) listSandboxes(ctx context.Context, _ *mcpsdk.CallToolRequest, in listIn) (*mcpsdk.CallToolResult, any, error) {
	if in.ID != "" {
		sb, err := s.Client.GetSandbox(ctx, in.ID)
		if err != nil {
			return nil, nil, err
		}
		return jsonResult(sb)
	}
	list, err := s.Client.ListSandboxes(ctx, sdk.StateRunning)
	if err != nil {
		return nil, nil, err
	}
	type row struct {
		ID       string            `json:"id"`
		Template string            `json:"template"`
		State    string            `json:"state"`
		Labels   map[string]string `json:"labels,omitempty"`
	}
	rows := []row{}
	for _, sb := range list {
		rows = append(rows, row{sb.ID, sb.Template, sb.State, sb.Labels})
	}
	return jsonResult(map[string]any{"sandboxes": rows})
}

func (s *Server) destroy(ctx context.Context, _ *mcpsdk.CallToolRequest, in sandboxIn) (*mcpsdk.CallToolResult, idOut, error) {
	if err := need("sandbox_id", in.SandboxID); err != nil {
		return nil, idOut{}, err
	}
	if t, err := s.taskOf(ctx, in.SandboxID); err != nil || t != "" {
		return nil, idOut{}, errors.Join(err, taskSandbox(in.SandboxID, t, "destroy"))
	}
	if err := s.Client.DestroySandbox(ctx, in.SandboxID); err != nil {
		return nil, idOut{}, err
	}
	return textResult("sandbox " + in.SandboxID + " destroyed"), idOut{SandboxID: in.SandboxID}, nil
}

type startIn struct {
	Repo     string   `json:"repo,omitempty" jsonschema:"URL or daemon host path"`
	Bundle   string   `json:"bundle,omitempty" jsonschema:"git bundle: base64 or a sandbox file's airlock:// URI"`
	Ref      string   `json:"ref,omitempty" jsonschema:"branch, tag or commit (default HEAD)"`
	Commit   string   `json:"commit,omitempty" jsonschema:"pin ref to this commit id"`
	Scope    []string `json:"scope,omitempty" jsonschema:"globs it may change, e.g. src/**"`
	Test     string   `json:"test,omitempty" jsonschema:"test command"`
	Prompt   string   `json:"prompt,omitempty" jsonschema:"recorded for review"`
	Template string   `json:"template,omitempty"`
}

type startOut struct {
	TaskID    string `json:"task_id"`
	SandboxID string `json:"sandbox_id"`
	Commit    string `json:"commit"`
}

func (s *Server) startTask(ctx context.Context, _ *mcpsdk.CallToolRequest, in startIn) (*mcpsdk.CallToolResult, startOut, error) {
	req := sdk.TaskRequest{Repo: in.Repo, Ref: in.Ref, Commit: in.Commit, Scope: in.Scope, Test: in.Test, Prompt: in.Prompt, Template: in.Template}
	if (in.Repo == "") == (in.Bundle == "") {
		return nil, startOut{}, errors.New("give repo or bundle")
	}
	if in.Bundle != "" {
		b, stop, err := s.bundleOf(ctx, in.Bundle)
		if err != nil {
			return nil, startOut{}, err
		}
		defer stop()
		req.Bundle = b
	}
	t, err := s.Client.StartTask(ctx, req)
	if err != nil {
		return nil, startOut{}, err
	}
	return textResult(fmt.Sprintf("task %s: %s at %.12s checked out in sandbox %s (/workspace)", t.ID, t.Repo, t.Commit, t.SandboxID)),
		startOut{t.ID, t.SandboxID, t.Commit}, nil
}

func (s *Server) listTasks(ctx context.Context, _ *mcpsdk.CallToolRequest, in listIn) (*mcpsdk.CallToolResult, any, error) {
	if in.ID != "" {
		t, err := s.Client.GetTask(ctx, in.ID)
		if err != nil {
			return nil, nil, err
		}
		return jsonResult(t)
	}
	list, err := s.Client.ListTasks(ctx)
	if err != nil {
		return nil, nil, err
	}
	type row struct {
		ID        string `json:"id"`
		SandboxID string `json:"sandbox_id"`
		State     string `json:"state"`
		Repo      string `json:"repo"`
		Test      string `json:"test,omitempty"`
	}
	rows := []row{}
	for _, t := range list {
		rows = append(rows, row{t.ID, t.SandboxID, t.State, t.Repo, t.Test})
	}
	return jsonResult(map[string]any{"tasks": rows})
}

type finishIn struct {
	TaskID string `json:"task_id"`
	Keep   bool   `json:"keep,omitempty"`
}

func (s *Server) finishTask(ctx context.Context, _ *mcpsdk.CallToolRequest, in finishIn) (*mcpsdk.CallToolResult, any, error) {
	if err := need("task_id", in.TaskID); err != nil {
		return nil, nil, err
	}
	r, err := s.Client.FinishTask(ctx, in.TaskID, in.Keep)
	if err != nil {
		return nil, nil, err
	}
	// The whole patch is the diff tool's (paged): here, what changed.
	out := map[string]any{"output_dir": r.OutputDir, "files": r.Files}
	if r.Task != nil {
		out["state"] = r.Task.State
	}
	if r.Test != nil {
		out["test"] = r.Test
	}
	if r.Diff != nil {
		out["changed"], out["out_of_scope"] = r.Diff.Files, r.Diff.OutOfScope
	}
	return jsonResult(out)
}

type inputIn struct {
	SandboxID string `json:"sandbox_id"`
	ExecID    string `json:"exec_id"`
	Data      string `json:"data,omitempty"`
	Close     bool   `json:"close,omitempty" jsonschema:"then close stdin"`
}

func (s *Server) execInput(ctx context.Context, _ *mcpsdk.CallToolRequest, in inputIn) (*mcpsdk.CallToolResult, any, error) {
	if err := errors.Join(need("sandbox_id", in.SandboxID), need("exec_id", in.ExecID)); err != nil {
		return nil, nil, err
	}
	if in.Data == "" && !in.Close {
		return nil, nil, errors.New("nothing to do: give data or close")
	}
	if in.Data != "" {
		if err := s.Client.Input(ctx, in.SandboxID, in.ExecID, []byte(in.Data)); err != nil {
			return nil, nil, err
		}
	}
	if in.Close {
		if err := s.Client.CloseStdin(ctx, in.SandboxID, in.ExecID); err != nil {
			return nil, nil, err
		}
	}
	return textResult(fmt.Sprintf("wrote %d bytes to exec %s (closed: %v)", len(in.Data), in.ExecID, in.Close)), nil, nil
}

type killIn struct {
	SandboxID string `json:"sandbox_id"`
	ExecID    string `json:"exec_id"`
	Signal    string `json:"signal,omitempty" jsonschema:"e.g. TERM"`
}

func (s *Server) execKill(ctx context.Context, _ *mcpsdk.CallToolRequest, in killIn) (*mcpsdk.CallToolResult, any, error) {
	if err := errors.Join(need("sandbox_id", in.SandboxID), need("exec_id", in.ExecID)); err != nil {
		return nil, nil, err
	}
	if in.Signal == "" {
		in.Signal = "KILL"
	}
	if err := s.Client.Signal(ctx, in.SandboxID, in.ExecID, in.Signal); err != nil {
		return nil, nil, err
	}
	return textResult("sent SIG" + in.Signal + " to exec " + in.ExecID), nil, nil
}

func (s *Server) listExecs(ctx context.Context, _ *mcpsdk.CallToolRequest, in sandboxIn) (*mcpsdk.CallToolResult, any, error) {
	if err := need("sandbox_id", in.SandboxID); err != nil {
		return nil, nil, err
	}
	list, err := s.Client.ListExecs(ctx, in.SandboxID)
	if err != nil {
		return nil, nil, err
	}
	type row struct {
		ID       string   `json:"id"`
		Argv     []string `json:"argv"`
		Running  bool     `json:"running"`
		ExitCode *int     `json:"exit_code,omitempty"`
	}
	rows := []row{}
	for _, e := range list[max(0, len(list)-50):] {
		r := row{ID: e.ID, Argv: e.Argv, Running: e.Ended.IsZero()}
		if e.Status != nil {
			r.ExitCode = &e.Status.Code
		}
		rows = append(rows, r)
	}
	return jsonResult(map[string]any{"execs": rows, "total": len(list)})
}

type approvalIn struct {
	ApprovalID string `json:"approval_id"`
}

func (s *Server) getApproval(ctx context.Context, _ *mcpsdk.CallToolRequest, in approvalIn) (*mcpsdk.CallToolResult, any, error) {
	if err := need("approval_id", in.ApprovalID); err != nil {
		return nil, nil, err
	}
	a, err := s.Client.GetApproval(ctx, in.ApprovalID)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]any{"approval_id": a.ID, "state": a.State, "sandbox_id": a.SandboxID, "deadline": a.Deadline}
	if a.Reason != "" {
		out["reason"] = a.Reason
	}
	if a.DecidedBy != "" {
		out["decided_by"] = a.DecidedBy
	}
	if a.Prompt != nil {
		out["command"] = a.Prompt.Command
	}
	return jsonResult(out)
}
