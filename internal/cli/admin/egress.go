package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/egress"
)

const egressUsage = `usage: airlock egress <status|cut|restore|show|set|ca|test> [flags]

A sandbox's network namespace has only loopback: its programs reach the
outside only through airlock's egress proxy (HTTP_PROXY, 127.0.0.1:3128
inside) and DNS filter (127.0.0.1:53 inside), which allow only what the
sandbox's egress policy allows (default: nothing) and record every
connection, request and query. See the egress section of
'airlock policy default'.

  status                 is the proxy running, is the kill switch on
  cut                    kill switch: refuse every sandbox's egress now, open
                         connections too (unix socket only)
  restore                turn the kill switch off
  show SANDBOX           the sandbox's effective egress policy (JSON)
  set SANDBOX FILE       replace the sandbox's runtime egress layer with FILE
                         (YAML or JSON: grant, presets, rules; '-': stdin);
                         an empty FILE clears it
  ca SANDBOX             print the CA certificate the proxy uses for the
                         sandbox's intercepted (brokered) hosts
  test [--json] SANDBOX DEST
                         what the sandbox's proxy would decide for DEST (a URL,
                         or host:port for a tunnel) and why: the rule, the
                         reason and the addresses, connecting to nothing;
                         exits 0 when allowed, 1 when refused
`

func CmdEgress(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, egressUsage)
		return 2
	}
	verb, rest := args[0], args[1:]
	c := cli.NewCmd(verb, "airlock egress "+verb+" [flags]", "", stdout, stderr)
	c.Group = "egress"
	c.Usage = egressUsage
	ctx := context.Background()
	switch verb {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, egressUsage)
		return 0
	case "status", "cut", "restore":
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
		st, err := cl.Egress(ctx)
		if verb != "status" && err == nil {
			st, err = cl.CutEgress(ctx, verb == "cut")
		}
		if err != nil {
			return c.Fail(err)
		}
		switch {
		case !st.Enabled:
			fmt.Fprintln(stdout, "egress: off (this daemon runs no proxy: sandboxes have no network at all)")
		case st.Cut:
			fmt.Fprintln(stdout, "egress: CUT (every sandbox's egress is refused; 'airlock egress restore' ends it)")
		default:
			fmt.Fprintln(stdout, "egress: on (each sandbox's egress policy decides)")
		}
		return 0
	case "show", "ca":
		pos, code, done := c.Parse(rest)
		if done {
			return code
		}
		if len(pos) != 1 {
			return c.UsageErr("want one sandbox id")
		}
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		if verb == "ca" {
			pem, err := cl.SandboxEgressCA(ctx, pos[0])
			if err != nil {
				return c.Fail(err)
			}
			_, _ = stdout.Write(pem)
			return 0
		}
		raw, err := cl.SandboxEgress(ctx, pos[0])
		if err != nil {
			return c.Fail(err)
		}
		var buf bytes.Buffer
		_ = json.Indent(&buf, raw, "", "  ")
		fmt.Fprintln(stdout, buf.String())
		return 0
	case "test":
		return egressTest(ctx, c, rest, stdout)
	case "set":
		pos, code, done := c.Parse(rest)
		if done {
			return code
		}
		if len(pos) != 2 {
			return c.UsageErr("want a sandbox id and a policy file")
		}
		var data []byte
		var err error
		if pos[1] == "-" {
			data, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		} else {
			data, err = os.ReadFile(pos[1])
		}
		if err != nil {
			return c.Fail(err)
		}
		layer, err := egress.Parse(data)
		if err != nil {
			return c.Fail(err)
		}
		j, _ := json.Marshal(layer)
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		raw, err := cl.SetSandboxEgress(ctx, pos[0], j)
		if err != nil {
			return c.Fail(err)
		}
		var buf bytes.Buffer
		_ = json.Indent(&buf, raw, "", "  ")
		fmt.Fprintln(stdout, buf.String())
		return 0
	}
	fmt.Fprintf(stderr, "airlock egress: unknown command %q; run 'airlock egress --help'\n", verb)
	return 2
}

// egressTest explains the proxy's decision for a destination.
func egressTest(ctx context.Context, c *cli.Cmd, args []string, stdout io.Writer) int {
	asJSON := c.FS.Bool("json", false, "print the answer as JSON")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.UsageErr("want a sandbox id and a destination (a URL, or host:port)")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	x, err := cl.EgressTest(ctx, pos[0], pos[1])
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, x)
	} else {
		fmt.Fprintf(stdout, "%s %s (%s): rule %s\n", x.Decision, cli.Esc(x.Target), x.Mode, cli.Esc(x.Rule))
		if x.Reason != "" {
			fmt.Fprintf(stdout, "reason:    %s\n", cli.Esc(x.Reason))
		}
		if len(x.Addrs) > 0 {
			fmt.Fprintf(stdout, "addresses: %s\n", strings.Join(x.Addrs, ", "))
		}
		if len(x.Brokered) > 0 {
			fmt.Fprintf(stdout, "brokered:  %s\n", cli.Esc(strings.Join(x.Brokered, ", ")))
		}
	}
	if x.Decision != "allow" {
		return 1
	}
	return 0
}
