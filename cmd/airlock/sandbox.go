package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
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

	"github.com/airlock-dev/airlock/internal/termsafe"
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

// subVerb is one command of a verb group (sandbox, task).
type subVerb struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) int
}

// dispatchGroup runs the sub-command args[0] of a verb group.
func dispatchGroup(group, usage string, verbs []subVerb, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	for _, v := range verbs {
		if v.name == args[0] {
			if !rawVerbs[group+" "+v.name] {
				stdout, stderr = termsafe.NewWriter(stdout), termsafe.NewWriter(stderr)
			}
			return v.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "airlock %s: unknown command %q; run 'airlock %s --help' for the list\n", group, args[0], group)
	return 2
}

var sandboxVerbs = []subVerb{
	{"create", sandboxCreate},
	{"ls", sandboxLs},
	{"get", sandboxGet},
	{"exec", sandboxExec},
	{"rm", sandboxRm},
	{"timeout", sandboxTimeout},
	{"execs", sandboxExecs},
	{"output", sandboxOutput},
	{"pause", sandboxAction("pause", "freezes every process of the sandbox until 'resume'")},
	{"resume", sandboxAction("resume", "thaws a paused sandbox")},
	{"reset", sandboxAction("reset", "starts the sandbox over from its template: processes killed, files it wrote gone")},
	{"kill", sandboxKill},
	{"snapshot", sandboxSnapshot},
	{"templates", sandboxTemplates},
	{"upload", sandboxUpload},
	{"cat", sandboxCat},
	{"put", sandboxPut},
	{"files", sandboxFiles},
	{"stat", sandboxStat},
	{"mkdir", sandboxMkdir},
	{"rmf", sandboxRmFile},
	{"download", sandboxDownload},
	{"input", sandboxInput},
	{"close-stdin", sandboxCloseStdin},
	{"resize", sandboxResize},
	{"health", sandboxHealth},
}

func cmdSandbox(args []string, stdout, stderr io.Writer) int {
	return dispatchGroup("sandbox", sandboxUsage, sandboxVerbs, args, stdout, stderr)
}

// sandboxCmd is what every sandbox verb shares: its flag set with
// --socket, its output and its error reporting.
type sandboxCmd struct {
	json     bool   // --json, for verbs made by simpleVerb
	group    string // "sandbox" or "task"
	name     string // "create"
	synopsis string // "airlock sandbox create [flags]"
	usage    string
	fs       *flag.FlagSet
	socket   string
	stdout   io.Writer
	stderr   io.Writer
}

func newSandboxCmd(name, synopsis, about string, stdout, stderr io.Writer) *sandboxCmd {
	c := &sandboxCmd{group: "sandbox", name: name, synopsis: synopsis, stdout: stdout, stderr: stderr}
	c.usage = "usage: " + synopsis + "\n\n" + about + "\nflags:\n"
	c.fs = newFlagSet("sandbox "+name, c.usage, stderr)
	// the group may be changed after this (apikey, task, ...): name the
	// command as it is when the hint is printed
	c.fs.Usage = func() { fmt.Fprintf(stderr, "; run 'airlock %s --help' for usage\n", c.path()) }
	c.fs.SetOutput(flagErrors{stderr, c.path})
	c.fs.StringVar(&c.socket, "socket", envOr(sdk.SocketEnv, sdk.DefaultSocket), "the daemon's unix socket `PATH` (env AIRLOCK_SOCKET)")
	return c
}

// path is the command as typed after "airlock": "sandbox exec", or
// "approve" for a verb of its own (whose group is its name).
func (c *sandboxCmd) path() string {
	if c.group == c.name {
		return c.name
	}
	return c.group + " " + c.name
}

// splitDash splits args at the first "--".
func splitDash(args []string) (head, tail []string, dashed bool) {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i], args[i+1:], true
	}
	return args, nil, false
}

// parseInterspersed parses the flags found anywhere in args (which hold no
// "--") and returns the other arguments, in order.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parse parses flags given before or after the positional arguments
// ("get ID --json"); after a "--" everything is positional. It reports
// whether the caller should return with the given code.
func (c *sandboxCmd) parse(args []string) (pos []string, code int, done bool) {
	head, tail, _ := splitDash(args)
	if code, done := parseFlags(c.fs, c.usage, head, c.stdout); done {
		return nil, code, true
	}
	pos, err := parseInterspersed(c.fs, c.fs.Args())
	if err != nil {
		return nil, 2, true
	}
	return append(pos, tail...), 0, false
}

// usageErr reports bad usage: exit status 2.
func (c *sandboxCmd) usageErr(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "airlock %s: %s; usage: %s\n", c.path(), termsafe.String(fmt.Sprintf(format, args...)), c.synopsis)
	return 2
}

// fail reports an error on one line: exit status 1.
func (c *sandboxCmd) fail(err error) int {
	c.errorf("%v", err)
	return 1
}

func (c *sandboxCmd) errorf(format string, args ...any) {
	// Errors quote requests and answers (a command line, a path): one
	// line, its controls escaped, also for the raw verbs (exec).
	msg := termsafe.String(strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " "))
	fmt.Fprintf(c.stderr, "airlock %s: %s\n", c.path(), msg)
}

func (c *sandboxCmd) client() (*sdk.Client, error) {
	return sdk.New(sdk.WithSocket(c.socket), sdk.WithActor(actorName()))
}

// actorName is the person running the CLI, for the daemon's record of
// approvals and overrides.
func actorName() string {
	for _, k := range []string{"SUDO_USER", "USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	// JSON output is read by people too: C1 controls, DEL and bidi
	// characters, which encoding/json leaves raw, become \u escapes
	// (the same JSON).
	_, err = w.Write(append(termsafe.JSONSafe(b), '\n'))
	return err
}

func sandboxCreate(args []string, stdout, stderr io.Writer) int {
	c := newSandboxCmd("create", "airlock sandbox create [flags]",
		"Creates a sandbox and prints its id (with --json, the whole sandbox).\nLimits left out take the daemon's defaults.\n", stdout, stderr)
	var (
		req          sdk.CreateRequest
		labels, env  listFlag
		asJSON       bool
		memory, disk int64
		tmp          int64
	)
	c.fs.StringVar(&req.Template, "template", "", "template for the root filesystem (default: the daemon's, host)")
	c.fs.StringVar(&req.Backend, "backend", "", "isolation backend: native or gvisor (default: the daemon's)")
	c.fs.Var(sizeFlag{&memory}, "memory", "memory limit: a `SIZE` such as 512M")
	c.fs.Int64Var(&req.Limits.Pids, "pids", 0, "maximum number of processes")
	c.fs.Int64Var(&req.Limits.Ptys, "ptys", 0, "maximum number of terminals open at once (default: the backend's, 16 on native; gvisor takes none)")
	c.fs.Float64Var(&req.Limits.CPUs, "cpus", 0, "CPU quota in CPUs, e.g. 1.5 (default: no quota)")
	c.fs.Var(sizeFlag{&disk}, "disk", "size of the writable layer (/workspace, home): a `SIZE` such as 1G")
	c.fs.Var(sizeFlag{&tmp}, "tmp", "size of /tmp: a `SIZE` such as 256M")
	durationVar(c.fs, &req.TTL, "ttl", 0, "destroy the sandbox after this long: a `DURATION` such as 1h, 7d (default and most: the daemon's --max-lifetime, 24h unless set; never only where that is 0)")
	c.fs.Var(&labels, "label", "attach the label `k=v` (repeatable)")
	c.fs.Var(&env, "env", "set `K=V` in every command's environment (repeatable)")
	c.fs.BoolVar(&asJSON, "json", false, "print the sandbox as JSON")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) != 0 {
		return c.usageErr("unexpected argument %q", pos[0])
	}
	req.Limits.MemoryBytes, req.Limits.DiskBytes, req.Limits.TmpBytes = memory, disk, tmp
	switch {
	case req.Limits.Pids < 0:
		return c.usageErr("--pids %d: must not be negative", req.Limits.Pids)
	case req.Limits.Ptys < 0:
		return c.usageErr("--ptys %d: must not be negative", req.Limits.Ptys)
	case req.Limits.CPUs < 0 || req.Limits.CPUs != req.Limits.CPUs:
		return c.usageErr("--cpus %g: must not be negative", req.Limits.CPUs)
	case req.TTL < 0:
		return c.usageErr("--ttl %s: must not be negative", req.TTL)
	}
	if err := checkEnv(env); err != nil {
		return c.usageErr("%v", err)
	}
	req.Env = env
	for _, kv := range labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return c.usageErr("--label %q: use k=v", kv)
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		if _, dup := req.Labels[k]; dup {
			return c.usageErr("--label %q: %s given twice", kv, k)
		}
		req.Labels[k] = v
	}

	cl, err := c.client()
	if err != nil {
		return c.fail(err)
	}
	sb, err := cl.CreateSandbox(context.Background(), req)
	if err != nil {
		return c.fail(err)
	}
	if asJSON {
		if err := printJSON(stdout, sb); err != nil {
			return c.fail(err)
		}
		return 0
	}
	fmt.Fprintln(stdout, sb.ID)
	return 0
}

func checkEnv(env []string) error {
	for _, kv := range env {
		if i := strings.IndexByte(kv, '='); i <= 0 || strings.ContainsRune(kv, 0) {
			return fmt.Errorf("--env %q: use K=V", kv)
		}
	}
	return nil
}

func sandboxLs(args []string, stdout, stderr io.Writer) int {
	c := newSandboxCmd("ls", "airlock sandbox ls [flags]", "Lists sandboxes, newest first, running, paused and stopped.\n", stdout, stderr)
	state := c.fs.String("state", "", "only sandboxes in this `state`: running, paused or stopped")
	asJSON := c.fs.Bool("json", false, "print a JSON array of sandboxes")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) != 0 {
		return c.usageErr("unexpected argument %q", pos[0])
	}
	switch *state {
	case "", sdk.StateRunning, sdk.StatePaused, sdk.StateStopped:
	default:
		return c.usageErr("--state %q: use running, paused or stopped", *state)
	}
	cl, err := c.client()
	if err != nil {
		return c.fail(err)
	}
	sbs, err := cl.ListSandboxes(context.Background(), *state)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		if err := printJSON(stdout, sbs); err != nil {
			return c.fail(err)
		}
		return 0
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTEMPLATE\tCREATED\tEXPIRES")
	for _, sb := range sbs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", esc(sb.ID), esc(stateText(&sb)), esc(sb.Template), ago(sb.Created, now), expiresText(&sb, now))
	}
	if err := tw.Flush(); err != nil {
		return c.fail(err)
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
	return "in " + humanDuration(sb.Expires.Sub(now))
}

func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if !now.After(t) {
		return "just now"
	}
	return humanDuration(now.Sub(t)) + " ago"
}

// humanDuration is d in at most two units: "45s", "12m", "3h5m", "2d4h".
func humanDuration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 86400:
		if m := s % 3600 / 60; m != 0 {
			return fmt.Sprintf("%dh%dm", s/3600, m)
		}
		return fmt.Sprintf("%dh", s/3600)
	}
	if h := s % 86400 / 3600; h != 0 {
		return fmt.Sprintf("%dd%dh", s/86400, h)
	}
	return fmt.Sprintf("%dd", s/86400)
}

// oneID parses a verb that takes exactly one sandbox ID.
func (c *sandboxCmd) oneID(args []string) (id string, code int, done bool) {
	pos, code, done := c.parse(args)
	if done {
		return "", code, true
	}
	if len(pos) != 1 {
		return "", c.usageErr("want one sandbox ID"), true
	}
	return pos[0], 0, false
}

func sandboxGet(args []string, stdout, stderr io.Writer) int {
	c := newSandboxCmd("get", "airlock sandbox get [flags] ID", "Shows one sandbox, running or stopped: its state, limits and isolation.\n", stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the sandbox as JSON")
	id, code, done := c.oneID(args)
	if done {
		return code
	}
	cl, err := c.client()
	if err != nil {
		return c.fail(err)
	}
	sb, err := cl.GetSandbox(context.Background(), id)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		if err := printJSON(stdout, sb); err != nil {
			return c.fail(err)
		}
		return 0
	}
	if err := printSandbox(stdout, sb, time.Now()); err != nil {
		return c.fail(err)
	}
	return 0
}

func printSandbox(w io.Writer, sb *sdk.Sandbox, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	row := func(k, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t%s\n", k, esc(fmt.Sprintf(format, args...)))
	}
	when := func(t time.Time) string {
		if t.After(now) {
			return fmt.Sprintf("%s (in %s)", t.Local().Format(time.RFC3339), humanDuration(t.Sub(now)))
		}
		return fmt.Sprintf("%s (%s)", t.Local().Format(time.RFC3339), ago(t, now))
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
	row("Memory", "%s", fmtBytes(l.MemoryBytes))
	row("Processes", "%d", l.Pids)
	if l.CPUs > 0 {
		row("CPUs", "%g", l.CPUs)
	} else {
		row("CPUs", "no quota")
	}
	row("Disk", "%s (writable layer, %d inodes), /tmp %s", fmtBytes(l.DiskBytes), l.Inodes, fmtBytes(l.TmpBytes))
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
		row("Egress record", "%d events, %s (budget %d events, %s)", u.Events, fmtBytes(u.Bytes), u.BudgetEvents, fmtBytes(u.BudgetBytes))
		if u.Cut != nil {
			row("Egress", "CUT at %s: %s", u.Cut.At.Local().Format(time.RFC3339), u.Cut.Reason)
		}
	}
	return tw.Flush()
}

func sandboxRm(args []string, stdout, stderr io.Writer) int {
	c := newSandboxCmd("rm", "airlock sandbox rm [flags] ID...",
		"Destroys sandboxes: kills everything in them and removes them. Their records\nstay, as stopped. Prints each id destroyed.\n", stdout, stderr)
	ids, code, done := c.parse(args)
	if done {
		return code
	}
	if len(ids) == 0 {
		return c.usageErr("no sandbox ID given")
	}
	cl, err := c.client()
	if err != nil {
		return c.fail(err)
	}
	status := 0
	for _, id := range ids {
		if err := cl.DestroySandbox(context.Background(), id); err != nil {
			c.errorf("%v", err)
			status = 1
			continue
		}
		fmt.Fprintln(stdout, id)
	}
	return status
}

func sandboxTimeout(args []string, stdout, stderr io.Writer) int {
	c := newSandboxCmd("timeout", "airlock sandbox timeout [flags] ID DURATION",
		"Makes a running sandbox expire DURATION from now (e.g. 30m, 2h, 7d); 0 clears the\nTTL. Either way the daemon's --max-lifetime (24h unless set; counted from\ncreation) still bounds it: 0 then means at that bound, never only where the\ndaemon has none.\n", stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the sandbox as JSON")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.usageErr("want a sandbox ID and a duration")
	}
	ttl, err := parseDuration(pos[1])
	if err != nil || ttl < 0 {
		return c.usageErr("%q is not a duration: use a number with a unit: 30m, 2h, 7d, or 0 for no TTL of its own", pos[1])
	}
	cl, err := c.client()
	if err != nil {
		return c.fail(err)
	}
	sb, err := cl.SetTimeout(context.Background(), pos[0], ttl)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		if err := printJSON(stdout, sb); err != nil {
			return c.fail(err)
		}
		return 0
	}
	if sb.Expires.IsZero() {
		fmt.Fprintf(stdout, "%s: never expires (the daemon has no --max-lifetime)\n", sb.ID)
	} else {
		now := time.Now()
		fmt.Fprintf(stdout, "%s: expires %s (in %s)\n", sb.ID, sb.Expires.Local().Format(time.RFC3339), humanDuration(sb.Expires.Sub(now)))
	}
	return 0
}

func sandboxExecs(args []string, stdout, stderr io.Writer) int {
	c := newSandboxCmd("execs", "airlock sandbox execs [flags] ID", "Lists the commands run in a sandbox, oldest first.\n", stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print a JSON array of exec records")
	id, code, done := c.oneID(args)
	if done {
		return code
	}
	cl, err := c.client()
	if err != nil {
		return c.fail(err)
	}
	execs, err := cl.ListExecs(context.Background(), id)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		if err := printJSON(stdout, execs); err != nil {
			return c.fail(err)
		}
		return 0
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tDURATION\tSTATUS\tCOMMAND")
	for _, e := range execs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", esc(e.ID), ago(e.Started, now), execDuration(&e), esc(execStatus(&e)), esc(shellJoin(e.Argv)))
	}
	if err := tw.Flush(); err != nil {
		return c.fail(err)
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
	c := newSandboxCmd("output", "airlock sandbox output [flags] ID EXEC_ID",
		"Prints the stored (capped) output of one command; see 'airlock sandbox execs'.\n", stdout, stderr)
	errStream := c.fs.Bool("stderr", false, "print the command's stderr instead of its stdout")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.usageErr("want a sandbox ID and an exec ID")
	}
	stream := sdk.Stdout
	if *errStream {
		stream = sdk.Stderr
	}
	cl, err := c.client()
	if err != nil {
		return c.fail(err)
	}
	b, err := cl.ExecOutput(context.Background(), pos[0], pos[1], stream)
	if err != nil {
		return c.fail(err)
	}
	if _, err := stdout.Write(b); err != nil {
		return c.fail(err)
	}
	return 0
}

const sandboxExecAbout = `Runs CMD in a running sandbox, streaming its stdout and stderr as they come.
Flags may also follow ID when a "--" separates CMD.
` + execStatusAbout

const execStatusAbout = `
If the policy holds CMD for a human, this says so at once on stderr, with the
approval id and how to decide ('airlock approve ID', 'airlock deny ID
--reason TEXT'), and waits up to --approval-wait for the decision: approved,
CMD runs; denied, nothing runs.

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
	c := newSandboxCmd("exec", "airlock sandbox exec [flags] ID [--] CMD [ARGS...]", sandboxExecAbout, stdout, stderr)
	return runExec(c, args, nil)
}

// runExec is 'sandbox exec' and 'task exec': resolve, when not nil, turns
// the ID given into a sandbox id.
func runExec(c *sandboxCmd, args []string, resolve func(ctx context.Context, cl *sdk.Client, id string) (string, error)) int {
	var (
		req      sdk.ExecRequest
		env      listFlag
		useStdin bool
		wait     = 5 * time.Minute
	)
	c.fs.StringVar(&req.Cwd, "cwd", "", "working directory inside the sandbox (default /workspace)")
	c.fs.Var(&env, "env", "set `K=V` in CMD's environment (repeatable)")
	durationVar(c.fs, &req.Timeout, "timeout", 0, "kill CMD after this long: a `DURATION` such as 30s, 5m (default: no timeout)")
	c.fs.BoolVar(&useStdin, "stdin", false, "send this process's stdin to CMD (read to its end first; at most 16M)")
	c.fs.Var(sizeFlag{&req.OutputLimit}, "output-limit", "cap on each of stdout and stderr: a `SIZE` (default: the daemon's, 16M)")
	background := c.fs.Bool("background", false, "start CMD and return: print its exec id (see 'execs', 'output', 'kill')")
	durationVar(c.fs, &wait, "approval-wait", wait, "if the policy holds CMD for approval, wait this long for the decision: a `DURATION`, at most 1h (0: as --no-approval-wait)")
	noWait := c.fs.Bool("no-approval-wait", false, "if the policy holds CMD, fail at once (exit 126) and print the approval id")

	// Without "--", flags stop at ID and the rest is CMD, so that CMD's own
	// flags are left alone.
	head, tail, dashed := splitDash(args)
	if code, done := parseFlags(c.fs, c.usage, head, c.stdout); done {
		return code
	}
	var id string
	if dashed {
		pos, err := parseInterspersed(c.fs, c.fs.Args())
		if err != nil {
			return 2
		}
		if len(pos) != 1 {
			return c.usageErr("want one ID before --")
		}
		id, req.Argv = pos[0], tail
	} else {
		rest := c.fs.Args()
		if len(rest) == 0 {
			return c.usageErr("no ID given")
		}
		id, req.Argv = rest[0], rest[1:]
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return c.usageErr("no command given")
	}
	if err := checkEnv(env); err != nil {
		return c.usageErr("%v", err)
	}
	req.Env = env
	if req.Cwd != "" && !path.IsAbs(req.Cwd) {
		return c.usageErr("--cwd %q: must be an absolute path inside the sandbox", req.Cwd)
	}
	if req.Timeout < 0 {
		return c.usageErr("--timeout %s: must not be negative", req.Timeout)
	}
	if wait < 0 || wait > time.Hour {
		return c.usageErr("--approval-wait %s: 0 to 1h", wait)
	}
	// The CLI waits for a decision itself, so that it can say at once that
	// CMD is held, and by whom it can be decided.
	req.NoApprovalWait = true
	var stdinData []byte
	if useStdin {
		b, err := io.ReadAll(io.LimitReader(sandboxStdin, sdk.MaxStdin+1))
		if err != nil {
			c.errorf("reading stdin: %v", err)
			return 125
		}
		if len(b) > sdk.MaxStdin {
			c.errorf("stdin is larger than %d MiB", sdk.MaxStdin>>20)
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
			c.errorf("%v", in)
			return 128 + int(in.sig)
		}
		return 0
	}

	cl, err := c.client()
	if err != nil {
		c.errorf("%v", err)
		return 125
	}
	if resolve != nil {
		if id, err = resolve(ctx, cl, id); err != nil {
			c.errorf("%v", err)
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
				fmt.Fprintln(c.stdout, bs.ExecID)
				return 0
			}
		} else if st, err = cl.Exec(ctx, id, req, c.stdout, c.stderr); err == nil {
			reportLimits(ctx, cl, id, req.Timeout, st, c.stderr)
			return st.Code
		}
		if code := wasInterrupted(); code != 0 {
			return code
		}
		var e *sdk.Error
		if !sdk.IsApprovalPending(err) || !errors.As(err, &e) || e.ApprovalID == "" {
			return c.execFailed(ctx, cl, id, req.Argv, err)
		}
		if *noWait || wait == 0 {
			c.errorf("%v", err)
			c.errorf("an operator decides with 'airlock approve %s' or 'airlock deny %s --reason TEXT' (see 'airlock approvals'); then run it again", e.ApprovalID, e.ApprovalID)
			return 126
		}
		c.errorf("%v", err)
		c.errorf("waiting up to %s for an operator: 'airlock approve %s' lets it run, 'airlock deny %s --reason TEXT' refuses it (see 'airlock approvals')",
			humanDuration(time.Until(deadline)), e.ApprovalID, e.ApprovalID)
		a, err := waitDecision(ctx, cl, e.ApprovalID, deadline)
		if code := wasInterrupted(); code != 0 {
			return code
		}
		if err != nil {
			c.errorf("approval %s: %v", e.ApprovalID, err)
			return 125
		}
		switch a.State {
		case "approved":
			c.errorf("approval %s: approved by %s; running it", a.ID, a.DecidedBy)
			continue
		case "denied":
			c.errorf("approval %s: denied by %s: %s", a.ID, a.DecidedBy, a.Reason)
			return 126
		case "expired":
			c.errorf("approval %s expired undecided; nothing ran (run the command again to ask again)", a.ID)
			return exitApprovalWait
		}
		c.errorf("approval %s was not decided within %s; nothing ran. It stays pending until %s: run the command again once it is approved",
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
func (c *sandboxCmd) execFailed(ctx context.Context, cl *sdk.Client, id string, argv []string, err error) int {
	c.errorf("%v", err)
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
			fmt.Fprintf(stderr, "airlock: memory limit of %s exceeded; the command was killed (the sandbox's --memory)\n", fmtBytes(lim.MemoryBytes))
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
			fmt.Fprintf(stderr, "airlock: sandbox disk is full (limit %s for the writable layer, %s for /tmp; the sandbox's --disk and --tmp)\n", fmtBytes(lim.DiskBytes), fmtBytes(lim.TmpBytes))
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
