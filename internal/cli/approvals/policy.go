// Package approvals is the human side of a held command in the CLI:
// approvals, approve, deny, breakglass; and the daemon's side of
// 'airlock policy check --sandbox' (package policycmd has the rest of the
// verb).
package approvals

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/cli/clibase"
	"github.com/airlock-dev/airlock/internal/cli/policycmd"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/sdk"
)

const approvalsUsage = `usage: airlock approvals [--sandbox ID] [--state pending|approved|denied|expired|all] [--json] [--url URL]

Lists the commands the policy held for a human (pending ones by default),
with what each would do. Decide with 'airlock approve' or 'airlock deny'.
On the unix socket: every project's; with --url: the key's project's.
` + cli.RemoteHelp

func CmdApprovals(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("approvals", "airlock approvals [flags]", "Lists approvals.\n", stdout, stderr)
	c.Group, c.Usage = "approvals", approvalsUsage+"\nflags:\n"
	c.Remote()
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
	c := cli.NewCmd("approve", "airlock approve ID [--for DURATION] [--scope command|class] [--reason TEXT] [--url URL]",
		"Lets a held command run. The grant is narrow: this exact command (or, with\n--scope class, commands held only by the same classes), in that sandbox only,\nuntil it expires (default 15m, at most 24h). Never a global grant.\nA key never decides a request it made itself.\n"+cli.RemoteHelp, stdout, stderr)
	c.Group = "approve"
	c.Remote()
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
	c := cli.NewCmd("deny", "airlock deny ID --reason TEXT [--url URL]", "Refuses a held command; the reason is shown to the agent.\nA key never decides a request it made itself.\n"+cli.RemoteHelp, stdout, stderr)
	c.Group = "deny"
	c.Remote()
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
	c := cli.NewCmd("breakglass", "airlock breakglass SANDBOX --reason TEXT [--for DURATION] [--url URL]",
		"Overrides one sandbox's policy: every command runs, denials included, for a\nbounded time (default 15m, at most 4h). Loud: logged by the daemon and marked\nin the record of every command it lets through, with who made it.\n"+cli.RemoteHelp, stdout, stderr)
	c.Group = "breakglass"
	c.Remote()
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

// RemoteCheck is 'policy check --sandbox ID': the daemon decides, with
// that sandbox's policy, grants and overrides.
func RemoteCheck(bc *clibase.Cmd, _ []string, sandbox string, argv []string, cwd string, asJSON bool) int {
	c := &cli.Cmd{Cmd: bc}
	cl, err := c.Client()
	if err != nil {
		return policycmd.CheckFailed(bc, err)
	}
	d, err := cl.CheckCommand(context.Background(), sandbox, argv, cwd)
	if err != nil {
		return policycmd.CheckFailed(bc, err)
	}
	if asJSON {
		_ = cli.PrintJSON(c.Stdout, d)
	} else {
		fmt.Fprintf(c.Stdout, "decision: %s\nreason:   %s\npolicy:   %s\n", termsafe.String(d.Action), termsafe.String(d.Reason), termsafe.String(d.Policy))
		for _, m := range d.Matches {
			fmt.Fprintf(c.Stdout, "  %-5s %-20s %s\n", termsafe.String(m.Action), termsafe.String(m.Rule), termsafe.String(m.Reason))
		}
	}
	return policycmd.ActionCode(d.Action)
}

// CmdPolicy is 'airlock policy' in the full binary.
func CmdPolicy(args []string, stdout, stderr io.Writer) int {
	return policycmd.CmdPolicy(args, stdout, stderr, RemoteCheck)
}
