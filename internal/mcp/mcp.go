// Package mcp serves airlock as Model Context Protocol tools: create a
// sandbox or task, exec, read, write and list files, diff, run the tests,
// export the review bundle, destroy. It speaks JSON-RPC 2.0 over stdio
// (`airlock mcp`) and over streamable HTTP (/mcp on the daemon). Every
// tool goes through the daemon's API with the caller's identity, so
// policy, approvals and the audit record apply exactly as to any client.
package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/sdk"
)

// Protocol versions this server speaks, newest first.
var versions = []string{"2025-06-18", "2025-03-26", "2024-11-05"}

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// JSON-RPC error codes.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeNoMethod       = -32601
	codeInvalidParams  = -32602
)

// Server answers MCP requests with an airlock client.
type Server struct {
	Client  *sdk.Client
	Version string // airlock's version, shown to clients
}

// Handle answers one JSON-RPC message; nil for a notification.
func (s *Server) Handle(ctx context.Context, msg []byte) *response {
	var req request
	if err := json.Unmarshal(msg, &req); err != nil {
		return &response{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{codeParse, "parse error: " + err.Error()}}
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return &response{JSONRPC: "2.0", ID: idOrNull(req.ID), Error: &rpcError{codeInvalidRequest, "not a JSON-RPC 2.0 request"}}
	}
	if len(req.ID) == 0 {
		return nil // a notification (initialized, cancelled...): nothing to answer
	}
	res, rerr := s.dispatch(ctx, req.Method, req.Params)
	out := &response{JSONRPC: "2.0", ID: req.ID}
	if rerr != nil {
		out.Error = rerr
	} else {
		out.Result = res
	}
	return out
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

func (s *Server) dispatch(ctx context.Context, method string, params json.RawMessage) (any, *rpcError) {
	switch method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(params, &p)
		v := versions[0]
		for _, known := range versions {
			if known == p.ProtocolVersion {
				v = known
			}
		}
		return map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
			"serverInfo":      map[string]any{"name": "airlock", "version": s.Version},
			"instructions": "airlock runs your commands in an isolated sandbox. Commands are checked by policy: " +
				"some are denied, some wait for a human's approval (exec answers with the approval id; retry once approved). " +
				"Everything is recorded for review.",
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": toolList()}, nil
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{codeInvalidParams, "tools/call: " + err.Error()}
		}
		t, ok := tools()[p.Name]
		if !ok {
			return nil, &rpcError{codeInvalidParams, "unknown tool " + p.Name}
		}
		args := map[string]any{}
		if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
			dec := json.NewDecoder(bytes.NewReader(p.Arguments))
			dec.UseNumber()
			if err := dec.Decode(&args); err != nil {
				return nil, &rpcError{codeInvalidParams, "arguments must be an object"}
			}
		}
		res, err := t.run(ctx, s.Client, argsOf(args))
		if err != nil {
			// A tool that failed is a result the model should see, not a
			// protocol error.
			return toolError(err), nil
		}
		return res, nil
	}
	return nil, &rpcError{codeNoMethod, "method not found: " + method}
}

// ServeStdio reads newline-delimited JSON-RPC messages from r and writes
// answers to w until r ends. Requests are answered concurrently (a held
// exec must not block a ping), each answer written whole.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var mu sync.Mutex
	var wg sync.WaitGroup
	write := func(resp *response) {
		b, _ := json.Marshal(resp)
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(append(b, '\n'))
	}
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		msg := append([]byte(nil), line...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp := s.Handle(ctx, msg); resp != nil {
				write(resp)
			}
		}()
	}
	wg.Wait()
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Results.

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func toolResult(summary string, structured any) map[string]any {
	res := map[string]any{"content": []any{text(summary)}}
	if structured != nil {
		res["structuredContent"] = structured
	}
	return res
}

func toolError(err error) map[string]any {
	msg := err.Error()
	var e *sdk.Error
	structured := map[string]any{"error": msg}
	if errors.As(err, &e) {
		structured["code"] = e.Code
		if e.ApprovalID != "" {
			structured["approval_id"] = e.ApprovalID
		}
		if len(e.Rules) > 0 {
			structured["rules"] = e.Rules
		}
		if sdk.IsApprovalPending(err) {
			msg = "pending approval " + e.ApprovalID + ": " + e.Message + ". A human decides (airlock approve/deny); call exec again with the same command once it is approved."
			structured["pending_approval"] = e.ApprovalID
		}
	}
	return map[string]any{"content": []any{text(msg)}, "structuredContent": structured, "isError": true}
}

// Arguments.

type args map[string]any

func argsOf(m map[string]any) args { return args(m) }

func (a args) str(name string, required bool) (string, error) {
	v, ok := a[name]
	if !ok || v == nil {
		if required {
			return "", fmt.Errorf("argument %q is required", name)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %q must be a string", name)
	}
	if required && s == "" {
		return "", fmt.Errorf("argument %q must not be empty", name)
	}
	return s, nil
}

func (a args) strs(name string) ([]string, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("argument %q must be an array of strings", name)
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("argument %q must be an array of strings", name)
		}
		out[i] = s
	}
	return out, nil
}

func (a args) seconds(name string) (time.Duration, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return 0, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("argument %q must be a number", name)
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > 86400 {
		return 0, fmt.Errorf("argument %q must be 0 to 86400 seconds", name)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// Tools.

type tool struct {
	description string
	schema      map[string]any
	run         func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error)
}

func prop(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

func schema(required []string, props map[string]any) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func toolList() []map[string]any {
	names := []string{"create_sandbox", "start_task", "exec", "read_file", "write_file", "list_files", "diff", "run_tests", "export_bundle", "destroy"}
	out := make([]map[string]any, 0, len(names))
	for _, n := range names {
		t := tools()[n]
		out = append(out, map[string]any{"name": n, "description": t.description, "inputSchema": t.schema})
	}
	return out
}

// maxOutput caps what exec returns of each stream to the model.
const maxOutput = 64 << 10

type capWriter struct {
	buf       bytes.Buffer
	truncated bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if room := maxOutput - c.buf.Len(); room < len(p) {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.truncated = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *capWriter) String() string {
	if c.truncated {
		return c.buf.String() + "\n[output truncated]"
	}
	return c.buf.String()
}

// tools returns the tool table, built on first use: every airlock process,
// a sandbox's init too, would pay for its schemas at start.
var tools = sync.OnceValue(toolTable)

func toolTable() map[string]tool {
	return map[string]tool{
		"create_sandbox": {
			description: "Create a fresh, isolated sandbox (a Linux workspace at /workspace). Returns its id.",
			schema: schema(nil, map[string]any{
				"template":    prop("string", "template name (default: host)"),
				"ttl_seconds": prop("number", "destroy it after this many seconds (default: the daemon's maximum)"),
			}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				tpl, err := a.str("template", false)
				if err != nil {
					return nil, err
				}
				ttl, err := a.seconds("ttl_seconds")
				if err != nil {
					return nil, err
				}
				sb, err := c.CreateSandbox(ctx, sdk.CreateRequest{Template: tpl, TTL: ttl})
				if err != nil {
					return nil, err
				}
				return toolResult("sandbox "+sb.ID+" is ready; its workspace is /workspace", map[string]any{"sandbox_id": sb.ID, "template": sb.Template, "policy": sb.Policy}), nil
			},
		},
		"start_task": {
			description: "Start a task: the repository checked out at an exact commit in a new sandbox, with a write scope and a test command. Returns the task and sandbox ids.",
			schema: schema([]string{"repo"}, map[string]any{
				"repo":   prop("string", "repository: a path on the daemon's host or a URL"),
				"ref":    prop("string", "branch, tag or commit (default HEAD)"),
				"scope":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "path globs the task may change (e.g. src/**)"},
				"test":   prop("string", "shell command that runs the tests"),
				"prompt": prop("string", "the task, recorded for review"),
			}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				var req sdk.TaskRequest
				var err error
				if req.Repo, err = a.str("repo", true); err != nil {
					return nil, err
				}
				if req.Ref, err = a.str("ref", false); err != nil {
					return nil, err
				}
				if req.Scope, err = a.strs("scope"); err != nil {
					return nil, err
				}
				if req.Test, err = a.str("test", false); err != nil {
					return nil, err
				}
				if req.Prompt, err = a.str("prompt", false); err != nil {
					return nil, err
				}
				t, err := c.StartTask(ctx, req)
				if err != nil {
					return nil, err
				}
				return toolResult(fmt.Sprintf("task %s: %s at %.12s checked out in sandbox %s (/workspace)", t.ID, t.Repo, t.Commit, t.SandboxID),
					map[string]any{"task_id": t.ID, "sandbox_id": t.SandboxID, "commit": t.Commit}), nil
			},
		},
		"exec": {
			description: "Run a shell command in a sandbox (sh -c). Returns stdout, stderr and the exit code. The policy may deny it, or hold it for a human: then the result names the pending approval; call again once approved.",
			schema: schema([]string{"sandbox_id", "command"}, map[string]any{
				"sandbox_id":      prop("string", "the sandbox"),
				"command":         prop("string", "shell command line"),
				"cwd":             prop("string", "working directory (default /workspace)"),
				"timeout_seconds": prop("number", "kill it after this many seconds"),
			}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				id, err := a.str("sandbox_id", true)
				if err != nil {
					return nil, err
				}
				cmd, err := a.str("command", true)
				if err != nil {
					return nil, err
				}
				cwd, err := a.str("cwd", false)
				if err != nil {
					return nil, err
				}
				timeout, err := a.seconds("timeout_seconds")
				if err != nil {
					return nil, err
				}
				var out, errOut capWriter
				st, err := c.Exec(ctx, id, sdk.ExecRequest{Argv: []string{"/bin/sh", "-c", cmd}, Cwd: cwd, Timeout: timeout, NoApprovalWait: true}, &out, &errOut)
				if err != nil {
					return nil, err
				}
				var b strings.Builder
				fmt.Fprintf(&b, "exit code %d", st.Code)
				if st.Limit != "" {
					fmt.Fprintf(&b, " (limit hit: %s)", st.Limit)
				}
				if out.buf.Len() > 0 || out.truncated {
					b.WriteString("\nstdout:\n" + out.String())
				}
				if errOut.buf.Len() > 0 || errOut.truncated {
					b.WriteString("\nstderr:\n" + errOut.String())
				}
				res := toolResult(b.String(), map[string]any{"exit_code": st.Code, "stdout": out.String(), "stderr": errOut.String(), "limit": st.Limit, "exec_id": st.ExecID})
				if st.Code != 0 {
					res["isError"] = true
				}
				return res, nil
			},
		},
		"read_file": {
			description: "Read a text file of a sandbox (at most 1 MiB).",
			schema:      schema([]string{"sandbox_id", "path"}, map[string]any{"sandbox_id": prop("string", "the sandbox"), "path": prop("string", "absolute path, e.g. /workspace/README.md")}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				id, p, err := idPath(a)
				if err != nil {
					return nil, err
				}
				st, err := c.StatFile(ctx, id, p)
				if err != nil {
					return nil, err
				}
				if st.Size > 1<<20 {
					return nil, fmt.Errorf("%s is %d bytes; read_file returns at most 1 MiB (use exec with head or sed)", p, st.Size)
				}
				var b bytes.Buffer
				if _, err := c.ReadFile(ctx, id, p, &b); err != nil {
					return nil, err
				}
				return toolResult(b.String(), nil), nil
			},
		},
		"write_file": {
			description: "Write (create or replace) a file of a sandbox; parent directories are made.",
			schema: schema([]string{"sandbox_id", "path", "content"}, map[string]any{"sandbox_id": prop("string", "the sandbox"),
				"path": prop("string", "absolute path"), "content": prop("string", "the whole new content")}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				id, p, err := idPath(a)
				if err != nil {
					return nil, err
				}
				content, err := a.str("content", false)
				if err != nil {
					return nil, err
				}
				if err := c.WriteFile(ctx, id, p, strings.NewReader(content), 0o644, true); err != nil {
					return nil, err
				}
				return toolResult(fmt.Sprintf("wrote %d bytes to %s", len(content), p), map[string]any{"path": p, "bytes": len(content)}), nil
			},
		},
		"list_files": {
			description: "List a directory of a sandbox.",
			schema:      schema([]string{"sandbox_id"}, map[string]any{"sandbox_id": prop("string", "the sandbox"), "path": prop("string", "absolute directory (default /workspace)")}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				id, err := a.str("sandbox_id", true)
				if err != nil {
					return nil, err
				}
				p, err := a.str("path", false)
				if err != nil {
					return nil, err
				}
				if p == "" {
					p = "/workspace"
				}
				list, err := c.ListFiles(ctx, id, p)
				if err != nil {
					return nil, err
				}
				var b strings.Builder
				var entries []map[string]any
				for _, f := range list {
					fmt.Fprintf(&b, "%s\t%s\t%d\n", f.Type, f.Name, f.Size)
					entries = append(entries, map[string]any{"name": f.Name, "type": f.Type, "size": f.Size})
				}
				return toolResult(b.String(), map[string]any{"path": p, "entries": entries}), nil
			},
		},
		"diff": {
			description: "The task's patch against its base commit, and the files changed (in or out of the write scope).",
			schema:      schema([]string{"task_id"}, map[string]any{"task_id": prop("string", "the task")}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				id, err := a.str("task_id", true)
				if err != nil {
					return nil, err
				}
				d, err := c.DiffTask(ctx, id)
				if err != nil {
					return nil, err
				}
				summary := d.Patch
				if summary == "" {
					summary = "no changes"
				}
				return toolResult(summary, map[string]any{"files": d.Files, "out_of_scope": d.OutOfScope}), nil
			},
		},
		"run_tests": {
			description: "Run the task's test command and record the result.",
			schema:      schema([]string{"task_id"}, map[string]any{"task_id": prop("string", "the task"), "timeout_seconds": prop("number", "kill the tests after this long")}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				id, err := a.str("task_id", true)
				if err != nil {
					return nil, err
				}
				timeout, err := a.seconds("timeout_seconds")
				if err != nil {
					return nil, err
				}
				var out, errOut capWriter
				st, passed, err := c.TestTask(ctx, id, timeout, &out, &errOut)
				if err != nil {
					return nil, err
				}
				verdict := "FAILED"
				if passed {
					verdict = "passed"
				}
				res := toolResult(fmt.Sprintf("tests %s (exit code %d)\n%s%s", verdict, st.Code, out.String(), errOut.String()),
					map[string]any{"passed": passed, "exit_code": st.Code})
				if !passed {
					res["isError"] = true
				}
				return res, nil
			},
		},
		"export_bundle": {
			description: "The task's signed review bundle (tar.gz: patch, commands, outputs, tests, approvals, audit excerpt, report.html), as an embedded resource.",
			schema:      schema([]string{"task_id"}, map[string]any{"task_id": prop("string", "the task")}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				id, err := a.str("task_id", true)
				if err != nil {
					return nil, err
				}
				var b bytes.Buffer
				n, err := c.TaskBundle(ctx, id, &b)
				if err != nil {
					return nil, err
				}
				return map[string]any{"content": []any{
					text(fmt.Sprintf("review bundle of task %s: %d bytes (verify with: airlock bundle verify FILE)", id, n)),
					map[string]any{"type": "resource", "resource": map[string]any{
						"uri": "airlock://tasks/" + id + "/bundle.tar.gz", "mimeType": "application/gzip", "blob": base64.StdEncoding.EncodeToString(b.Bytes())}},
				}}, nil
			},
		},
		"destroy": {
			description: "Destroy a sandbox: every process dies and its files are gone (its record stays).",
			schema:      schema([]string{"sandbox_id"}, map[string]any{"sandbox_id": prop("string", "the sandbox")}),
			run: func(ctx context.Context, c *sdk.Client, a args) (map[string]any, error) {
				id, err := a.str("sandbox_id", true)
				if err != nil {
					return nil, err
				}
				if err := c.DestroySandbox(ctx, id); err != nil {
					return nil, err
				}
				return toolResult("sandbox "+id+" destroyed", map[string]any{"sandbox_id": id}), nil
			},
		},
	}
}

func idPath(a args) (string, string, error) {
	id, err := a.str("sandbox_id", true)
	if err != nil {
		return "", "", err
	}
	p, err := a.str("path", true)
	if err != nil {
		return "", "", err
	}
	return id, p, nil
}
