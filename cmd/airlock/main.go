// Command airlock is a self-hosted sandbox for AI coding agents. Each verb
// lives in its own file; logic lives in internal/.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/airlock-dev/airlock/internal/runtime/gvisor"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type verb struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func verbs() []verb {
	return []verb{
		{"run", "run one command in a fresh, one-shot sandbox (no daemon)", cmdRun},
		{"serve", "run the daemon: the API on a unix socket, persistent sandboxes", cmdServe},
		{"sandbox", "manage long-lived sandboxes through the daemon (create, ls, get, exec, rm, ...)", cmdSandbox},
		{"apikey", "manage API keys for TCP clients of the daemon", cmdAPIKey},
		{"secret", "store secrets and grant them to a sandbox or task", cmdSecret},
		{"egress", "sandboxes' network egress: status, kill switch, per-sandbox policy", cmdEgress},
		{"policy", "explain the policy's decision on a command; print the default policy", cmdPolicy},
		{"approvals", "list commands the policy held for a human", cmdApprovals},
		{"approve", "let a held command run (a narrow, expiring grant)", cmdApprove},
		{"deny", "refuse a held command, with a reason the agent sees", cmdDeny},
		{"breakglass", "override one sandbox's policy for a bounded time (loudly recorded)", cmdBreakGlass},
		{"audit", "verify the tamper-evident audit chain; query its events", cmdAudit},
		{"bundle", "verify a review bundle (signature, checksums, paths, audit excerpt)", cmdBundle},
		{"purge", "remove task results, stored output and audit blobs older than a duration", cmdPurge},
		{"mcp", "serve airlock's tools to an MCP client over stdio", cmdMCP},
		{"task", "the review workflow: a repository at a commit in a sandbox, tests, patch", cmdTask},
		{"reap", "remove sandboxes, cgroups and state left behind by killed airlock processes", cmdReap},
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
			if !rawVerbs[v.name] {
				stdout, stderr = termsafe.NewWriter(stdout), termsafe.NewWriter(stderr)
			}
			return v.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "airlock: unknown command %q; run 'airlock --help' for the list\n", args[0])
	return 2
}

// rawVerbs pass their output through as it is: a command's own output
// (run, exec), a file's bytes (cat, download, output), a patch or a
// bundle, a protocol (mcp), the daemon's log (slog quotes what it logs).
// Every other verb's output goes through termsafe, so that no string from
// a request, an analysis or a sandbox reaches the terminal with its
// control characters (issue 16.4); printers escape fields with
// termsafe.String as well, for newlines and tabs. The groups (sandbox,
// task) decide per verb, in dispatchGroup.
var rawVerbs = map[string]bool{
	"run": true, "serve": true, "mcp": true, "sandbox": true, "task": true,
	"sandbox exec": true, "sandbox output": true, "sandbox cat": true, "sandbox download": true,
	"task exec": true, "task test": true, "task diff": true, "task export": true,
}

// esc is termsafe.String: one field of a line of human output.
func esc(s string) string { return termsafe.String(s) }

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	const versionUsage = "usage: airlock version\n\nPrints airlock's version.\n"
	fs := newFlagSet("version", versionUsage, stderr)
	if code, done := parseFlags(fs, versionUsage, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "airlock version: unexpected argument %q; usage: airlock version\n", fs.Arg(0))
		return 2
	}
	fmt.Fprintln(stdout, "airlock", version)
	return 0
}
