// Package completion is 'airlock completion': a shell completion script.
// The script knows the verbs; everything else it asks the binary it
// completes for when it is needed, so it never goes stale: a verb
// group's commands and any command's flags come from its --help, and the
// values of --template from 'airlock template ls -q' (the host template
// and the imported, debian and built ones of the data directory).
package completion

import (
	"fmt"
	"io"
	"strings"

	"github.com/airlock-dev/airlock/internal/cli/clibase"
)

const usage = `usage: airlock completion SHELL

SHELL is bash (zsh: see below). Prints a bash completion script for airlock: verbs, each group's
commands, flags, --template names (airlock template ls -q), --backend,
and file names for path flags and after "--". Install it with
  airlock completion bash > /etc/bash_completion.d/airlock
or 'source <(airlock completion bash)' in ~/.bashrc. zsh reads it after
'autoload -U +X bashcompinit && bashcompinit'. Other shells: unsupported.
`

// Cmd is the verb; verbs are airlock's verb names, for the first word.
func Cmd(verbs []string) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		fs := clibase.NewFlagSet("completion", usage, stderr)
		if code, done := clibase.ParseFlags(fs, usage, args, stdout); done {
			return code
		}
		pos, err := clibase.ParseInterspersed(fs, fs.Args())
		switch {
		case err != nil:
			return 2
		case len(pos) != 1:
			fmt.Fprintln(stderr, "airlock completion: name one shell; usage: airlock completion SHELL")
			return 2
		case pos[0] != "bash":
			fmt.Fprintf(stderr, "airlock completion: %q: unsupported (bash only; zsh through bashcompinit)\n", pos[0])
			return 2
		}
		fmt.Fprint(stdout, strings.Replace(bashScript, "@VERBS@", strings.Join(verbs, " "), 1))
		return 0
	}
}
