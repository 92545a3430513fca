package admin

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/airlock-dev/airlock/internal/cli"
)

const poolUsage = `usage: airlock pool ls [--json]

The daemon's warm pools (airlock serve --pool TEMPLATE[@BACKEND]=MIN[:MAX]):
ready sandboxes of a template and backend that never ran a command. A
create of a pool's shape claims one, and the pool makes another in the
background; a claimed sandbox is destroyed when it stops, never reused.

  ls [--json]   list the pools: template, backend, min, max, target, ready,
                and the counts since the daemon started (created, claimed,
                misses: creates that found none ready, failed fills,
                discarded ready ones) and the last fill's error
`

func CmdPool(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, poolUsage)
		return 2
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, poolUsage)
		return 0
	case "ls":
	default:
		fmt.Fprintf(stderr, "airlock pool: unknown command %q; run 'airlock pool --help'\n", verb)
		return 2
	}
	c := cli.NewCmd(verb, "airlock pool ls [flags]", "", stdout, stderr)
	c.Group = "pool"
	c.Usage = poolUsage
	asJSON := c.FS.Bool("json", false, "print JSON")
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
	l, err := cl.Pools(context.Background())
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, l)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEMPLATE\tBACKEND\tMIN\tMAX\tTARGET\tREADY\tCREATED\tCLAIMED\tMISSES\tFAILED\tDISCARDED\tLAST ERROR")
	for _, p := range l {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", cli.Esc(p.Template), cli.Esc(p.Backend), p.Min, p.Max, p.Target,
			p.Ready, p.Created, p.Claimed, p.Misses, p.Failed, p.Discarded, cli.Esc(p.LastError))
	}
	_ = tw.Flush()
	return 0
}
