package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/sdk"
)

const secretUsage = `usage: airlock secret <set|ls|rm|grant|grants|revoke> [flags]

Secrets are kept by the daemon, sealed with its key (DATA-DIR/secrets.key),
and given to one sandbox or task at a time, for named hosts, until the grant
expires. Managed on the unix socket only; no command ever prints a value.
Output that shows a secret's value is redacted before it is stored.

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

func cmdSecret(args []string, stdout, stderr io.Writer) int {
	return cmdSecretWith(args, os.Stdin, stdout, stderr)
}

func cmdSecretWith(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, secretUsage)
		return 2
	}
	verb, rest := args[0], args[1:]
	c := newSandboxCmd(verb, "airlock secret "+verb+" [flags]", "", stdout, stderr)
	c.group = "secret"
	c.usage = secretUsage
	ctx := context.Background()
	switch verb {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, secretUsage)
		return 0
	case "set":
		from := c.fs.String("from-file", "", "read the value from `FILE` instead of stdin")
		pos, code, done := c.parse(rest)
		if done {
			return code
		}
		if len(pos) != 1 {
			return c.usageErr("want one secret name (the value comes from stdin or --from-file, never the command line)")
		}
		var val []byte
		var err error
		if *from != "" {
			val, err = os.ReadFile(*from)
		} else {
			val, err = io.ReadAll(io.LimitReader(stdin, 1<<20))
		}
		if err != nil {
			return c.fail(err)
		}
		val = bytes.TrimSuffix(val, []byte("\n"))
		val = bytes.TrimSuffix(val, []byte("\r"))
		if len(val) == 0 {
			return c.usageErr("the value is empty: pipe it on stdin, or use --from-file")
		}
		cl, err := c.client()
		if err != nil {
			return c.fail(err)
		}
		s, err := cl.SetSecret(ctx, pos[0], val)
		if err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(stdout, "stored secret %s (%d bytes)\n", s.Name, len(val))
		return 0
	case "ls":
		asJSON := c.fs.Bool("json", false, "print a JSON array")
		if _, code, done := c.parse(rest); done {
			return code
		}
		cl, err := c.client()
		if err != nil {
			return c.fail(err)
		}
		l, err := cl.Secrets(ctx)
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			_ = printJSON(stdout, l)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCREATED\tUPDATED")
		for _, s := range l {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", esc(s.Name), s.Created.Format("2006-01-02 15:04:05"), s.Updated.Format("2006-01-02 15:04:05"))
		}
		_ = tw.Flush()
		return 0
	case "rm":
		pos, code, done := c.parse(rest)
		if done {
			return code
		}
		if len(pos) == 0 {
			return c.usageErr("want secret names")
		}
		cl, err := c.client()
		if err != nil {
			return c.fail(err)
		}
		failed := 0
		for _, n := range pos {
			if err := cl.DeleteSecret(ctx, n); err != nil {
				c.errorf("%s: %v", n, err)
				failed++
			}
		}
		if failed > 0 {
			return 1
		}
		return 0
	case "grant":
		var req sdk.SecretGrantRequest
		var hosts, headers listFlag
		c.fs.StringVar(&req.SandboxID, "sandbox", "", "the sandbox `ID` that may use it")
		c.fs.StringVar(&req.TaskID, "task", "", "the task `ID` whose sandbox may use it")
		c.fs.StringVar(&req.Mode, "mode", "env", "env or broker")
		c.fs.StringVar(&req.Env, "env", "", "the environment `VAR` it is given as (default: its name)")
		c.fs.Var(&hosts, "host", "a `HOST` it is for (repeatable; *.example.com for subdomains)")
		c.fs.Var(&headers, "header", "broker mode: a request header `NAME` the value goes in (repeatable; default Authorization)")
		durationVar(c.fs, &req.TTL, "for", time.Hour, "how long the grant lasts: a `DURATION`, at most 24h")
		pos, code, done := c.parse(rest)
		if done {
			return code
		}
		if len(pos) != 1 {
			return c.usageErr("want one secret name")
		}
		if (req.SandboxID == "") == (req.TaskID == "") {
			return c.usageErr("give exactly one of --sandbox and --task")
		}
		if len(hosts) == 0 {
			return c.usageErr("name the hosts it is for with --host")
		}
		if req.TTL <= 0 {
			return c.usageErr("--for %s: must be positive", req.TTL)
		}
		req.Hosts, req.Headers = hosts, headers
		cl, err := c.client()
		if err != nil {
			return c.fail(err)
		}
		g, err := cl.GrantSecret(ctx, pos[0], req)
		if err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(stdout, "granted %s to sandbox %s as $%s (%s) for %s until %s: %s\n", esc(g.Secret), esc(g.SandboxID), esc(g.Env), esc(g.Mode),
			termsafe.Join(g.Hosts, ","), g.Expires.Local().Format("15:04:05"), esc(g.ID))
		return 0
	case "grants":
		sandbox := c.fs.String("sandbox", "", "only this sandbox's grants")
		asJSON := c.fs.Bool("json", false, "print a JSON array")
		if _, code, done := c.parse(rest); done {
			return code
		}
		cl, err := c.client()
		if err != nil {
			return c.fail(err)
		}
		l, err := cl.SecretGrants(ctx, *sandbox)
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			_ = printJSON(stdout, l)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSECRET\tSANDBOX\tMODE\tENV\tHOSTS\tEXPIRES\tSTATE")
		for _, g := range l {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", esc(g.ID), esc(g.Secret), esc(g.SandboxID), esc(g.Mode), esc(g.Env), termsafe.Join(g.Hosts, ","),
				g.Expires.Local().Format("2006-01-02 15:04:05"), esc(g.State))
		}
		_ = tw.Flush()
		return 0
	case "revoke":
		pos, code, done := c.parse(rest)
		if done {
			return code
		}
		if len(pos) == 0 {
			return c.usageErr("want grant ids")
		}
		cl, err := c.client()
		if err != nil {
			return c.fail(err)
		}
		failed := 0
		for _, id := range pos {
			if err := cl.RevokeSecretGrant(ctx, id); err != nil {
				c.errorf("%s: %v", id, err)
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
