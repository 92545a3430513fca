package admin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/sdk"
)

const secretUsage = `usage: airlock secret <set|ls|rm|grant|grants|revoke> [flags]

Secrets are kept by the daemon, sealed with its key (DATA-DIR/secrets.key),
and given to one sandbox or task at a time, for named hosts, until the grant
expires. A secret is its project's: these manage the default project's on
the unix socket (ls and grants: every project's, with a PROJECT column); a
project's admin key manages its own over the API (docs/tenancy.md). No
command ever prints a value. Output that shows a secret's value is redacted
before it is stored.

  set NAME [--from-file F]   store a secret; the value is read from stdin
                             (a trailing newline is dropped) or from F, never
                             from the command line
  ls [--json]                list secrets (names and times)
  rm NAME                    delete a secret; its grants end with it
  grant NAME (--sandbox ID | --task ID) --host H [--host H]...
        [--mode env|broker] [--env VAR] [--header NAME]... [--for D]
                             let a sandbox use it: mode env (default) puts it
                             into every command's environment as VAR (default
                             NAME); mode broker gives the sandbox a placeholder
                             that the egress proxy swaps for the value in the
                             Authorization header (or each --header NAME;
                             never cookies, URL or body) of requests to the
                             hosts; --for: default 1h, at most 24h
  grants [--sandbox ID] [--json]   list grants
  revoke GRANT-ID...         end grants now (ids as 'grant' and 'grants' print
                             them: sg-...)
`

func CmdSecret(args []string, stdout, stderr io.Writer) int {
	return cmdSecretWith(args, os.Stdin, stdout, stderr)
}

func cmdSecretWith(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, secretUsage)
		return 2
	}
	verb, rest := args[0], args[1:]
	c := cli.NewCmd(verb, "airlock secret "+verb+" [flags]", "", stdout, stderr)
	c.Group = "secret"
	c.Usage = secretUsage
	ctx := context.Background()
	switch verb {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, secretUsage)
		return 0
	case "set":
		from := c.FS.String("from-file", "", "read the value from `FILE` instead of stdin")
		pos, code, done := c.Parse(rest)
		if done {
			return code
		}
		if len(pos) != 1 {
			return c.UsageErr("want one secret name (the value comes from stdin or --from-file, never the command line)")
		}
		var val []byte
		var err error
		if *from != "" {
			val, err = os.ReadFile(*from)
		} else {
			val, err = io.ReadAll(io.LimitReader(stdin, 1<<20))
		}
		if err != nil {
			return c.Fail(err)
		}
		val = bytes.TrimSuffix(val, []byte("\n"))
		val = bytes.TrimSuffix(val, []byte("\r"))
		if len(val) == 0 {
			return c.UsageErr("the value is empty: pipe it on stdin, or use --from-file")
		}
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		s, err := cl.SetSecret(ctx, pos[0], val)
		if err != nil {
			return c.Fail(err)
		}
		fmt.Fprintf(stdout, "stored secret %s (%d bytes)\n", s.Name, len(val))
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
		l, err := cl.Secrets(ctx)
		if err != nil {
			return c.Fail(err)
		}
		if *asJSON {
			_ = cli.PrintJSON(stdout, l)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROJECT\tNAME\tCREATED\tUPDATED")
		for _, s := range l {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cli.Esc(s.Project), cli.Esc(s.Name), s.Created.Format("2006-01-02 15:04:05"), s.Updated.Format("2006-01-02 15:04:05"))
		}
		_ = tw.Flush()
		return 0
	case "rm":
		pos, code, done := c.Parse(rest)
		if done {
			return code
		}
		if len(pos) == 0 {
			return c.UsageErr("want secret names")
		}
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		failed := 0
		for _, n := range pos {
			if err := cl.DeleteSecret(ctx, n); err != nil {
				c.Errorf("%s: %v", n, err)
				failed++
			}
		}
		if failed > 0 {
			return 1
		}
		return 0
	case "grant":
		var req sdk.SecretGrantRequest
		var hosts, headers cli.ListFlag
		c.FS.StringVar(&req.SandboxID, "sandbox", "", "the sandbox `ID` that may use it")
		c.FS.StringVar(&req.TaskID, "task", "", "the task `ID` whose sandbox may use it")
		c.FS.StringVar(&req.Mode, "mode", "env", "env or broker")
		c.FS.StringVar(&req.Env, "env", "", "the environment `VAR` it is given as (default: its name)")
		c.FS.Var(&hosts, "host", "a `HOST` it is for (repeatable; *.example.com for subdomains)")
		c.FS.Var(&headers, "header", "broker mode: a request header `NAME` the value goes in (repeatable; default Authorization)")
		cli.DurationVar(c.FS, &req.TTL, "for", time.Hour, "how long the grant lasts: a `DURATION`, at most 24h")
		pos, code, done := c.Parse(rest)
		if done {
			return code
		}
		if len(pos) != 1 {
			return c.UsageErr("want one secret name")
		}
		if (req.SandboxID == "") == (req.TaskID == "") {
			return c.UsageErr("give exactly one of --sandbox and --task")
		}
		if len(hosts) == 0 {
			return c.UsageErr("name the hosts it is for with --host")
		}
		if req.TTL <= 0 {
			return c.UsageErr("--for %s: must be positive", req.TTL)
		}
		req.Hosts, req.Headers = hosts, headers
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		g, err := cl.GrantSecret(ctx, pos[0], req)
		if err != nil {
			return c.Fail(err)
		}
		fmt.Fprintf(stdout, "granted %s to sandbox %s as $%s (%s) for %s until %s: %s\n", cli.Esc(g.Secret), cli.Esc(g.SandboxID), cli.Esc(g.Env), cli.Esc(g.Mode),
			termsafe.Join(g.Hosts, ","), g.Expires.Local().Format("15:04:05"), cli.Esc(g.ID))
		return 0
	case "grants":
		sandbox := c.FS.String("sandbox", "", "only this sandbox's grants")
		asJSON := c.FS.Bool("json", false, "print a JSON array")
		if _, code, done := c.Parse(rest); done {
			return code
		}
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		l, err := cl.SecretGrants(ctx, *sandbox)
		if err != nil {
			return c.Fail(err)
		}
		if *asJSON {
			_ = cli.PrintJSON(stdout, l)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPROJECT\tSECRET\tSANDBOX\tMODE\tENV\tHOSTS\tEXPIRES\tSTATE")
		for _, g := range l {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cli.Esc(g.ID), cli.Esc(g.Project), cli.Esc(g.Secret), cli.Esc(g.SandboxID), cli.Esc(g.Mode), cli.Esc(g.Env), termsafe.Join(g.Hosts, ","),
				g.Expires.Local().Format("2006-01-02 15:04:05"), cli.Esc(g.State))
		}
		_ = tw.Flush()
		return 0
	case "revoke":
		pos, code, done := c.Parse(rest)
		if done {
			return code
		}
		if len(pos) == 0 {
			return c.UsageErr("want grant ids")
		}
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		failed := 0
		for _, id := range pos {
			if err := cl.RevokeSecretGrant(ctx, id); err != nil {
				c.Errorf("%s: %v", id, err)
				failed++
			}
		}
		if failed > 0 {
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "airlock secret: unknown command %q; run 'airlock secret --help'\n", verb)
	return 2
}
