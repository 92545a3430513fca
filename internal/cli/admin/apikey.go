// Package admin is the CLI's operator verbs of the daemon's settings:
// 'airlock apikey', 'airlock project' (usage, quota), 'airlock secret',
// 'airlock egress' and 'airlock cache'.
package admin

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/airlock-dev/airlock/internal/cli"
)

const apikeyUsage = `usage: airlock apikey <create|ls|rm> [flags]

API keys let clients use the daemon over TCP ('airlock serve --listen ADDR'):
Authorization: Bearer KEY. Keys are managed on the unix socket only; the
daemon keeps only their SHA-256.

  create [--name N] [--e2b]
                      make a key and print it (shown this once); --e2b
                      shapes it for the E2B SDKs (E2B_API_KEY, "e2b_..."),
                      for 'airlock serve --e2b-listen'; it works here too
  ls [--json]         list keys
  rm ID...            revoke keys
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
		name := c.FS.String("name", "", "a name to recognise the key by")
		e2bKey := c.FS.Bool("e2b", false, "shape the key for the E2B SDKs (e2b_ + 40 hex digits)")
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
		create := cl.CreateAPIKey
		if *e2bKey {
			create = cl.CreateE2BAPIKey
		}
		k, err := create(context.Background(), *name)
		if err != nil {
			return c.Fail(err)
		}
		fmt.Fprintf(stderr, "created key %s; it is shown once:\n", k.ID)
		fmt.Fprintln(stdout, k.Key)
		return 0
	case "ls":
		asJSON := c.FS.Bool("json", false, "print a JSON array")
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
			_ = cli.PrintJSON(stdout, keys)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tCREATED")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", cli.Esc(k.ID), cli.Esc(k.Name), k.Created.Format("2006-01-02 15:04:05"))
		}
		_ = tw.Flush()
		return 0
	case "rm":
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
	fmt.Fprintf(stderr, "airlock apikey: unknown command %q; run 'airlock apikey --help'\n", verb)
	return 2
}
