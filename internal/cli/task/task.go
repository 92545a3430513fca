// Package task is 'airlock task', the review workflow's verbs: start,
// exec, test, diff, finish, export, get, ls.
package task

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/cli/sandbox"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/sdk"
	"golang.org/x/sys/unix"
)

const taskUsage = `usage: airlock task <command> [flags] [args]

The reference workflow: a repository checked out at an exact commit in a
fresh sandbox, worked on there, tested, and turned into a patch for review.

commands:
  start    check out a repository in a new sandbox; prints the task id
  exec     run a command in the task's sandbox (as 'airlock sandbox exec')
  test     run the task's test command and record the result
  diff     print the patch against the base commit (computed by the daemon
           from the files alone) and the files changed outside the scope
  finish   run the tests, write patch, changed files, test runs and command
           log to the task's output directory, destroy the sandbox
  export   write the task's signed review bundle: -o FILE.tar.gz, or -o DIR
           to unpack it (verified first); see 'airlock bundle verify'
  get      show a task
  ls       list tasks

Every command takes --socket PATH (env AIRLOCK_SOCKET).
`

var taskVerbs = []cli.SubVerb{
	{Name: "start", Run: taskStart},
	{Name: "exec", Run: taskExec},
	{Name: "test", Run: taskTest},
	{Name: "diff", Run: taskDiff},
	{Name: "finish", Run: taskFinish},
	{Name: "export", Run: taskExport},
	{Name: "get", Run: taskGet},
	{Name: "ls", Run: taskLs},
}

func CmdTask(args []string, stdout, stderr io.Writer) int {
	return cli.DispatchGroup("task", taskUsage, taskVerbs, args, stdout, stderr)
}

func newTaskCmd(name, synopsis, about string, stdout, stderr io.Writer) *cli.Cmd {
	c := cli.NewCmd(name, synopsis, about, stdout, stderr)
	c.Group = "task"
	return c
}

func taskStart(args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd("start", "airlock task start (--repo PATH|URL [--upload] | --bundle FILE) [flags]",
		"Clones the repository on the daemon's host, checks out the exact commit of --ref in\n"+
			"a new sandbox's /workspace (with its .git) and prints the task id. With --bundle, or\n"+
			"--repo DIR --upload, the repository goes in the request as a git bundle (at most\n"+
			"256 MiB; only HEAD, branches and tags; whole history) and the daemon clones that.\n", stdout, stderr)
	var req sdk.TaskRequest
	var scope, env, presets cli.ListFlag
	var egressFile, bundleFile string
	c.FS.StringVar(&req.Repo, "repo", "", "repository: a path on the daemon's host or a URL")
	c.FS.StringVar(&bundleFile, "bundle", "", "upload the git bundle `FILE` ('-': stdin) as the repository, instead of --repo")
	upload := c.FS.Bool("upload", false, "with --repo DIR: bundle DIR's --ref here (as the user running this) and upload it, pinned to the commit it is now")
	c.FS.StringVar(&req.Ref, "ref", "HEAD", "branch, tag or commit")
	c.FS.StringVar(&req.Commit, "commit", "", "the full commit `ID` --ref must be (the task is refused otherwise)")
	c.FS.Var(&scope, "scope", "path `GLOB` the task may write, ** allowed (repeatable; default: anywhere)")
	c.FS.StringVar(&req.Test, "test", "", "shell command that runs the tests, e.g. 'go test ./...'")
	c.FS.StringVar(&req.Prompt, "prompt", "", "the task's prompt, recorded for review")
	c.FS.StringVar(&req.Template, "template", "host", "template of the sandbox")
	c.FS.StringVar(&req.Backend, "backend", "", "isolation backend: native or gvisor (default: the daemon's; gvisor has no write scopes)")
	ttl := cli.Duration(c.FS, "ttl", 0, "destroy the sandbox after this long: a `DURATION` such as 2h, 7d (default and most: the daemon's --max-lifetime, 24h unless set)")
	c.FS.Var(&env, "env", "set `K=V` in every command's environment, the test command's too (repeatable)")
	c.FS.Var(&presets, "preset", "allow the package registry `NAME` (npm, go, pypi, debian, crates: the hosts this machine's own configuration names), comma-separated or repeatable")
	c.FS.StringVar(&egressFile, "egress", "", "the task's egress policy layer from `FILE` (YAML or JSON: grant, presets, rules; see 'airlock policy default'); over TCP it may only tighten")
	asJSON := c.FS.Bool("json", false, "print the task as JSON")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	switch {
	case (req.Repo == "") == (bundleFile == ""):
		return c.UsageErr("give --repo or --bundle")
	case *upload && req.Repo == "":
		return c.UsageErr("--upload bundles --repo DIR")
	}
	if err := cli.CheckEnv(env); err != nil {
		return c.UsageErr("%v", err)
	}
	layer, err := egressLayer(egressFile, presets)
	if err != nil {
		return c.UsageErr("%v", err)
	}
	if layer != nil {
		req.Policy = &sdk.PolicyLayer{Egress: layer}
	}
	req.Scope, req.TTL, req.Env = scope, *ttl, env
	what, cleanup, err := startSource(&req, bundleFile, *upload)
	if err != nil {
		return c.Fail(err)
	}
	defer cleanup()
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	shown := cli.Progress(tty(stderr), "cloning "+what+" into a new sandbox")
	t, err := cl.StartTask(context.Background(), req)
	shown()
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, t)
		return 0
	}
	fmt.Fprintln(stdout, t.ID)
	return 0
}

func taskExec(args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd("exec", "airlock task exec [flags] TASK [--] CMD [ARGS...]",
		"Runs CMD in the task's sandbox, as 'airlock sandbox exec' does (the write scope\nof the task applies). Flags may also follow TASK when a \"--\" separates CMD.\n"+sandbox.ExecStatusAbout, stdout, stderr)
	return sandbox.RunExec(c, args, func(ctx context.Context, cl *sdk.Client, id string) (string, error) {
		t, err := cl.GetTask(ctx, id)
		if err != nil {
			return "", err
		}
		return t.SandboxID, nil
	})
}

func taskTest(args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd("test", "airlock task test [flags] TASK", "Runs the task's test command in /workspace, streaming its output; exits 0 when the tests pass.\n", stdout, stderr)
	timeout := cli.Duration(c.FS, "timeout", 30*time.Minute, "kill the tests after this long: a `DURATION`")
	id, code, done := c.OneID(args)
	if done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	st, passed, err := cl.TestTask(context.Background(), id, *timeout, stdout, stderr)
	if err != nil {
		return c.Fail(err)
	}
	verdict := "FAILED"
	if passed {
		verdict = "passed"
	}
	fmt.Fprintf(stderr, "airlock: tests %s (exit status %d%s)\n", verdict, st.Code, map[bool]string{true: ", limit hit: " + st.Limit, false: ""}[st.Limit != ""])
	if passed {
		return 0
	}
	return 1
}

// patchOut is where a patch is printed: as it is for a pipe or a file
// (git apply), escaped for a terminal. The patch is the agent's bytes, and
// a human reviews it there: an escape sequence in a changed line could
// erase or repaint the lines around it (hide a hunk), a bidi override
// reorder them (issue 16.4, for the review of a task's change).
func patchOut(stdout io.Writer) io.Writer {
	if f, ok := stdout.(*os.File); ok && isTerminal(f) {
		return termsafe.NewWriter(f)
	}
	return stdout
}

// tty is w when it is a terminal, for cli.Progress (nil otherwise).
func tty(w io.Writer) io.Writer {
	if f, ok := cli.Underlying(w).(*os.File); ok && isTerminal(f) {
		return f
	}
	return nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func taskDiff(args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd("diff", "airlock task diff [flags] TASK", "Prints the patch against the base commit; files changed outside the scope are named on stderr.\n", stdout, stderr)
	stat := c.FS.Bool("stat", false, "list the changed files instead of the patch")
	asJSON := c.FS.Bool("json", false, "print the whole diff as JSON")
	id, code, done := c.OneID(args)
	if done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	shown := cli.Progress(tty(stderr), "diffing the workspace against the base commit")
	d, err := cl.DiffTask(context.Background(), id)
	shown()
	if err != nil {
		return c.Fail(err)
	}
	// The patch is printed as it is to a pipe or a file (it is the files'
	// bytes, for git apply), escaped to a terminal (patchOut); everything
	// else is escaped (cli.RawVerbs).
	safeOut, stderr := termsafe.NewWriter(stdout), termsafe.NewWriter(stderr)
	switch {
	case *asJSON:
		_ = cli.PrintJSON(safeOut, d)
	case *stat:
		tw := tabwriter.NewWriter(safeOut, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATUS\tSCOPE\tPATH")
		for _, f := range d.Files {
			scope := "in"
			if !f.InScope {
				scope = "OUT"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", termsafe.String(f.Status), scope, termsafe.String(f.Path))
		}
		_ = tw.Flush()
	default:
		fmt.Fprint(patchOut(stdout), d.Patch)
	}
	if len(d.OutOfScope) > 0 {
		fmt.Fprintf(stderr, "airlock: changed outside the task's scope: %s\n", termsafe.Join(d.OutOfScope, ", "))
	}
	return 0
}

func taskFinish(args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd("finish", "airlock task finish [flags] TASK", "Runs the tests, writes patch.diff, files.json, tests.json, commands.jsonl and\nmanifest.json to the task's output directory, and destroys the sandbox.\nA task whose sandbox has stopped (TTL, destroy, daemon stop or crash) is\nfinished without tests, with the patch taken as the sandbox stopped (none after\na crash); its result and manifest say workspace_gone.\n", stdout, stderr)
	keep := c.FS.Bool("keep", false, "keep the sandbox running")
	asJSON := c.FS.Bool("json", false, "print the result as JSON")
	id, code, done := c.OneID(args)
	if done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	shown := cli.Progress(tty(stderr), "finishing the task (tests, patch, bundle)")
	r, err := cl.FinishTask(context.Background(), id, *keep)
	shown()
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, r)
		return 0
	}
	tests := "no test command"
	if r.Test != nil {
		tests = map[bool]string{true: "passed", false: "FAILED"}[r.Test.Passed]
	}
	if g := r.Task.WorkspaceGone; g != nil {
		tests = "not run (its sandbox had stopped: " + g.Reason + ")"
		fmt.Fprintf(stdout, "warning: %s\n", cli.Esc(g.Note))
	}
	fmt.Fprintf(stdout, "task %s finished: tests %s, %d files changed (%d outside the scope)\n", r.Task.ID, tests, len(r.Diff.Files), len(r.Diff.OutOfScope))
	fmt.Fprintf(stdout, "results in %s:\n", r.OutputDir)
	for _, f := range r.Files {
		fmt.Fprintf(stdout, "  %s\n", f)
	}
	return 0
}

func taskGet(args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd("get", "airlock task get [flags] TASK", "Shows a task.\n", stdout, stderr)
	asJSON := c.FS.Bool("json", false, "print the task as JSON")
	id, code, done := c.OneID(args)
	if done {
		return code
	}
	_, t, code := c.Task(id)
	if t == nil {
		return code
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, t)
		return 0
	}
	fmt.Fprintf(stdout, "task:     %s (%s)\nsandbox:  %s\nrepo:     %s\nref:      %s at %s\nscope:    %s\ntest:     %s\ntest runs: %d\n",
		cli.Esc(t.ID), cli.Esc(t.State), cli.Esc(t.SandboxID), cli.Esc(t.Repo), cli.Esc(t.Ref), cli.Esc(t.Commit), termsafe.Join(t.Scope, " "), cli.Esc(t.Test), len(t.Tests))
	if t.OutputDir != "" {
		fmt.Fprintf(stdout, "results:  %s\n", cli.Esc(t.OutputDir))
	}
	if g := t.WorkspaceGone; g != nil {
		fmt.Fprintf(stdout, "workspace: gone: %s\n", cli.Esc(g.Note))
	}
	return 0
}

func taskLs(args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd("ls", "airlock task ls [flags]", "Lists tasks, newest first.\n", stdout, stderr)
	asJSON := c.FS.Bool("json", false, "print a JSON array")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	list, err := cl.ListTasks(context.Background())
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, list)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSANDBOX\tCOMMIT\tREPO")
	for _, t := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.12s\t%s\n", cli.Esc(t.ID), cli.Esc(t.State), cli.Esc(t.SandboxID), cli.Esc(t.Commit), cli.Esc(t.Repo))
	}
	_ = tw.Flush()
	return 0
}

func taskExport(args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd("export", "airlock task export ID -o FILE.tar.gz|DIR",
		"Writes the task's signed review bundle (made now for an open task, at finish for a\nfinished one). A FILE ending in .tar.gz or .tgz gets the bundle as is; anything\nelse is a directory the verified bundle is unpacked into.\n", stdout, stderr)
	out := c.FS.String("o", "", "the bundle file, or a directory to unpack it into (required)")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.UsageErr("give one task id")
	}
	if *out == "" {
		return c.UsageErr("-o is required")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	var buf bytes.Buffer
	shown := cli.Progress(tty(stderr), "making the review bundle")
	_, err = cl.TaskBundle(context.Background(), pos[0], &buf)
	shown()
	if err != nil {
		return c.Fail(err)
	}
	if strings.HasSuffix(*out, ".tar.gz") || strings.HasSuffix(*out, ".tgz") {
		if err := os.WriteFile(*out, buf.Bytes(), 0o600); err != nil {
			return c.Fail(err)
		}
		fmt.Fprintf(stdout, "%s\n", *out)
		return 0
	}
	v, err := bundle.Verify(bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		return c.Fail(err)
	}
	if err := os.MkdirAll(*out, 0o700); err != nil {
		return c.Fail(err)
	}
	root, err := os.OpenRoot(*out)
	if err != nil {
		return c.Fail(err)
	}
	defer root.Close()
	for name, data := range v.Files {
		if dir := filepath.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o700); err != nil {
				return c.Fail(err)
			}
		}
		if err := root.WriteFile(name, data, 0o600); err != nil {
			return c.Fail(err)
		}
	}
	fmt.Fprintf(stdout, "%s (%d entries; open %s)\n", *out, v.Entries, filepath.Join(*out, bundle.ReportName))
	return 0
}

// egressLayer is a task's egress layer from --egress FILE and --preset
// (nil: neither), checked here so that a typo fails before a clone.
func egressLayer(file string, presets []string) (json.RawMessage, error) {
	if file == "" && len(presets) == 0 {
		return nil, nil
	}
	p := &netpolicy.Policy{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--egress: %w", err)
		}
		if p, err = netpolicy.Parse(data); err != nil {
			return nil, fmt.Errorf("--egress %s: %w", file, err)
		}
	}
	for _, l := range presets {
		for _, name := range strings.Split(l, ",") {
			if name = strings.TrimSpace(name); name != "" && !slices.Contains(p.Presets, name) {
				p.Presets = append(p.Presets, name)
			}
		}
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("--preset: %w", err)
	}
	return json.Marshal(p)
}
