package sdk

import (
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/wire"
)

// TaskRequest starts a task: the repository at an exact commit in a new
// sandbox's /workspace.
type TaskRequest struct {
	Repo     string   `json:"repo"`            // a path on the daemon's host, or a URL git can clone; "" with Bundle
	Ref      string   `json:"ref,omitempty"`   // branch, tag or commit; default HEAD
	Scope    []string `json:"scope,omitempty"` // path globs (** allowed) the task may write
	Test     string   `json:"test,omitempty"`  // shell command that runs the tests
	Prompt   string   `json:"prompt,omitempty"`
	Template string   `json:"template,omitempty"`
	Backend  string   `json:"backend,omitempty"` // "native" or "gvisor"; "": the daemon's default
	Limits   Limits   `json:"limits"`
	// TTL destroys the task's sandbox after this long (whole seconds); 0:
	// the daemon's maximum lifetime, as CreateRequest.TTL.
	TTL time.Duration `json:"-"`
	// Policy is the task's policy layer over the daemon's (its Scope is
	// merged with Scope above). Over TCP it may only tighten.
	Policy *PolicyLayer `json:"policy,omitempty"`
	// Env is every command's base environment ("K=V") in the task's
	// sandbox, its test command's too.
	Env []string `json:"env,omitempty"`
	// Commit, when set, is the full commit id Ref must resolve to: the
	// task starts there or not at all (a conflict error).
	Commit string `json:"commit,omitempty"`
	// Bundle, instead of Repo, is the repository itself: a git bundle
	// (git bundle create FILE BRANCH...) of whole history, at most
	// wire.MaxBundle bytes, naming only HEAD, branches and tags. It is
	// streamed to the daemon, which clones it as it clones a remote; it
	// works over TCP too, where a remote client can name no host path.
	Bundle io.Reader `json:"-"`
}

// TaskBundle is the bundle a task was started from.
type TaskBundle = wire.TaskBundle

// MaxBundle is the largest bundle the daemon takes.
const MaxBundle = wire.MaxBundle

// TestRun is one run of a task's test command.
type TestRun = wire.TestRun

// Task is a task's record.
type Task = wire.Task

// WorkspaceGone says why a task's workspace was gone when it was finished.
type WorkspaceGone = wire.WorkspaceGone

// ChangedFile is a file a task changed against its base commit.
type ChangedFile = wire.ChangedFile

// Diff is a task's change against its base commit, computed by the daemon
// from the workspace's files.
type Diff = wire.Diff

// FinishResult is what finishing a task produced.
type FinishResult = wire.FinishResult

func taskPath(id string, rest ...string) (string, error) {
	if id == "" {
		return "", invalidf("empty task id")
	}
	p := "/v1/tasks/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p, nil
}

// StartTask starts a task.
func (c *Client) StartTask(ctx context.Context, req TaskRequest) (*Task, error) {
	body := wire.TaskRequest{Repo: req.Repo, Ref: req.Ref, Scope: req.Scope, Test: req.Test, Prompt: req.Prompt, Template: req.Template,
		Backend: req.Backend, Limits: req.Limits, TTLSeconds: ceilDiv(req.TTL, time.Second), Policy: req.Policy, Env: req.Env, Commit: req.Commit}
	var t Task
	var send any = body
	if req.Bundle != nil {
		if req.Repo != "" {
			return nil, invalidf("give Repo or Bundle, not both")
		}
		send = bundleBody(body, req.Bundle)
	}
	if err := c.call(ctx, http.MethodPost, "/v1/tasks", nil, send, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// bundleBody is a task request with its bundle as a streamed multipart
// body: the request part, then the bundle part.
func bundleBody(req wire.TaskRequest, bundle io.Reader) rawBody {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="`+wire.TaskRequestPart+`"`)
			h.Set("Content-Type", "application/json")
			p, err := mw.CreatePart(h)
			if err == nil {
				err = json.NewEncoder(p).Encode(req)
			}
			if err != nil {
				return err
			}
			h = textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="`+wire.TaskBundlePart+`"; filename="repo.bundle"`)
			h.Set("Content-Type", "application/x-git-bundle")
			if p, err = mw.CreatePart(h); err == nil {
				_, err = io.Copy(p, bundle)
			}
			if err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	return rawBody{pr, mw.FormDataContentType()}
}

// GetTask returns a task.
func (c *Client) GetTask(ctx context.Context, id string) (*Task, error) {
	p, err := taskPath(id)
	if err != nil {
		return nil, err
	}
	var t Task
	if err := c.call(ctx, http.MethodGet, p, nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListTasks returns every task, newest first.
func (c *Client) ListTasks(ctx context.Context) ([]Task, error) {
	var w wire.TaskList
	if err := c.call(ctx, http.MethodGet, "/v1/tasks", nil, nil, &w); err != nil {
		return nil, err
	}
	if w.Tasks == nil {
		w.Tasks = []Task{}
	}
	return w.Tasks, nil
}

// TestTask runs the task's test command, streaming its output, and says
// whether the tests passed.
func (c *Client) TestTask(ctx context.Context, id string, timeout time.Duration, stdout, stderr io.Writer) (*ExitStatus, bool, error) {
	p, err := taskPath(id, "test")
	if err != nil {
		return nil, false, err
	}
	var q url.Values
	if timeout > 0 {
		q = url.Values{"timeout_ms": {strconv.FormatInt(ceilDiv(timeout, time.Millisecond), 10)}}
	}
	st, passed, err := c.execStream(ctx, p, q, struct{}{}, stdout, stderr, nil)
	if err != nil {
		return nil, false, err
	}
	return st, passed != nil && *passed, nil
}

// DiffTask returns the task's change against its base commit.
func (c *Client) DiffTask(ctx context.Context, id string) (*Diff, error) {
	p, err := taskPath(id, "diff")
	if err != nil {
		return nil, err
	}
	var d Diff
	if err := c.call(ctx, http.MethodGet, p, nil, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// FinishTask runs the tests, writes the results and destroys the task's
// sandbox unless keep.
func (c *Client) FinishTask(ctx context.Context, id string, keep bool) (*FinishResult, error) {
	p, err := taskPath(id, "finish")
	if err != nil {
		return nil, err
	}
	var r FinishResult
	if err := c.call(ctx, http.MethodPost, p, url.Values{"keep": {strconv.FormatBool(keep)}}, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
