package engine

import (
	"path"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/secretnames"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

// Environment dumps by tools otherwise read-only: jq's env and $ENV,
// awk's ENVIRON, ps's BSD e flag (each process's environment). The
// sandbox's environment holds the brokered credentials' placeholders
// and whatever a task passed in, so a dump is Secret, like printenv.

var jqEnvRE = lazyre.New(`\$ENV\b|(?:^|[^A-Za-z0-9_$.])env(?:[^A-Za-z0-9_]|$)`)

// EnvDump reports whether c dumps or reads the environment, and why.
func EnvDump(c *Call) (string, bool) {
	switch c.Name {
	case "jq", "gojq", "jaq", "yq":
		for _, w := range c.Args {
			if !strings.HasPrefix(w.Text, "-") && jqEnvRE().MatchString(w.Text) {
				return c.Name + " reads the environment (" + w.Text + ")", true
			}
		}
	case "awk", "gawk", "mawk", "nawk":
		for _, w := range c.Args {
			if strings.Contains(w.Text, "ENVIRON") {
				return c.Name + " reads the environment (ENVIRON)", true
			}
		}
	case "ps":
		for _, w := range c.Args {
			if w.Text == "-E" || !strings.HasPrefix(w.Text, "-") && strings.ContainsRune(w.Text, 'e') && !strings.ContainsAny(w.Text, "=,/") {
				return "ps " + w.Text + " shows each process's environment", true
			}
		}
	case "printenv":
		if len(c.Args) == 0 {
			return "printenv prints the whole environment", true
		}
		for _, w := range c.Args {
			if !w.Static || secretnames.Var(w.Text) || strings.HasPrefix(w.Text, "-") {
				return "printenv prints " + w.Text, true
			}
		}
	}
	return "", false
}

// checkEnvDump marks c Secret when it dumps the environment.
func (c *Call) checkEnvDump() {
	if why, ok := EnvDump(c); ok {
		c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, "the environment")
		c.Class(Secret, why)
	}
}

// templateCopy: cp .env.example .env makes a new credential file from a
// template, which holds no credentials (the agent fills it in later).
func templateCopy(c *Call) bool {
	if c.Name != "cp" && c.Name != "install" {
		return false
	}
	_, pos := Opts(c.Args, "-m", "--mode", "-t", "--target-directory", "-o", "-g")
	if len(pos) != 2 || !pos[0].Static || !pos[1].Static || secretnames.Path(pos[0].Text) {
		return false
	}
	dst := path.Base(pos[1].Text)
	if !strings.HasPrefix(dst, ".env") && dst != ".dev.vars" {
		return false // only env files: a template of ~/.ssh/config is still ssh's configuration
	}
	if secretnames.Template(pos[0].Text) {
		return secretnames.Path(pos[1].Text)
	}
	return false
}

var recursiveReaders = SetOf("grep egrep fgrep rg ag ack ripgrep cp rsync scp zip tar bsdtar")

// recursiveRoots: a recursive read rooted at the home directory or the
// filesystem root covers every credential directory (~/.ssh, ~/.aws...).
func (c *Call) recursiveRoots() {
	if !recursiveReaders.Has(c.Name) {
		return
	}
	flags, pos := Opts(c.Args, "-e", "-f", "-m", "-A", "-B", "-C", "-g", "--glob", "-t", "--type", "-T", "-d")
	rec := false
	switch c.Name {
	case "grep", "egrep", "fgrep":
		rec = HasFlag(flags, "-r", "-R", "--recursive", "--dereference-recursive")
		if rec && len(pos) > 0 && !slices.Contains(flags, "-e") && !slices.Contains(flags, "-f") {
			pos = pos[1:] // the pattern
		}
	case "rg", "ag", "ack", "ripgrep":
		rec = true
		if len(pos) > 0 && !HasFlag(flags, "--files", "-e") {
			pos = pos[1:]
		}
	case "cp", "rsync", "scp":
		rec = HasFlag(flags, "-r", "-R", "-a", "--recursive", "--archive")
	case "zip":
		rec = HasFlag(flags, "-r", "--recurse-paths")
	case "tar", "bsdtar":
		rec = len(c.Args) > 0 && (strings.HasPrefix(c.Args[0].Text, "c") || HasFlag(flags, "-c", "--create"))
	}
	if !rec {
		return
	}
	for _, w := range pos {
		switch p := c.Resolve(w); p {
		case c.a.home, "/":
			c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, p+" (recursively)")
			c.Class(Secret, c.Name+" reads everything under "+w.Text+", credential directories included")
			return
		}
	}
}
