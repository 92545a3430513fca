package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/mcp"
)

func cmdMCP(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("mcp", "airlock mcp [--socket PATH] [--exec-timeout DURATION]",
		"Serves airlock's tools to an MCP client over stdio (newline-delimited JSON-RPC):\nsandboxes, tasks, commands, approvals, files, search, diff, tests and the\nreview bundle (docs/mcp.md). Every call goes through the daemon, its policy,\napprovals and audit log. The daemon also serves MCP over streamable HTTP at\n/mcp.\n", stdout, stderr)
	c.Group = "mcp"
	timeout := cli.Duration(c.FS, "exec-timeout", mcp.DefaultExecTimeout, "timeout of a command that names none (a `DURATION`)")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	s := &mcp.Server{Client: cl, Version: cli.Version, ExecTimeout: *timeout}
	if err := s.ServeStdio(context.Background(), os.Stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "airlock mcp: %v\n", err)
		return 1
	}
	return 0
}
