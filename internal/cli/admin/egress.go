package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/egress"
)

const egressUsage = `usage: airlock egress <status|cut|restore|show|set|ca> [flags]

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
