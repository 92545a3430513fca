// Package admin is the CLI's operator verbs of the daemon's settings:
// 'airlock project', 'airlock apikey', 'airlock secret', 'airlock egress'
// and 'airlock cache'.
package admin

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/sdk"
)

const apikeyUsage = `usage: airlock apikey <command> [flags]

API keys let clients use the daemon over TCP ('airlock serve --listen ADDR'):
Authorization: Bearer KEY. A key acts for one project in one role (agent,
reviewer, admin; docs/tenancy.md) and sees only its project's sandboxes,
tasks, snapshots and keys. The daemon keeps only a key's SHA-256.

commands:
  create [--name N | N] [--project P] [--role R] [--e2b]
                      make a key named N and print it (shown this once): of
                      project P ("": default; an admin key's: its own) in
                      role R (agent, reviewer or admin; default agent);
                      --e2b shapes it for the E2B SDKs (E2B_API_KEY,
                      "e2b_..."), for 'airlock serve --e2b-listen'; it
                      works here too
  ls [--json]         list keys: project, role, expiry
  rotate ID [--overlap DUR] [--e2b]
                      make a new key of key ID's project, role and name and
                      print it (shown this once); the old key works DUR
                      more (default 0: it stops now; at most 720h), then
                      stops, its requests in progress too
  rm ID...            revoke keys: they stop at once, their open streams too

Each command works on the unix socket (the operator: every project), or with
--url URL and a project's admin key in $AIRLOCK_API_KEY (its own project's
keys, of a role no higher than admin).
`

func CmdAPIKey(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, apikeyUsage)
		return 2
	}
	verb, rest := args[0], args[1:]
	c := cli.NewCmd(verb, "airlock apikey "+verb+" [flags]", "", stdout, stderr)
	c.Group = "apikey"
	c.Usage = apikeyUsage
	switch verb {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, apikeyUsage)
		return 0
	case "create":
		return apikeyCreate(c, rest)
	case "ls":
		return apikeyList(c, rest)
	case "rotate":
		return apikeyRotate(c, rest)
	case "rm":
		return apikeyRemove(c, rest)
	}
	fmt.Fprintf(stderr, "airlock apikey: unknown command %q; run 'airlock apikey --help'\n", verb)
	return 2
}

func apikeyCreate(c *cli.Cmd, rest []string) int {
	name := c.FS.String("name", "", "a name to recognise the key by")
	project := c.FS.String("project", "", "the key's project (default: default)")
	role := c.FS.String("role", "", "the key's role: agent (default), reviewer or admin")
	e2bKey := c.FS.Bool("e2b", false, "shape the key for the E2B SDKs (e2b_ + 40 hex digits)")
	c.Remote()
	pos, code, done := c.Parse(rest)
	if done {
		return code
	}
	switch {
	case len(pos) == 1 && *name == "":
		*name = pos[0] // 'apikey create NAME'
	case len(pos) != 0:
		return c.UsageErr("unexpected argument %q (one name, or --name)", pos[0])
	}
	if *role != "" {
		if _, err := tenant.ParseKeyRole(*role); err != nil {
			return c.UsageErr("--role: %v", err)
		}
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	opts := []sdk.KeyOption{sdk.KeyProject(*project), sdk.KeyRole(*role)}
	if *e2bKey {
		opts = append(opts, sdk.KeyE2B())
	}
	k, err := cl.CreateAPIKey(context.Background(), *name, opts...)
	if err != nil {
		return c.Fail(err)
	}
	fmt.Fprintf(c.Stderr, "created key %s (project %s, role %s); it is shown once:\n", k.ID, cli.Esc(k.Project), cli.Esc(k.Role))
	fmt.Fprintln(c.Stdout, k.Key)
	return 0
}

func apikeyList(c *cli.Cmd, rest []string) int {
	asJSON := c.FS.Bool("json", false, "print a JSON array")
	c.Remote()
	if _, code, done := c.Parse(rest); done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	keys, err := cl.ListAPIKeys(context.Background())
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(c.Stdout, keys)
		return 0
	}
	tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPROJECT\tROLE\tCREATED\tEXPIRES")
	for _, k := range keys {
		expires := "-"
		if k.Expires != nil {
			expires = k.Expires.Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cli.Esc(k.ID), cli.Esc(k.Name), cli.Esc(k.Project), cli.Esc(k.Role), k.Created.Format("2006-01-02 15:04:05"), expires)
	}
	_ = tw.Flush()
	return 0
}

// maxOverlap is the daemon's bound on a rotation's overlap.
const maxOverlap = 30 * 24 * time.Hour

func apikeyRotate(c *cli.Cmd, rest []string) int {
	overlap := c.FS.Duration("overlap", 0, "how long the old key works on (at most 720h)")
	e2bKey := c.FS.Bool("e2b", false, "shape the new key for the E2B SDKs")
	c.Remote()
	pos, code, done := c.Parse(rest)
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.UsageErr("want one key id")
	}
	if *overlap < 0 || *overlap > maxOverlap {
		return c.UsageErr("--overlap %s: from 0 to 720h", *overlap)
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	var opts []sdk.KeyOption
	if *e2bKey {
		opts = append(opts, sdk.KeyE2B())
	}
	k, err := cl.RotateAPIKey(context.Background(), pos[0], *overlap, opts...)
	if err != nil {
		return c.Fail(err)
	}
	ends := "now"
	if *overlap > 0 {
		ends = "in " + overlap.String()
	}
	fmt.Fprintf(c.Stderr, "rotated key %s: the new key %s is shown once; the old one stops %s:\n", cli.Esc(pos[0]), k.ID, ends)
	fmt.Fprintln(c.Stdout, k.Key)
	return 0
}

func apikeyRemove(c *cli.Cmd, rest []string) int {
	c.Remote()
	pos, code, done := c.Parse(rest)
	if done {
		return code
	}
	if len(pos) == 0 {
		return c.UsageErr("want key ids")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	failed := 0
	for _, id := range pos {
		if err := cl.DeleteAPIKey(context.Background(), id); err != nil {
			c.Errorf("%s: %v", id, err)
			failed++
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}
