// Package sandbox is 'airlock sandbox', the client verbs of long-lived
// sandboxes (create, ls, get, exec with approvals, files, terminals,
// snapshots, ...), through the daemon's API (sdk).
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/sdk"
)

const sandboxUsage = `usage: airlock sandbox <command> [flags] [args]

Manages long-lived sandboxes through the airlock daemon ('airlock serve').

commands:
  create   create a sandbox and print its id
  ls       list sandboxes, newest first
  get      show one sandbox
  exec     run a command in a sandbox, streaming its output
  rm       destroy sandboxes
  timeout  set or clear a sandbox's time to live
  execs    list the commands run in a sandbox
  output   print the stored output of one command
  pause    freeze a sandbox
  resume   thaw a paused sandbox
  reset    start a sandbox over from its template
  kill     send a signal to a running command
  snapshot make a template of a sandbox's /workspace and home
  templates list the templates (built-in and snapshots)
  upload   copy a host directory into a sandbox
  cat      print a file of a sandbox
  put      write stdin to a file of a sandbox
  files    list a directory of a sandbox
  stat     describe a file of a sandbox
  mkdir    make a directory in a sandbox
  rmf      remove a file or directory in a sandbox
  download write a directory of a sandbox to stdout as tar
  input    send stdin to a running command (started with an open stdin)
  close-stdin  close that stdin
  resize   resize a running command's terminal
  health   ask the daemon how it is

Every command takes --socket PATH, the daemon's socket (env AIRLOCK_SOCKET,
default /run/airlock/airlock.sock). Exit status: 0 on success, 1 when the
daemon refused or could not be reached, 2 for bad usage; exec exits with the
command's own status.

Run 'airlock sandbox <command> --help' for a command's flags.
`

// sandboxStdin is what 'exec --stdin' sends (a variable for tests).
var sandboxStdin io.Reader = os.Stdin

var sandboxVerbs = []cli.SubVerb{
	{Name: "create", Run: sandboxCreate},
	{Name: "ls", Run: sandboxLs},
	{Name: "get", Run: sandboxGet},
	{Name: "exec", Run: sandboxExec},
	{Name: "rm", Run: sandboxRm},
	{Name: "timeout", Run: sandboxTimeout},
	{Name: "execs", Run: sandboxExecs},
	{Name: "output", Run: sandboxOutput},
	{Name: "pause", Run: sandboxAction("pause", "freezes every process of the sandbox until 'resume'")},
	{Name: "resume", Run: sandboxAction("resume", "thaws a paused sandbox")},
	{Name: "reset", Run: sandboxAction("reset", "starts the sandbox over from its template: processes killed, files it wrote gone")},
	{Name: "kill", Run: sandboxKill},
	{Name: "snapshot", Run: sandboxSnapshot},
	{Name: "templates", Run: sandboxTemplates},
	{Name: "upload", Run: sandboxUpload},
	{Name: "cat", Run: sandboxCat},
	{Name: "put", Run: sandboxPut},
	{Name: "files", Run: sandboxFiles},
	{Name: "stat", Run: sandboxStat},
	{Name: "mkdir", Run: sandboxMkdir},
	{Name: "rmf", Run: sandboxRmFile},
	{Name: "download", Run: sandboxDownload},
	{Name: "input", Run: sandboxInput},
	{Name: "close-stdin", Run: sandboxCloseStdin},
	{Name: "resize", Run: sandboxResize},
	{Name: "health", Run: sandboxHealth},
}

func CmdSandbox(args []string, stdout, stderr io.Writer) int {
	return cli.DispatchGroup("sandbox", sandboxUsage, sandboxVerbs, args, stdout, stderr)
}

func sandboxCreate(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("create", "airlock sandbox create [flags]",
		"Creates a sandbox and prints its id (with --json, the whole sandbox).\nLimits left out take the daemon's defaults.\n", stdout, stderr)
	var (
		req          sdk.CreateRequest
		labels, env  cli.ListFlag
		asJSON       bool
		memory, disk int64
		tmp          int64
	)
	c.FS.StringVar(&req.Template, "template", "", "template for the root filesystem (default: the daemon's, host)")
	c.FS.StringVar(&req.Backend, "backend", "", "isolation backend: native or gvisor (default: the daemon's)")
	c.FS.Var(cli.SizeFlag{V: &memory}, "memory", "memory limit: a `SIZE` such as 512M")
	c.FS.Int64Var(&req.Limits.Pids, "pids", 0, "maximum number of processes")
	c.FS.Int64Var(&req.Limits.Ptys, "ptys", 0, "maximum number of terminals open at once (default: the backend's, 16 on native; gvisor takes none)")
	c.FS.Float64Var(&req.Limits.CPUs, "cpus", 0, "CPU quota in CPUs, e.g. 1.5 (default: no quota)")
	c.FS.Var(cli.SizeFlag{V: &disk}, "disk", "size of the writable layer (/workspace, home): a `SIZE` such as 1G")
	c.FS.Var(cli.SizeFlag{V: &tmp}, "tmp", "size of /tmp: a `SIZE` such as 256M")
	cli.DurationVar(c.FS, &req.TTL, "ttl", 0, "destroy the sandbox after this long: a `DURATION` such as 1h, 7d (default and most: the daemon's --max-lifetime, 24h unless set; never only where that is 0)")
	c.FS.Var(&labels, "label", "attach the label `k=v` (repeatable)")
	c.FS.Var(&env, "env", "set `K=V` in every command's environment (repeatable)")
	c.FS.BoolVar(&asJSON, "json", false, "print the sandbox as JSON")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	req.Limits.MemoryBytes, req.Limits.DiskBytes, req.Limits.TmpBytes = memory, disk, tmp
	switch {
	case req.Limits.Pids < 0:
		return c.UsageErr("--pids %d: must not be negative", req.Limits.Pids)
	case req.Limits.Ptys < 0:
		return c.UsageErr("--ptys %d: must not be negative", req.Limits.Ptys)
	case req.Limits.CPUs < 0 || req.Limits.CPUs != req.Limits.CPUs:
		return c.UsageErr("--cpus %g: must not be negative", req.Limits.CPUs)
	case req.TTL < 0:
		return c.UsageErr("--ttl %s: must not be negative", req.TTL)
	}
	if err := cli.CheckEnv(env); err != nil {
		return c.UsageErr("%v", err)
	}
	req.Env = env
	for _, kv := range labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return c.UsageErr("--label %q: use k=v", kv)
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		if _, dup := req.Labels[k]; dup {
			return c.UsageErr("--label %q: %s given twice", kv, k)
		}
		req.Labels[k] = v
	}

	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	sb, err := cl.CreateSandbox(context.Background(), req)
	if err != nil {
		return c.Fail(err)
	}
	if asJSON {
		if err := cli.PrintJSON(stdout, sb); err != nil {
			return c.Fail(err)
		}
		return 0
	}
	fmt.Fprintln(stdout, sb.ID)
	return 0
}

func sandboxLs(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("ls", "airlock sandbox ls [flags]", "Lists sandboxes, newest first, running, paused and stopped.\n", stdout, stderr)
	state := c.FS.String("state", "", "only sandboxes in this `state`: running, paused or stopped")
	asJSON := c.FS.Bool("json", false, "print a JSON array of sandboxes")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	switch *state {
	case "", sdk.StateRunning, sdk.StatePaused, sdk.StateStopped:
	default:
		return c.UsageErr("--state %q: use running, paused or stopped", *state)
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	sbs, err := cl.ListSandboxes(context.Background(), *state)
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		if err := cli.PrintJSON(stdout, sbs); err != nil {
			return c.Fail(err)
		}
		return 0
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTEMPLATE\tCREATED\tEXPIRES")
	for _, sb := range sbs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cli.Esc(sb.ID), cli.Esc(stateText(&sb)), cli.Esc(sb.Template), cli.Ago(sb.Created, now), expiresText(&sb, now))
	}
	if err := tw.Flush(); err != nil {
		return c.Fail(err)
	}
	return 0
}

func stateText(sb *sdk.Sandbox) string {
	if sb.State == sdk.StateStopped && sb.StopReason != "" {
		return sb.State + " (" + sb.StopReason + ")"
	}
	return sb.State
}

func expiresText(sb *sdk.Sandbox, now time.Time) string {
	switch {
	case sb.State != sdk.StateRunning || sb.Expires.IsZero():
		return "-"
	case !sb.Expires.After(now):
		return "now"
	}
	return "in " + cli.HumanDuration(sb.Expires.Sub(now))
}

func sandboxGet(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("get", "airlock sandbox get [flags] ID", "Shows one sandbox, running or stopped: its state, limits and isolation.\n", stdout, stderr)
	asJSON := c.FS.Bool("json", false, "print the sandbox as JSON")
	id, code, done := c.OneID(args)
	if done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	sb, err := cl.GetSandbox(context.Background(), id)
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		if err := cli.PrintJSON(stdout, sb); err != nil {
			return c.Fail(err)
		}
		return 0
	}
	if err := printSandbox(stdout, sb, time.Now()); err != nil {
		return c.Fail(err)
	}
	return 0
}

func printSandbox(w io.Writer, sb *sdk.Sandbox, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	row := func(k, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t%s\n", k, cli.Esc(fmt.Sprintf(format, args...)))
	}
	when := func(t time.Time) string {
		if t.After(now) {
			return fmt.Sprintf("%s (in %s)", t.Local().Format(time.RFC3339), cli.HumanDuration(t.Sub(now)))
		}
		return fmt.Sprintf("%s (%s)", t.Local().Format(time.RFC3339), cli.Ago(t, now))
	}
	row("ID", "%s", sb.ID)
	row("State", "%s", stateText(sb))
	tpl := sb.Template
	if sb.TemplateVersion != "" {
		tpl += " (version " + sb.TemplateVersion + ")"
	}
	row("Template", "%s", tpl)
	row("Backend", "%s", sb.Backend)
	row("Created", "%s", when(sb.Created))
	switch {
	case !sb.Stopped.IsZero():
		row("Stopped", "%s", when(sb.Stopped))
	case sb.Expires.IsZero():
		row("Expires", "never")
	default:
		row("Expires", "%s", when(sb.Expires))
	}
	if len(sb.Labels) > 0 {
		keys := make([]string, 0, len(sb.Labels))
		for k := range sb.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			keys[i] = k + "=" + sb.Labels[k]
		}
		row("Labels", "%s", strings.Join(keys, ", "))
	}
	l := sb.Limits
	row("Memory", "%s", cli.FmtBytes(l.MemoryBytes))
	row("Processes", "%d", l.Pids)
	if l.CPUs > 0 {
		row("CPUs", "%g", l.CPUs)
	} else {
		row("CPUs", "no quota")
	}
	row("Disk", "%s (writable layer, %d inodes), /tmp %s", cli.FmtBytes(l.DiskBytes), l.Inodes, cli.FmtBytes(l.TmpBytes))
	row("Open files", "%d", l.NoFile)
	if l.Ptys > 0 {
		row("Terminals", "%d", l.Ptys)
	}
	if l.Lifetime > 0 {
		row("Lifetime", "%s", l.Lifetime)
	}
	iso := sb.Isolation
	row("Boundary", "%s", iso.Boundary)
	row("Namespaces", "%s", strings.Join(iso.Namespaces, ", "))
	row("Seccomp", "%s", iso.Seccomp)
	if iso.LandlockABI > 0 {
		row("Landlock", "ABI %d", iso.LandlockABI)
	} else {
		row("Landlock", "not applied")
	}
	row("Cgroup", "%s", iso.Cgroup)
	row("UID base", "%d", iso.UIDBase)
	if u := sb.Egress; u != nil {
		row("Egress record", "%d events, %s (budget %d events, %s)", u.Events, cli.FmtBytes(u.Bytes), u.BudgetEvents, cli.FmtBytes(u.BudgetBytes))
		if u.Cut != nil {
			row("Egress", "CUT at %s: %s", u.Cut.At.Local().Format(time.RFC3339), u.Cut.Reason)
		}
	}
	return tw.Flush()
}

func sandboxRm(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("rm", "airlock sandbox rm [flags] ID...",
		"Destroys sandboxes: kills everything in them and removes them. Their records\nstay, as stopped. Prints each id destroyed.\n", stdout, stderr)
	ids, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(ids) == 0 {
		return c.UsageErr("no sandbox ID given")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	status := 0
	for _, id := range ids {
		if err := cl.DestroySandbox(context.Background(), id); err != nil {
			c.Errorf("%v", err)
			status = 1
			continue
		}
		fmt.Fprintln(stdout, id)
	}
	return status
}

func sandboxTimeout(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("timeout", "airlock sandbox timeout [flags] ID DURATION",
		"Makes a running sandbox expire DURATION from now (e.g. 30m, 2h, 7d); 0 clears the\nTTL. Either way the daemon's --max-lifetime (24h unless set; counted from\ncreation) still bounds it: 0 then means at that bound, never only where the\ndaemon has none.\n", stdout, stderr)
	asJSON := c.FS.Bool("json", false, "print the sandbox as JSON")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.UsageErr("want a sandbox ID and a duration")
	}
	ttl, err := cli.ParseDuration(pos[1])
	if err != nil || ttl < 0 {
		return c.UsageErr("%q is not a duration: use a number with a unit: 30m, 2h, 7d, or 0 for no TTL of its own", pos[1])
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	sb, err := cl.SetTimeout(context.Background(), pos[0], ttl)
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		if err := cli.PrintJSON(stdout, sb); err != nil {
			return c.Fail(err)
		}
		return 0
	}
	if sb.Expires.IsZero() {
		fmt.Fprintf(stdout, "%s: never expires (the daemon has no --max-lifetime)\n", sb.ID)
	} else {
		now := time.Now()
		fmt.Fprintf(stdout, "%s: expires %s (in %s)\n", sb.ID, sb.Expires.Local().Format(time.RFC3339), cli.HumanDuration(sb.Expires.Sub(now)))
	}
	return 0
}

func sandboxExecs(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("execs", "airlock sandbox execs [flags] ID", "Lists the commands run in a sandbox, oldest first.\n", stdout, stderr)
	asJSON := c.FS.Bool("json", false, "print a JSON array of exec records")
	id, code, done := c.OneID(args)
	if done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	execs, err := cl.ListExecs(context.Background(), id)
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		if err := cli.PrintJSON(stdout, execs); err != nil {
			return c.Fail(err)
		}
		return 0
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tDURATION\tSTATUS\tCOMMAND")
	for _, e := range execs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cli.Esc(e.ID), cli.Ago(e.Started, now), execDuration(&e), cli.Esc(execStatus(&e)), cli.Esc(shellJoin(e.Argv)))
	}
	if err := tw.Flush(); err != nil {
		return c.Fail(err)
	}
	return 0
}

func execDuration(e *sdk.Exec) string {
	switch {
	case e.Status != nil && e.Status.Duration > 0:
		return e.Status.Duration.Round(time.Millisecond).String()
	case !e.Ended.IsZero():
		return e.Ended.Sub(e.Started).Round(time.Millisecond).String()
	}
	return "-"
}

func execStatus(e *sdk.Exec) string {
	var s string
	switch {
	case e.Status != nil:
		s = fmt.Sprintf("exit %d", e.Status.Code)
		if e.Status.Limit != "" {
			s += " (" + e.Status.Limit + ")"
		}
		if e.Status.StdoutTruncated || e.Status.StderrTruncated {
			s += " (output truncated)"
		}
	case e.Ended.IsZero() && e.Error == "":
		return "running"
	default:
		s = "failed"
	}
	if e.Error != "" {
		s += ": " + e.Error
	}
	return s
}

// shellJoin shows argv as a shell would read it back.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

func sandboxOutput(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("output", "airlock sandbox output [flags] ID EXEC_ID",
		"Prints the stored (capped) output of one command; see 'airlock sandbox execs'.\n", stdout, stderr)
	errStream := c.FS.Bool("stderr", false, "print the command's stderr instead of its stdout")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.UsageErr("want a sandbox ID and an exec ID")
	}
	stream := sdk.Stdout
	if *errStream {
		stream = sdk.Stderr
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	b, err := cl.ExecOutput(context.Background(), pos[0], pos[1], stream)
	if err != nil {
		return c.Fail(err)
	}
	if _, err := stdout.Write(b); err != nil {
		return c.Fail(err)
	}
	return 0
}

const sandboxExecAbout = `Runs CMD in a running sandbox, streaming its stdout and stderr as they come.
Flags may also follow ID when a "--" separates CMD.
` + ExecStatusAbout

// ExecStatusAbout ends the help of every exec verb (sandbox, task): what
// its exit status and stderr say when the policy holds or refuses CMD.
const ExecStatusAbout = `
If the policy holds CMD for a human, this says so at once on stderr, with the
approval id and how to decide ('airlock approve ID', 'airlock deny ID
--reason TEXT'), and waits up to --approval-wait for the decision: approved,
CMD runs; denied, nothing runs. On a terminal (stdin and stderr), it shows
the whole prompt and offers to decide it here: y approves this command line
in this sandbox for 15m, n denies, Enter waits (--no-approval-prompt: never).

Exit status: CMD's own; 127 if CMD is not found, 126 if it is not executable
or the policy refused it (denied, or held with --no-approval-wait), 75 if
nobody decided within --approval-wait (nothing ran; the approval stays
pending: run the command again once it is approved), 124 if --timeout
expired, 128+N if killed by signal N, 125 when airlock itself failed (no
daemon, no such sandbox, ...), 2 for bad usage. A hit limit (timeout, memory,
pids, disk, output) is named on stderr. SIGINT, SIGTERM and SIGHUP end the
request (the daemon then kills CMD) and exit 128+N.
`

// exitApprovalWait is the exit status of an exec whose approval was not
// decided in time (EX_TEMPFAIL: nothing ran, try again later).
const exitApprovalWait = 75

// approvalPoll is how often a held exec asks whether it was decided.
var approvalPoll = 250 * time.Millisecond

// interrupted is the cause of an exec ended by a signal.
type interrupted struct{ sig syscall.Signal }

func (i *interrupted) Error() string {
	return "interrupted by " + unix.SignalName(i.sig) + " (the daemon kills the command when its client goes)"
}

func sandboxExec(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("exec", "airlock sandbox exec [flags] ID [--] CMD [ARGS...]", sandboxExecAbout, stdout, stderr)
	return RunExec(c, args, nil)
}

// RunExec is 'sandbox exec' and 'task exec': resolve, when not nil, turns
// the ID given into a sandbox id.
func RunExec(c *cli.Cmd, args []string, resolve func(ctx context.Context, cl *sdk.Client, id string) (string, error)) int {
	var (
		req      sdk.ExecRequest
		env      cli.ListFlag
		useStdin bool
		wait     = 5 * time.Minute
	)
	c.FS.StringVar(&req.Cwd, "cwd", "", "working directory inside the sandbox (default /workspace)")
	c.FS.Var(&env, "env", "set `K=V` in CMD's environment (repeatable)")
	cli.DurationVar(c.FS, &req.Timeout, "timeout", 0, "kill CMD after this long: a `DURATION` such as 30s, 5m (default: no timeout)")
	c.FS.BoolVar(&useStdin, "stdin", false, "send this process's stdin to CMD (read to its end first; at most 16M)")
	c.FS.Var(cli.SizeFlag{V: &req.OutputLimit}, "output-limit", "cap on each of stdout and stderr: a `SIZE` (default: the daemon's, 16M)")
	background := c.FS.Bool("background", false, "start CMD and return: print its exec id (see 'execs', 'output', 'kill')")
	cli.DurationVar(c.FS, &wait, "approval-wait", wait, "if the policy holds CMD for approval, wait this long for the decision: a `DURATION`, at most 1h (0: as --no-approval-wait)")
	noWait := c.FS.Bool("no-approval-wait", false, "if the policy holds CMD, fail at once (exit 126) and print the approval id")
	noPrompt := c.FS.Bool("no-approval-prompt", false, "on a terminal, do not offer to decide a held CMD here (wait for another operator)")

	// Without "--", flags stop at ID and the rest is CMD, so that CMD's own
	// flags are left alone.
	head, tail, dashed := cli.SplitDash(args)
	if code, done := cli.ParseFlags(c.FS, c.Usage, head, c.Stdout); done {
		return code
	}
	var id string
	if dashed {
		pos, err := cli.ParseInterspersed(c.FS, c.FS.Args())
		if err != nil {
			return 2
		}
		if len(pos) != 1 {
			return c.UsageErr("want one ID before --")
		}
		id, req.Argv = pos[0], tail
	} else {
		rest := c.FS.Args()
		if len(rest) == 0 {
			return c.UsageErr("no ID given")
		}
		id, req.Argv = rest[0], rest[1:]
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return c.UsageErr("no command given")
	}
	if err := cli.CheckEnv(env); err != nil {
		return c.UsageErr("%v", err)
	}
	req.Env = env
	if req.Cwd != "" && !path.IsAbs(req.Cwd) {
		return c.UsageErr("--cwd %q: must be an absolute path inside the sandbox", req.Cwd)
	}
	if req.Timeout < 0 {
		return c.UsageErr("--timeout %s: must not be negative", req.Timeout)
	}
	if wait < 0 || wait > time.Hour {
		return c.UsageErr("--approval-wait %s: 0 to 1h", wait)
	}
	// The CLI waits for a decision itself, so that it can say at once that
	// CMD is held, and by whom it can be decided.
	req.NoApprovalWait = true
	var stdinData []byte
	if useStdin {
		b, err := io.ReadAll(io.LimitReader(sandboxStdin, sdk.MaxStdin+1))
		if err != nil {
			c.Errorf("reading stdin: %v", err)
			return 125
		}
		if len(b) > sdk.MaxStdin {
			c.Errorf("stdin is larger than %d MiB", sdk.MaxStdin>>20)
			return 125
		}
		stdinData = b
	}

	// SIGINT/SIGTERM/SIGHUP: drop the stream (or the wait), exit 128+sig.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigc)
	go func() {
		select {
		case s := <-sigc:
			cancel(&interrupted{s.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	wasInterrupted := func() int {
		var in *interrupted
		if errors.As(context.Cause(ctx), &in) {
			c.Errorf("%v", in)
			return 128 + int(in.sig)
		}
		return 0
	}

	cl, err := c.Client()
	if err != nil {
		c.Errorf("%v", err)
		return 125
	}
	if resolve != nil {
		if id, err = resolve(ctx, cl, id); err != nil {
			c.Errorf("%v", err)
			return 125
		}
	}
	deadline := time.Now().Add(wait)
	for {
		if useStdin {
			req.Stdin = bytes.NewReader(stdinData)
		}
		var st *sdk.ExitStatus
		if *background {
			var bs *sdk.Started
			if bs, err = cl.ExecBackground(ctx, id, req); err == nil {
				fmt.Fprintln(c.Stdout, bs.ExecID)
				return 0
			}
		} else if st, err = cl.Exec(ctx, id, req, c.Stdout, c.Stderr); err == nil {
			reportLimits(ctx, cl, id, req.Timeout, st, c.Stderr)
			return st.Code
		}
		if code := wasInterrupted(); code != 0 {
			return code
		}
		var e *sdk.Error
		if !sdk.IsApprovalPending(err) || !errors.As(err, &e) || e.ApprovalID == "" {
			return execFailed(c, ctx, cl, id, req.Argv, err)
		}
		if *noWait || wait == 0 {
			c.Errorf("%v", err)
			c.Errorf("an operator decides with 'airlock approve %s' or 'airlock deny %s --reason TEXT' (see 'airlock approvals'); then run it again", e.ApprovalID, e.ApprovalID)
			return 126
		}
		c.Errorf("%v", err)
		c.Errorf("waiting up to %s for an operator: 'airlock approve %s' lets it run, 'airlock deny %s --reason TEXT' refuses it (see 'airlock approvals')",
			cli.HumanDuration(time.Until(deadline)), e.ApprovalID, e.ApprovalID)
		var a *sdk.Approval
		if !useStdin && !*background && !*noPrompt && promptTerminal(c.Stderr) {
			a, err = decideHere(ctx, c, cl, e.ApprovalID, deadline)
		} else {
			a, err = waitDecision(ctx, cl, e.ApprovalID, deadline)
		}
		if code := wasInterrupted(); code != 0 {
			return code
		}
		if err != nil {
			c.Errorf("approval %s: %v", e.ApprovalID, err)
			return 125
		}
		switch a.State {
		case "approved":
			c.Errorf("approval %s: approved by %s; running it", a.ID, a.DecidedBy)
			continue
		case "denied":
			c.Errorf("approval %s: denied by %s: %s", a.ID, a.DecidedBy, a.Reason)
			return 126
		case "expired":
			c.Errorf("approval %s expired undecided; nothing ran (run the command again to ask again)", a.ID)
			return exitApprovalWait
		}
		c.Errorf("approval %s was not decided within %s; nothing ran. It stays pending until %s: run the command again once it is approved",
			a.ID, wait, a.Deadline.Local().Format(time.RFC3339))
		return exitApprovalWait
	}
}

// waitDecision polls an approval until it is decided or deadline passes;
// it returns the approval as last seen.
func waitDecision(ctx context.Context, cl *sdk.Client, id string, deadline time.Time) (*sdk.Approval, error) {
	for {
		a, err := cl.GetApproval(ctx, id)
		if err != nil {
			return nil, err
		}
		if a.State != "pending" || !time.Now().Before(deadline) {
			return a, nil
		}
		t := time.NewTimer(min(approvalPoll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// execFailed reports an exec that returned no status. A command that could
// not start answers not_found or invalid, and its exec record holds the
// conventional status (127, 126); anything else is airlock's failure: 125.
func execFailed(c *cli.Cmd, ctx context.Context, cl *sdk.Client, id string, argv []string, err error) int {
	c.Errorf("%v", err)
	if sdk.IsPolicyDenied(err) || sdk.IsApprovalPending(err) {
		return 126 // not permitted: nothing ran
	}
	if sdk.IsApprovalTimeout(err) {
		return exitApprovalWait
	}
	var e *sdk.Error
	if !errors.As(err, &e) || e.Status == 0 || (e.Code != sdk.CodeNotFound && e.Code != sdk.CodeInvalid) {
		return 125
	}
	execs, lerr := cl.ListExecs(ctx, id)
	if lerr != nil {
		return 125 // most likely, the sandbox itself is unknown
	}
	for i := len(execs) - 1; i >= 0; i-- {
		x := execs[i]
		if slices.Equal(x.Argv, argv) && x.Status != nil && !x.Ended.IsZero() {
			if x.Status.Code != 0 {
				return x.Status.Code
			}
			break
		}
	}
	if e.Code == sdk.CodeNotFound {
		return 127 // the sandbox exists: what was not found is CMD
	}
	return 125
}

// reportLimits names on stderr a limit the command hit, as 'airlock run'
// does.
func reportLimits(ctx context.Context, cl *sdk.Client, id string, timeout time.Duration, st *sdk.ExitStatus, stderr io.Writer) {
	var lim *sdk.Limits
	if st.Limit == sdk.LimitMemory || st.Limit == sdk.LimitPids || st.Limit == sdk.LimitDisk {
		if sb, err := cl.GetSandbox(ctx, id); err == nil {
			lim = &sb.Limits
		}
	}
	switch st.Limit {
	case sdk.LimitTimeout:
		if timeout > 0 {
			fmt.Fprintf(stderr, "airlock: command timed out after %s and was killed\n", timeout)
		} else {
			fmt.Fprintln(stderr, "airlock: command timed out and was killed")
		}
	case sdk.LimitMemory:
		if lim != nil {
			fmt.Fprintf(stderr, "airlock: memory limit of %s exceeded; the command was killed (the sandbox's --memory)\n", cli.FmtBytes(lim.MemoryBytes))
		} else {
			fmt.Fprintln(stderr, "airlock: the sandbox's memory limit was exceeded; the command was killed (the sandbox's --memory)")
		}
	case sdk.LimitPids:
		if lim != nil {
			fmt.Fprintf(stderr, "airlock: process limit of %d reached (the sandbox's --pids)\n", lim.Pids)
		} else {
			fmt.Fprintln(stderr, "airlock: the sandbox's process limit was reached (the sandbox's --pids)")
		}
	case sdk.LimitDisk:
		if lim != nil {
			fmt.Fprintf(stderr, "airlock: sandbox disk is full (limit %s for the writable layer, %s for /tmp; the sandbox's --disk and --tmp)\n", cli.FmtBytes(lim.DiskBytes), cli.FmtBytes(lim.TmpBytes))
		} else {
			fmt.Fprintln(stderr, "airlock: sandbox disk is full (the sandbox's --disk and --tmp)")
		}
	case "":
	default:
		fmt.Fprintf(stderr, "airlock: the command hit the sandbox's %s limit\n", st.Limit)
	}
	if st.StdoutTruncated || st.StderrTruncated {
		fmt.Fprintf(stderr, "airlock: output truncated (stdout %d bytes, stderr %d bytes; raise --output-limit)\n", st.StdoutBytes, st.StderrBytes)
	}
}
