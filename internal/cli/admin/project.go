package admin

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/airlock-dev/airlock/internal/cli"
)

const projectUsage = `usage: airlock project <command> [flags]

Projects are the daemon's tenants: every sandbox, task, snapshot and API key
belongs to one, and a key sees only its own project's (docs/tenancy.md).
Projects are made and removed on the unix socket (the operator).

commands:
  create NAME         make a project: a lower-case letter, then at most 39
                      lower-case letters, digits or '-'
  ls [--json]         list the projects (removed ones too); with --url URL
                      and a key in $AIRLOCK_API_KEY: the key's own
  rm NAME             remove a project: its keys are revoked at once, its
                      records kept, its name never reused; refused while it
                      has sandboxes not stopped, and for "default"

  usage [--json] NAME the project's quotas in force and what it holds now;
                      with --url: a key's own project's
  quota NAME [--sandboxes N] [--memory SIZE] [--cpus N] [--disk SIZE]
        [--execs N] [--output SIZE] [--egress SIZE]
                      set the project's quotas; each value: a number (a
                      SIZE such as 8G), none (no bound) or default (the
                      daemon's); a quota not named stays as it is. The
                      operator sets any; with --url, a project's admin key
                      may only lower its own project's
  policy NAME [--file FILE | --clear]
                      show the project's own policy layer, or set it from
                      FILE (YAML or JSON: a policy file's top level, no
                      templates, projects or fetch) or clear it. It may
                      only tighten the daemon's policy file for the
                      project, and new sandboxes get it after the file's
                      section for the project (never looser than their
                      template's section). The operator, or with --url a
                      project's admin key for its own project
  settings NAME [--default-template NAME] [--max-lifetime DURATION] [--json]
                      show the project's settings, or set those named
                      (default: the daemon's): the template of a create
                      that names none, and a bound on its sandboxes'
                      lives (at most the daemon's maximum lifetime). The
                      operator, or with --url a project's admin key

A project's quotas are the daemon's defaults (airlock serve --project-quota)
with what the project sets over them. Live sandboxes (running or paused)
count, and their memory, CPU and disk limits add up (a limit left to the
backend counts its default, no CPU limit every core of the host); commands
count for 60 seconds, their output while the store keeps it, and the bytes
their egress moves for 24 hours. A create
or command past a quota is refused (429, quota_exceeded, naming the quota
and the usage).

Keys of a project: airlock apikey create --project NAME --role ROLE.
`

// CmdProject is 'airlock project'. Each command is a case of the switch
// on the verb.
func CmdProject(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, projectUsage)
		return 2
	}
	verb, rest := args[0], args[1:]
	c := cli.NewCmd(verb, "airlock project "+verb+" [flags]", "", stdout, stderr)
	c.Group = "project"
	c.Usage = projectUsage
	switch verb {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, projectUsage)
		return 0
	case "create":
		return projectCreate(c, rest)
	case "ls":
		return projectList(c, rest)
	case "rm":
		return projectRemove(c, rest)
	case "usage":
		return projectShowUsage(c, rest)
	case "quota":
		return projectQuota(c, rest)
	case "policy":
		return projectPolicy(c, rest)
	case "settings":
		return projectSettings(c, rest)
	}
	fmt.Fprintf(stderr, "airlock project: unknown command %q; run 'airlock project --help'\n", verb)
	return 2
}

// oneName parses a command that takes one project name.
func oneName(c *cli.Cmd, rest []string) (string, int, bool) {
	pos, code, done := c.Parse(rest)
	if done {
		return "", code, true
	}
	if len(pos) != 1 {
		return "", c.UsageErr("want one project name"), true
	}
	return pos[0], 0, false
}

func projectCreate(c *cli.Cmd, rest []string) int {
	name, code, done := oneName(c, rest)
	if done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	p, err := cl.CreateProject(context.Background(), name)
	if err != nil {
		return c.Fail(err)
	}
	fmt.Fprintln(c.Stdout, cli.Esc(p.ID))
	return 0
}

func projectList(c *cli.Cmd, rest []string) int {
	asJSON := c.FS.Bool("json", false, "print a JSON array")
	c.Remote()
	pos, code, done := c.Parse(rest)
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
	ps, err := cl.ListProjects(context.Background())
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(c.Stdout, ps)
		return 0
	}
	tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECT\tCREATED\tREMOVED")
	for _, p := range ps {
		removed := "-"
		if p.Removed != nil {
			removed = p.Removed.Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cli.Esc(p.ID), p.Created.Format("2006-01-02 15:04:05"), removed)
	}
	_ = tw.Flush()
	return 0
}

func projectRemove(c *cli.Cmd, rest []string) int {
	name, code, done := oneName(c, rest)
	if done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	if err := cl.DeleteProject(context.Background(), name); err != nil {
		return c.Fail(err)
	}
	fmt.Fprintf(c.Stderr, "removed project %s: its keys are revoked\n", cli.Esc(name))
	return 0
}
