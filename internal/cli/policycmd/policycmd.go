// Package policycmd is the verb 'airlock policy' (check, default). It
// links the classifier and the policy but not the daemon's client, so the
// front binary (cmd/airlock-front) answers a check itself; a check with
// --sandbox asks the daemon through the Remote the caller passes.
package policycmd

import (
	"fmt"
	"io"
	"os"

	"github.com/airlock-dev/airlock/internal/classify"
	"github.com/airlock-dev/airlock/internal/cli/clibase"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/termsafe"
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

// Remote answers the checks this binary does not: 'policy check --sandbox
// ID' (the daemon's decision with that sandbox's policy, grants and
// overrides) and, in a binary that reads no policy files (the front,
// policy.FilesSupported false), 'policy check --policy FILE', with sandbox
// "". c is the parsed command (its --socket, output and errors), args the
// verb's arguments as given. Its result is the verb's exit status.
type Remote func(c *clibase.Cmd, args []string, sandbox string, argv []string, cwd string, asJSON bool) int

// CmdPolicy runs 'airlock policy'; remote answers checks with --sandbox.
func CmdPolicy(args []string, stdout, stderr io.Writer, remote Remote) int {
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
		fs := clibase.NewFlagSet("policy default", defaultUsage, stderr)
		if code, done := clibase.ParseFlags(fs, defaultUsage, args[1:], stdout); done {
			return code
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "airlock policy default: unexpected argument %q; usage: airlock policy default\n", fs.Arg(0))
			return 2
		}
		fmt.Fprint(stdout, policy.DefaultFile())
		return 0
	case "check":
		return policyCheck(args[1:], stdout, stderr, remote)
	}
	fmt.Fprintf(stderr, "airlock policy: unknown verb %q\n%s", args[0], policyUsage)
	return 2
}

func policyCheck(args []string, stdout, stderr io.Writer, remote Remote) int {
	c := clibase.NewCmd("check", "airlock policy check [flags] -- CMD [ARGS]", "Explains the policy's decision on a command line without running it.\nExit status: 0 allow, 1 ask, 3 deny; 4 if the check itself failed (an\nunreadable or invalid policy file, no daemon, no such sandbox); 2 for bad\nusage.\n", stdout, stderr)
	c.Group = "policy"
	file := c.FS.String("policy", "", "policy `FILE` (default: the built-in policy)")
	tpl := c.FS.String("template", "host", "the template whose section of the policy file applies")
	cwd := c.FS.String("cwd", classify.DefaultCwd, "the directory the command runs in")
	sandbox := c.FS.String("sandbox", "", "ask the daemon, with this sandbox's policy, grants and overrides")
	asJSON := c.FS.Bool("json", false, "print the whole decision as JSON")
	var scope clibase.ListFlag
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
		return remote(c, args, *sandbox, argv, *cwd, *asJSON)
	}
	if *file != "" && !policy.FilesSupported {
		return remote(c, args, "", argv, *cwd, *asJSON)
	}
	var f *policy.File
	if *file != "" {
		data, err := os.ReadFile(*file)
		if err != nil {
			return CheckFailed(c, err)
		}
		if f, err = policy.Parse(data); err != nil {
			return CheckFailed(c, err)
		}
	}
	pol := f.ForTemplate(*tpl)
	if len(scope) > 0 {
		var err error
		if pol, err = pol.With(policy.Layer{Scope: scope}, "command line"); err != nil {
			return CheckFailed(c, err)
		}
	}
	d := pol.Decide(classify.AnalyzeArgv(argv, *cwd))
	if *asJSON {
		_ = clibase.PrintJSON(stdout, d)
		return ActionCode(string(d.Action))
	}
	// Actions as strings: fmt formats a named string type by reflection,
	// which a check (a process of its own) would pay for at first use.
	fmt.Fprintf(stdout, "decision: %s\nreason:   %s\nclasses:  %s\npolicy:   %s (%s)\n", string(d.Action), termsafe.String(d.Reason), joinClasses(d.Analysis.Classes), termsafe.String(d.Policy), termsafe.Join(pol.Sources, " > "))
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
		fmt.Fprintf(stdout, "  %-5s %-20s %s\n", string(m.Action), termsafe.String(m.Rule), termsafe.String(m.Reason))
	}
	return ActionCode(string(d.Action))
}

// ExitCheckFailed is policy check's status when no decision was made: 1
// means "ask".
const ExitCheckFailed = 4

// CheckFailed reports err: the check made no decision.
func CheckFailed(c *clibase.Cmd, err error) int {
	c.Errorf("%v", err)
	return ExitCheckFailed
}

func joinClasses(cs []classify.Class) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c))
	}
	return termsafe.Join(s, ",")
}

// ActionCode is the exit status for a decision's action.
func ActionCode(a string) int {
	switch a {
	case "allow":
		return 0
	case "ask":
		return 1
	}
	return 3
}
