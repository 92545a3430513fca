package mcp

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

type diffIn struct {
	TaskID string `json:"task_id"`
	Offset int    `json:"offset,omitempty"`
}

type diffOut struct {
	Files      []sdk.ChangedFile `json:"files"`
	OutOfScope []string          `json:"out_of_scope"`
	PatchBytes int               `json:"patch_bytes"`
	NextOffset int               `json:"next_offset,omitempty"`
	Binary     []string          `json:"binary,omitempty"`
}

// diff pages the patch (defaultPage bytes, at file or line boundaries),
// with binary files' patches summarised: a 3 MB patch in one result is
// no use to a model.
func (s *Server) diff(ctx context.Context, _ *mcpsdk.CallToolRequest, in diffIn) (*mcpsdk.CallToolResult, diffOut, error) {
	if err := need("task_id", in.TaskID); err != nil {
		return nil, diffOut{}, err
	}
	if in.Offset < 0 {
		return nil, diffOut{}, fmt.Errorf("offset must not be negative")
	}
	d, err := s.Client.DiffTask(ctx, in.TaskID)
	if err != nil {
		return nil, diffOut{}, err
	}
	patch, binary := summariseBinary(d.Patch)
	out := diffOut{Files: d.Files, OutOfScope: d.OutOfScope, PatchBytes: len(patch), Binary: binary}
	if out.Files == nil {
		out.Files = []sdk.ChangedFile{}
	}
	if out.OutOfScope == nil {
		out.OutOfScope = []string{}
	}
	if patch == "" {
		return textResult("no changes"), out, nil
	}
	chunk, next := page([]byte(patch), min(in.Offset, len(patch)), defaultPage)
	text := string(chunk)
	if next < len(patch) {
		out.NextOffset = next
		text += fmt.Sprintf("\n[patch bytes %d-%d of %d shown; more with offset=%d]", in.Offset, next, len(patch), next)
	}
	return textResult(text), out, nil
}

// summariseBinary replaces each binary file's patch (a git binary patch)
// by one line, and names those files.
func summariseBinary(patch string) (string, []string) {
	if !strings.Contains(patch, "GIT binary patch") && !strings.Contains(patch, "Binary files ") {
		return patch, nil
	}
	parts := strings.SplitAfter(patch, "\ndiff --git ")
	var b strings.Builder
	var names []string
	for i, p := range parts {
		if !strings.Contains(p, "GIT binary patch") && !strings.Contains(p, "\nBinary files ") {
			b.WriteString(p)
			continue
		}
		head, _, _ := strings.Cut(p, "\n")
		if i == 0 {
			head = strings.TrimPrefix(head, "diff --git ")
		}
		names = append(names, head)
		if i == 0 {
			b.WriteString("diff --git ")
		}
		b.WriteString(head + "\n[binary file changed: " + fmt.Sprint(len(p)) + " bytes of patch left out]\n")
		if i < len(parts)-1 {
			b.WriteString("diff --git ")
		}
	}
	return b.String(), names
}

type testsIn struct {
	TaskID         string  `json:"task_id"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"default 600"`
}

type testsOut struct {
	Passed       bool  `json:"passed"`
	ExitCode     int   `json:"exit_code"`
	OmittedBytes int64 `json:"omitted_bytes,omitempty"`
}

func (s *Server) runTests(ctx context.Context, _ *mcpsdk.CallToolRequest, in testsIn) (*mcpsdk.CallToolResult, testsOut, error) {
	if err := need("task_id", in.TaskID); err != nil {
		return nil, testsOut{}, err
	}
	timeout, err := seconds("timeout_seconds", in.TimeoutSeconds)
	if err != nil {
		return nil, testsOut{}, err
	}
	if timeout == 0 {
		timeout = s.execTimeout()
	}
	stdout, stderr := newHeadTail(headBytes, tailBytes), newHeadTail(headBytes, tailBytes)
	st, passed, err := s.Client.TestTask(ctx, in.TaskID, timeout, stdout, stderr)
	if err != nil {
		return nil, testsOut{}, err
	}
	verdict := "FAILED"
	if passed {
		verdict = "passed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tests %s (exit code %d)", verdict, st.Code)
	out := testsOut{Passed: passed, ExitCode: st.Code}
	for _, h := range []*headTail{stdout, stderr} {
		if h.total > 0 {
			c := h.Cut()
			out.OmittedBytes += c.OmittedBytes
			b.WriteString("\n" + c.Text)
		}
	}
	res := textResult(b.String())
	res.IsError = !passed
	return res, out, nil
}

func bundleURI(task string) string {
	return "airlock://tasks/" + url.PathEscape(task) + "/bundle.tar.gz"
}

// exportBundle answers with a link to the bundle (a resource the client
// reads when it wants it), not the bundle itself: megabytes of base64
// in a tool result fill a model's context.
func (s *Server) exportBundle(ctx context.Context, _ *mcpsdk.CallToolRequest, in taskIn) (*mcpsdk.CallToolResult, any, error) {
	if err := need("task_id", in.TaskID); err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	n, err := s.Client.TaskBundle(ctx, in.TaskID, &b)
	if err != nil {
		return nil, nil, err
	}
	uri := bundleURI(in.TaskID)
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
		&mcpsdk.TextContent{Text: fmt.Sprintf("review bundle of task %s: %d bytes now, at %s (read it as a resource; verify with: airlock bundle verify FILE)", in.TaskID, n, uri)},
		&mcpsdk.ResourceLink{URI: uri, Name: "bundle.tar.gz", Title: "review bundle of task " + in.TaskID, MIMEType: "application/gzip"}, // no size: built anew on each read
	}}, nil, nil
}

// addResources serves the bundle and diff of a task, and a sandbox's
// files, as resource templates, and the task workflow as a prompt.
func (s *Server) addResources(srv *mcpsdk.Server) {
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{Name: "file", Title: "Sandbox file", URITemplate: "airlock://sandboxes/{sandbox}/files/{+path}"},
		s.readFileResource)
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{Name: "tree", Title: "Sandbox directory as a tar", URITemplate: "airlock://sandboxes/{sandbox}/tree/{+path}", MIMEType: "application/x-tar"},
		s.readTreeResource)
	srv.AddPrompt(&mcpsdk.Prompt{Name: "task", Title: "Work on a task in a sandbox", Description: "The airlock task workflow, for a repository and a goal.",
		Arguments: []*mcpsdk.PromptArgument{{Name: "repo", Description: "repository path or URL", Required: true}, {Name: "goal", Description: "what to do", Required: true},
			{Name: "test", Description: "shell command that runs the tests"}}}, taskPrompt)
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{Name: "bundle", Title: "Task review bundle", URITemplate: "airlock://tasks/{task}/bundle.tar.gz", MIMEType: "application/gzip"},
		func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			task, ok := strings.CutSuffix(strings.TrimPrefix(req.Params.URI, "airlock://tasks/"), "/bundle.tar.gz")
			if !ok || task == "" || strings.Contains(task, "/") {
				return nil, mcpsdk.ResourceNotFoundError(req.Params.URI)
			}
			task, _ = url.PathUnescape(task)
			var b bytes.Buffer
			if _, err := s.Client.TaskBundle(ctx, task, &b); err != nil {
				return nil, err
			}
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/gzip", Blob: b.Bytes()}}}, nil
		})
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{Name: "diff", Title: "Task patch", URITemplate: "airlock://tasks/{task}/diff.patch", MIMEType: "text/x-diff"},
		func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			task, ok := strings.CutSuffix(strings.TrimPrefix(req.Params.URI, "airlock://tasks/"), "/diff.patch")
			if !ok || task == "" || strings.Contains(task, "/") {
				return nil, mcpsdk.ResourceNotFoundError(req.Params.URI)
			}
			task, _ = url.PathUnescape(task)
			d, err := s.Client.DiffTask(ctx, task)
			if err != nil {
				return nil, err
			}
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/x-diff", Text: d.Patch}}}, nil
		})
}

// readFileResource serves airlock://sandboxes/ID/files/PATH (PATH without
// its leading slash): text up to maxRead bytes, else a blob.
func (s *Server) readFileResource(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	rest, ok := strings.CutPrefix(req.Params.URI, "airlock://sandboxes/")
	sandbox, p, ok2 := strings.Cut(rest, "/files/")
	if !ok || !ok2 || sandbox == "" || p == "" {
		return nil, mcpsdk.ResourceNotFoundError(req.Params.URI)
	}
	p, err := url.PathUnescape(p)
	if err != nil {
		return nil, mcpsdk.ResourceNotFoundError(req.Params.URI)
	}
	p = "/" + p
	st, err := s.Client.StatFile(ctx, sandbox, p)
	if err != nil {
		return nil, err
	}
	if st.Size > maxRead {
		return nil, fmt.Errorf("%s is %d bytes; a resource is at most %d (use read_file with a line range)", p, st.Size, maxRead)
	}
	var b bytes.Buffer
	if _, err := s.Client.ReadFile(ctx, sandbox, p, &b); err != nil {
		return nil, err
	}
	c := &mcpsdk.ResourceContents{URI: req.Params.URI}
	if isBinary(b.Bytes()) {
		c.MIMEType, c.Blob = "application/octet-stream", b.Bytes()
	} else {
		c.MIMEType, c.Text = "text/plain", b.String()
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{c}}, nil
}

func taskPrompt(_ context.Context, req *mcpsdk.GetPromptRequest) (*mcpsdk.GetPromptResult, error) {
	a := req.Params.Arguments
	if a["repo"] == "" || a["goal"] == "" {
		return nil, fmt.Errorf("repo and goal are required")
	}
	test := a["test"]
	if test == "" {
		test = "the repository's test command"
	}
	text := fmt.Sprintf(`Work on this in an airlock sandbox.
Goal: %s
1. start_task with repo %q, a scope of the paths you expect to change, and test %q.
2. Explore with list_files, search and read_file (line ranges); change files with edit_file (exact, unique text) or write_file.
3. Run commands with exec; a long one answers with an exec_id: poll it with exec_output. If a command is held for approval, wait (approval_wait_seconds) or do something else; a denial's reason tells you why.
4. run_tests until they pass; check diff (nothing out of scope).
5. finish_task to record the result.`, a["goal"], a["repo"], test)
	return &mcpsdk.GetPromptResult{Description: "airlock task workflow",
		Messages: []*mcpsdk.PromptMessage{{Role: "user", Content: &mcpsdk.TextContent{Text: text}}}}, nil
}
