package classify

import (
	"path"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// Environment dumps by tools otherwise read-only: jq's env and $ENV,
// awk's ENVIRON, ps's BSD e flag (each process's environment). The
// sandbox's environment holds the brokered credentials' placeholders
// and whatever a task passed in, so a dump is Secret, like printenv.

var jqEnvRE = lazyre.New(`\$ENV\b|(?:^|[^A-Za-z0-9_$.])env(?:[^A-Za-z0-9_]|$)`)

// envDump reports whether c dumps or reads the environment, and why.
func envDump(c *call) (string, bool) {
	switch c.name {
	case "jq", "gojq", "jaq", "yq":
		for _, w := range c.args {
			if !strings.HasPrefix(w.s, "-") && jqEnvRE().MatchString(w.s) {
				return c.name + " reads the environment (" + w.s + ")", true
			}
		}
	case "awk", "gawk", "mawk", "nawk":
		for _, w := range c.args {
			if strings.Contains(w.s, "ENVIRON") {
				return c.name + " reads the environment (ENVIRON)", true
			}
		}
	case "ps":
		for _, w := range c.args {
			if w.s == "-E" || !strings.HasPrefix(w.s, "-") && strings.ContainsRune(w.s, 'e') && !strings.ContainsAny(w.s, "=,/") {
				return "ps " + w.s + " shows each process's environment", true
			}
		}
	case "printenv":
		if len(c.args) == 0 {
			return "printenv prints the whole environment", true
		}
		for _, w := range c.args {
			if !w.static || secretParam(w.s) || strings.HasPrefix(w.s, "-") {
				return "printenv prints " + w.s, true
			}
		}
	}
	return "", false
}

// checkEnvDump marks c Secret when it dumps the environment.
func (c *call) checkEnvDump() {
	if why, ok := envDump(c); ok {
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "the environment")
		c.class(Secret, why)
	}
}

// templateCopy: cp .env.example .env makes a new credential file from a
// template, which holds no credentials (the agent fills it in later).
func templateCopy(c *call) bool {
	if c.name != "cp" && c.name != "install" {
		return false
	}
	_, pos := opts(c.args, "-m", "--mode", "-t", "--target-directory", "-o", "-g")
	if len(pos) != 2 || !pos[0].static || !pos[1].static || isSecretPath(pos[0].s) {
		return false
	}
	dst := path.Base(pos[1].s)
	if !strings.HasPrefix(dst, ".env") && dst != ".dev.vars" {
		return false // only env files: a template of ~/.ssh/config is still ssh's configuration
	}
	for _, s := range notSecretSuffixes {
		if strings.HasSuffix(pos[0].s, s) && s != ".pub" && s != ".md" {
			return isSecretPath(pos[1].s)
		}
	}
	return false
}

var recursiveReaders = setOf("grep egrep fgrep rg ag ack ripgrep cp rsync scp zip tar bsdtar")

// recursiveRoots: a recursive read rooted at the home directory or the
// filesystem root covers every credential directory (~/.ssh, ~/.aws...).
func (c *call) recursiveRoots() {
	if !recursiveReaders[c.name] {
		return
	}
	flags, pos := opts(c.args, "-e", "-f", "-m", "-A", "-B", "-C", "-g", "--glob", "-t", "--type", "-T", "-d")
	rec := false
	switch c.name {
	case "grep", "egrep", "fgrep":
		rec = hasFlag(flags, "-r", "-R", "--recursive", "--dereference-recursive")
		if rec && len(pos) > 0 && !slices.Contains(flags, "-e") && !slices.Contains(flags, "-f") {
			pos = pos[1:] // the pattern
		}
	case "rg", "ag", "ack", "ripgrep":
		rec = true
		if len(pos) > 0 && !hasFlag(flags, "--files", "-e") {
			pos = pos[1:]
		}
	case "cp", "rsync", "scp":
		rec = hasFlag(flags, "-r", "-R", "-a", "--recursive", "--archive")
	case "zip":
		rec = hasFlag(flags, "-r", "--recurse-paths")
	case "tar", "bsdtar":
		rec = len(c.args) > 0 && (strings.HasPrefix(c.args[0].s, "c") || hasFlag(flags, "-c", "--create"))
	}
	if !rec {
		return
	}
	for _, w := range pos {
		switch p := c.Resolve(w); p {
		case Home, "/":
			c.cmd.Secrets = appendUniq(c.cmd.Secrets, p+" (recursively)")
			c.class(Secret, c.name+" reads everything under "+w.s+", credential directories included")
			return
		}
	}
}
