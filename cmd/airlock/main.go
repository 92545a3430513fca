// Command airlock is a self-hosted sandbox for AI coding agents. This is
// its verb table and dispatch; the verbs live in internal/cli's packages,
// one per group, and the logic in the rest of internal/.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/cli/admin"
	"github.com/airlock-dev/airlock/internal/cli/approvals"
	"github.com/airlock-dev/airlock/internal/cli/completion"
	"github.com/airlock-dev/airlock/internal/cli/record"
	"github.com/airlock-dev/airlock/internal/cli/run"
	"github.com/airlock-dev/airlock/internal/cli/sandbox"
	"github.com/airlock-dev/airlock/internal/cli/serve"
	"github.com/airlock-dev/airlock/internal/cli/task"
	"github.com/airlock-dev/airlock/internal/cli/templatecmd"

	"github.com/airlock-dev/airlock/internal/runtime/gvisor"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// The verbs read the version from package cli (the daemon's, the MCP
// server's): init runs after the linker's value is in place.
func init() { cli.Version = version }

type verb struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func verbs() []verb {
	return []verb{
		{"run", "run one command in a fresh, one-shot sandbox (no daemon)", run.CmdRun},
		{"serve", "run the daemon: the API on a unix socket, persistent sandboxes", serve.CmdServe},
		{"sandbox", "manage long-lived sandboxes through the daemon (create, ls, get, exec, rm, ...)", sandbox.CmdSandbox},
		{"project", "the daemon's projects (tenants): create, ls, rm, usage, quota", admin.CmdProject},
		{"apikey", "API keys for TCP clients, per project and role: create, ls, rotate, rm", admin.CmdAPIKey},
		{"secret", "store secrets and grant them to a sandbox or task", admin.CmdSecret},
		{"egress", "sandboxes' network egress: status, kill switch, per-sandbox policy", admin.CmdEgress},
		{"pool", "the daemon's warm pools of ready sandboxes (serve --pool): ls", admin.CmdPool},
		{"cache", "the per-project dependency caches (serve --dep-cache): ls, clear", admin.CmdCache},
		{"policy", "explain the policy's decision on a command; print the default policy", approvals.CmdPolicy},
		{"approvals", "list commands the policy held for a human", approvals.CmdApprovals},
		{"approve", "let a held command run (a narrow, expiring grant)", approvals.CmdApprove},
		{"deny", "refuse a held command, with a reason the agent sees", approvals.CmdDeny},
		{"breakglass", "override one sandbox's policy for a bounded time (loudly recorded)", approvals.CmdBreakGlass},
		{"audit", "verify the tamper-evident audit chain; query its events", record.CmdAudit},
		{"bundle", "verify a review bundle (signature, checksums, paths, audit excerpt)", record.CmdBundle},
		{"purge", "remove task results, stored output and audit blobs older than a duration", record.CmdPurge},
		{"mcp", "serve airlock's tools to an MCP client over stdio", cmdMCP},
		{"template", "templates from container images and Debian: import, debian, ls, inspect, rm, gc", templatecmd.CmdTemplate},
		{"task", "the review workflow: a repository at a commit in a sandbox, tests, patch", task.CmdTask},
		{"reap", "remove sandboxes, cgroups and state left behind by killed airlock processes", run.CmdReap},
		{"completion", "print a shell completion script (bash)", cmdCompletion},
		{"version", "print the version", cmdVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: airlock <command> [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, v := range verbs() {
		fmt.Fprintf(w, "  %-10s %s\n", v.name, v.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'airlock <command> --help' for a command's flags.")
}

func main() {
	// A re-executed airlock binary may be a sandbox's PID 1.
	native.MaybeInit()
	gvisor.MaybeInit()
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage(stdout)
		return 0
	}
	for _, v := range verbs() {
		if v.name == args[0] {
			if !cli.RawVerbs[v.name] {
				stdout, stderr = termsafe.NewWriter(stdout), termsafe.NewWriter(stderr)
			}
			return v.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "airlock: unknown command %q; run 'airlock --help' for the list\n", args[0])
	return 2
}

func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	var names []string
	for _, v := range verbs() {
		names = append(names, v.name)
	}
	return completion.Cmd(names)(args, stdout, stderr)
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	const versionUsage = "usage: airlock version\n\nPrints airlock's version.\n"
	fs := cli.NewFlagSet("version", versionUsage, stderr)
	if code, done := cli.ParseFlags(fs, versionUsage, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "airlock version: unexpected argument %q; usage: airlock version\n", fs.Arg(0))
		return 2
	}
	fmt.Fprintln(stdout, "airlock", version)
	return 0
}
