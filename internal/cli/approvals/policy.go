// Package approvals is the CLI's policy verbs: 'airlock policy' (check,
// default), and the human side of a held command: approvals, approve,
// deny, breakglass.
package approvals

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/classify"
	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/sdk"
)

const policyUsage = `usage: airlock policy <check|default> [flags]

  check [--policy FILE] [--template T] [--scope GLOB]... [--cwd DIR] [--json] -- CMD [ARGS]
        explain the decision on a command line without running it: its
        classes, the rules that matched and why. A single argument is read as
        a shell line: policy check -- 'npm i && npm t'. With --sandbox ID, ask
        the daemon with that sandbox's policy instead.
        Exit status: 0 allow, 1 ask, 3 deny; 4 if the check itself failed
        (an unreadable or invalid policy file, no daemon, no such sandbox);
        2 for bad usage.
  default
        print the built-in policy as a policy file to start from
`

func CmdPolicy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, policyUsage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, policyUsage)
		return 0
	case "default":
		const defaultUsage = "usage: airlock policy default\n\nPrints the built-in policy as a policy file to start from.\n"
		fs := cli.NewFlagSet("policy default", defaultUsage, stderr)
		if code, done := cli.ParseFlags(fs, defaultUsage, args[1:], stdout); done {
			return code
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "airlock policy default: unexpected argument %q; usage: airlock policy default\n", fs.Arg(0))
			return 2
		}
		fmt.Fprint(stdout, policy.DefaultFile())
		return 0
	case "check":
		return policyCheck(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "airlock policy: unknown verb %q\n%s", args[0], policyUsage)
	return 2
}

func policyCheck(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("check", "airlock policy check [flags] -- CMD [ARGS]", "Explains the policy's decision on a command line without running it.\nExit status: 0 allow, 1 ask, 3 deny; 4 if the check itself failed (an\nunreadable or invalid policy file, no daemon, no such sandbox); 2 for bad\nusage.\n", stdout, stderr)
	c.Group = "policy"
	file := c.FS.String("policy", "", "policy `FILE` (default: the built-in policy)")
	tpl := c.FS.String("template", "host", "the template whose section of the policy file applies")
	cwd := c.FS.String("cwd", classify.DefaultCwd, "the directory the command runs in")
	sandbox := c.FS.String("sandbox", "", "ask the daemon, with this sandbox's policy, grants and overrides")
	asJSON := c.FS.Bool("json", false, "print the whole decision as JSON")
	var scope cli.ListFlag
	c.FS.Var(&scope, "scope", "a write-scope `GLOB` (repeatable)")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) == 0 {
		return c.UsageErr("no command given")
	}
	argv := pos
	if len(pos) == 1 {
		argv = []string{"/bin/sh", "-c", pos[0]}
	}
	if *sandbox != "" {
		cl, err := c.Client()
		if err != nil {
			return checkFailed(c, err)
		}
		d, err := cl.CheckCommand(context.Background(), *sandbox, argv, *cwd)
		if err != nil {
			return checkFailed(c, err)
		}
		if *asJSON {
			_ = cli.PrintJSON(stdout, d)
		} else {
			fmt.Fprintf(stdout, "decision: %s\nreason:   %s\npolicy:   %s\n", termsafe.String(d.Action), termsafe.String(d.Reason), termsafe.String(d.Policy))
			for _, m := range d.Matches {
				fmt.Fprintf(stdout, "  %-5s %-20s %s\n", termsafe.String(m.Action), termsafe.String(m.Rule), termsafe.String(m.Reason))
			}
		}
		return actionCode(d.Action)
	}
	var f *policy.File
	if *file != "" {
		data, err := os.ReadFile(*file)
		if err != nil {
			return checkFailed(c, err)
		}
		if f, err = policy.Parse(data); err != nil {
			return checkFailed(c, err)
		}
	}
	pol := f.ForTemplate(*tpl)
	if len(scope) > 0 {
		var err error
		if pol, err = pol.With(policy.Layer{Scope: scope}, "command line"); err != nil {
			return checkFailed(c, err)
		}
	}
	d := pol.Decide(classify.AnalyzeArgv(argv, *cwd))
	if *asJSON {
		_ = cli.PrintJSON(stdout, d)
		return actionCode(string(d.Action))
	}
	fmt.Fprintf(stdout, "decision: %s\nreason:   %s\nclasses:  %s\npolicy:   %s (%s)\n", d.Action, termsafe.String(d.Reason), joinClasses(d.Analysis.Classes), termsafe.String(d.Policy), termsafe.Join(pol.Sources, " > "))
	fmt.Fprintln(stdout, "commands:")
	for i, cmd := range d.Analysis.Commands {
		via := ""
		if len(cmd.Via) > 0 {
			via = " (via " + termsafe.Join(cmd.Via, ", ") + ")"
		}
		fmt.Fprintf(stdout, "  %d. %s%s\n     %s: %s\n", i+1, termsafe.String(classify.JoinArgv(cmd.Argv)), via, joinClasses(cmd.Classes), termsafe.String(cmd.Why))
		for _, w := range cmd.Writes {
			fmt.Fprintf(stdout, "     writes %s\n", termsafe.String(w))
		}
		for _, h := range cmd.Hosts {
			fmt.Fprintf(stdout, "     network %s\n", termsafe.String(h))
		}
		for _, s := range cmd.Secrets {
			fmt.Fprintf(stdout, "     credential %s\n", termsafe.String(s))
		}
	}
	fmt.Fprintln(stdout, "rules:")
	for _, m := range d.Matches {
		fmt.Fprintf(stdout, "  %-5s %-20s %s\n", m.Action, termsafe.String(m.Rule), termsafe.String(m.Reason))
	}
	return actionCode(string(d.Action))
}

// exitCheckFailed is policy check's status when no decision was made: 1
// means "ask".
const exitCheckFailed = 4

func checkFailed(c *cli.Cmd, err error) int {
	c.Errorf("%v", err)
	return exitCheckFailed
}

func joinClasses(cs []classify.Class) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c))
	}
	return termsafe.Join(s, ",")
}

func actionCode(a string) int {
	switch a {
	case "allow":
		return 0
	case "ask":
		return 1
	}
	return 3
}

const approvalsUsage = `usage: airlock approvals [--sandbox ID] [--state pending|approved|denied|expired|all] [--json]

Lists the commands the policy held for a human (pending ones by default),
with what each would do. Decide with 'airlock approve' or 'airlock deny'.
`

func CmdApprovals(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("approvals", "airlock approvals [flags]", "Lists approvals.\n", stdout, stderr)
	c.Group, c.Usage = "approvals", approvalsUsage
	sandbox := c.FS.String("sandbox", "", "only this sandbox's")
	state := c.FS.String("state", "pending", "pending, approved, denied, expired or all")
	asJSON := c.FS.Bool("json", false, "print a JSON array")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	if *state == "all" {
		*state = ""
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	list, err := cl.Approvals(context.Background(), *sandbox, *state)
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, list)
		return 0
	}
	for _, a := range list {
		cli.PrintApproval(stdout, &a)
	}
	if len(list) == 0 {
		fmt.Fprintln(stderr, "no approvals")
	}
	return 0
}

func CmdApprove(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("approve", "airlock approve ID [--for DURATION] [--scope command|class] [--reason TEXT]",
		"Lets a held command run. The grant is narrow: this exact command (or, with\n--scope class, commands held only by the same classes), in that sandbox only,\nuntil it expires (default 15m, at most 24h). Never a global grant.\n", stdout, stderr)
	c.Group = "approve"
	var o sdk.ApproveOptions
	cli.DurationVar(c.FS, &o.For, "for", 0, "how long the grant lasts: a `DURATION`, at most 24h (default 15m)")
	c.FS.StringVar(&o.Scope, "scope", "command", "command or class")
	c.FS.StringVar(&o.Reason, "reason", "", "a note kept with the approval")
	asJSON := c.FS.Bool("json", false, "print the approval as JSON")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.UsageErr("give one approval id")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	a, err := cl.Approve(context.Background(), pos[0], o)
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, a)
		return 0
	}
	fmt.Fprintf(stdout, "approved %s (grant %s) by %s\n", termsafe.String(a.ID), termsafe.String(a.GrantID), termsafe.String(a.DecidedBy))
	return 0
}

func CmdDeny(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("deny", "airlock deny ID --reason TEXT", "Refuses a held command; the reason is shown to the agent.\n", stdout, stderr)
	c.Group = "deny"
	reason := c.FS.String("reason", "", "why (required; the agent sees it)")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.UsageErr("give one approval id")
	}
	if strings.TrimSpace(*reason) == "" {
		return c.UsageErr("--reason is required")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	a, err := cl.Deny(context.Background(), pos[0], *reason)
	if err != nil {
		return c.Fail(err)
	}
	fmt.Fprintf(stdout, "denied %s by %s\n", termsafe.String(a.ID), termsafe.String(a.DecidedBy))
	return 0
}

func CmdBreakGlass(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("breakglass", "airlock breakglass SANDBOX --reason TEXT [--for DURATION]",
		"Overrides one sandbox's policy: every command runs, denials included, for a\nbounded time (default 15m, at most 4h). Loud: logged by the daemon and marked\nin the record of every command it lets through.\n", stdout, stderr)
	c.Group = "breakglass"
	reason := c.FS.String("reason", "", "why (required; recorded)")
	d := cli.Duration(c.FS, "for", 0, "how long: a `DURATION`, at most 4h (default 15m)")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.UsageErr("give one sandbox id")
	}
	if strings.TrimSpace(*reason) == "" {
		return c.UsageErr("--reason is required")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	b, err := cl.BreakGlassSandbox(context.Background(), pos[0], *reason, *d)
	if err != nil {
		return c.Fail(err)
	}
	fmt.Fprintf(stderr, "BREAK-GLASS %s: the policy of sandbox %s is overridden until %s; every command is recorded as such\n", b.ID, b.SandboxID, b.Expires.Format(time.RFC3339))
	return 0
}
