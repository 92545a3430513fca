package admin

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/sdk"
)

const cacheUsage = `usage: airlock cache <ls|clear> [flags]

The per-project dependency caches of a daemon started with --dep-cache: Go
module zips and go.mod files, npm tarballs. A task gets a copy of its
project's; the daemon adds to them as a task is finished, only files that
the base commit's go.sum or package-lock.json pins and only of a registry
the task reached through the egress proxy. Unix socket only.

  ls [--json]         list the caches: project, ecosystem, files, bytes
  clear [--project P] [--ecosystem go|npm|pip]
                      remove caches (none named: all of them); recorded
                      as cache.clear
`

func CmdCache(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, cacheUsage)
		return 2
	}
	verb, rest := args[0], args[1:]
	c := cli.NewCmd(verb, "airlock cache "+verb+" [flags]", "", stdout, stderr)
	c.Group = "cache"
	c.Usage = cacheUsage
	var list func(cl *sdk.Client) ([]sdk.CacheEntry, error)
	asJSON := c.FS.Bool("json", false, "print JSON")
	switch verb {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, cacheUsage)
		return 0
	case "ls":
		list = func(cl *sdk.Client) ([]sdk.CacheEntry, error) { return cl.Caches(context.Background()) }
	case "clear":
		project := c.FS.String("project", "", "the project whose caches go, as 'airlock cache ls' names it")
		eco := c.FS.String("ecosystem", "", "go, npm or pip")
		list = func(cl *sdk.Client) ([]sdk.CacheEntry, error) {
			p := *project
			if st, err := os.Stat(p); err == nil && st.IsDir() && !strings.Contains(p, "://") {
				p, _ = filepath.Abs(p) // a local repository, as its tasks name it
			}
			return cl.ClearCaches(context.Background(), p, *eco)
		}
	default:
		fmt.Fprintf(stderr, "airlock cache: unknown command %q; run 'airlock cache --help'\n", verb)
		return 2
	}
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
	l, err := list(cl)
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, l)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECT\tECOSYSTEM\tFILES\tBYTES")
	for _, e := range l {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", cli.Esc(e.Project), cli.Esc(e.Ecosystem), e.Files, e.Bytes)
	}
	_ = tw.Flush()
	return 0
}
