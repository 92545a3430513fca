// Command airlock-front is the airlock binary users run (make build
// writes it to bin/airlock): a small program that answers 'airlock policy'
// itself and runs every other verb in the core, the full airlock program
// (cmd/airlock), which it carries embedded. A policy check is what a hook
// or an agent's tool loop runs before every command, so it must not pay
// for starting the daemon's packages (SQLite, HTTP/2, the backends); see
// package front for how the core is put on disk and run.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/airlock-dev/airlock/internal/cli/clibase"
	"github.com/airlock-dev/airlock/internal/cli/policycmd"
	_ "github.com/airlock-dev/airlock/internal/leanstart" // initialised first: see its doc
	"github.com/airlock-dev/airlock/internal/termsafe"
)

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the front's own verbs; anything else is the core's.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "policy" {
		// The answer is written in one write, not one per line: each
		// wakes the reader of a pipe (a hook, an agent's tool loop).
		out := bufio.NewWriter(stdout)
		defer out.Flush()
		stdout, stderr = termsafe.NewWriter(out), termsafe.NewWriter(stderr)
		remote := func(c *clibase.Cmd, verbArgs []string, _ string, _ []string, _ string, _ bool) int {
			// The daemon's client and the policy file's YAML decoder
			// are the core's: it parses the same arguments again.
			out.Flush()
			return runCore(append([]string{"policy", "check"}, verbArgs...), c.Stderr)
		}
		return policycmd.CmdPolicy(args[1:], stdout, stderr, remote)
	}
	return runCore(args, stderr)
}

// runCore replaces this process with the core; it returns only when the
// core cannot be run.
func runCore(args []string, stderr io.Writer) int {
	err := core.Exec(args)
	fmt.Fprintf(stderr, "airlock: %v\n", err)
	return 1
}
