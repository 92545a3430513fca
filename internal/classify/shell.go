package classify

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

func (c *call) execOrShell(rest []word) {
	if len(rest) == 0 {
		c.class(Unknown, c.name+" without a command starts a shell")
		return
	}
	c.exec(rest)
}

func shellTool(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-c" || (strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "c")):
			if i+1 < len(c.args) {
				c.shell(c.args[i+1])
				return
			}
			c.class(Unknown, c.name+" -c without a script")
			return
		case s == "-o" || s == "+o" || s == "-O" || s == "+O" || s == "--rcfile" || s == "--init-file":
			i++
		case s == "-s" || s == "-i" || (strings.HasPrefix(s, "-") && strings.ContainsAny(s, "si") && !strings.HasPrefix(s, "--")):
			c.class(Unknown, c.name+" reads commands from its input")
			return
		case s == "--version" || s == "--help":
			c.class(Read, c.name+" prints its version")
			return
		case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+"):
		default:
			c.runFile(c.name, c.args[i])
			return
		}
	}
	c.class(Unknown, c.name+" reads commands from its input")
}

func busybox(c *call) {
	if len(c.args) == 0 {
		c.class(Read, "busybox lists its applets")
		return
	}
	c.exec(c.args)
}

func sourceTool(c *call) {
	if len(c.args) == 0 {
		c.class(Unknown, c.name+" without a file")
		return
	}
	f := c.args[0]
	if name, secret, _ := c.SecretWord(f); secret {
		c.class(Secret, c.name+" loads "+name+" into the shell")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, name)
		return
	}
	c.runFile(c.name, f)
}

var aliasRE = lazyre.New(`^[A-Za-z0-9_.-]+=`)

func aliasTool(c *call) {
	if len(c.args) == 0 {
		c.class(Read, "alias lists aliases")
		return
	}
	for _, w := range c.args {
		if m := aliasRE().FindString(w.s); m != "" {
			c.shell(word{s: w.s[len(m):], static: w.static})
		}
	}
	c.class(Read, "alias defines a name")
}

func trapTool(c *call) {
	if len(c.args) < 2 {
		c.class(Read, "trap lists traps")
		return
	}
	c.class(Read, "trap sets a handler")
	c.shell(c.args[0])
}

func watchTool(c *call) {
	_, rest := leadingCommand(c.args, "-n", "--interval", "-d", "-q")
	if len(rest) == 0 {
		c.class(Unknown, "watch without a command")
		return
	}
	c.shell(joinWords(rest))
}

func suTool(c *call) {
	for i, w := range c.args {
		if (w.s == "-c" || w.s == "--command") && i+1 < len(c.args) {
			c.shell(c.args[i+1])
			return
		}
	}
	c.class(Unknown, "su starts a shell")
}

func scriptTool(c *call) {
	for i, w := range c.args {
		if (w.s == "-c" || w.s == "--command") && i+1 < len(c.args) {
			c.shell(c.args[i+1])
			return
		}
	}
	c.class(Unknown, "script starts a shell")
}

func flockTool(c *call) {
	flags, rest := leadingCommand(c.args, "-w", "-E", "--timeout", "--conflict-exit-code")
	_ = flags
	if len(rest) == 0 {
		c.class(Unknown, "flock without a command")
		return
	}
	rest = rest[1:] // the lock file
	for i, w := range rest {
		if (w.s == "-c" || w.s == "--command") && i+1 < len(rest) {
			c.shell(rest[i+1])
			return
		}
	}
	c.exec(rest)
}

func envTool(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-u" || s == "--unset" || s == "-C" || s == "--chdir":
			i++
		case s == "-S" || s == "--split-string":
			if i+1 < len(c.args) {
				c.shell(joinWords(c.args[i+1:]))
				return
			}
		case strings.HasPrefix(s, "--split-string="):
			c.shell(word{s: strings.TrimPrefix(s, "--split-string=") + " " + joinWords(c.args[i+1:]).s, static: c.args[i].static})
			return
		case s == "--":
			c.exec(c.args[i+1:])
			return
		case strings.HasPrefix(s, "-"):
		case strings.Contains(s, "="):
			c.assignArg(c.args[i])
		default:
			c.exec(c.args[i:])
			return
		}
	}
	c.cmd.Secrets = appendUniq(c.cmd.Secrets, "environment")
	c.class(Secret, "env without a command prints the environment")
}

func sudoTool(c *call) {
	flags, rest := leadingCommand(c.args, "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user", "--group")
	if hasFlag(flags, "-l", "--list", "-v", "-V", "-k", "-K") && len(rest) == 0 {
		c.class(Read, "sudo lists or refreshes credentials")
		return
	}
	if hasFlag(flags, "-e", "--edit") {
		c.class(Write, "sudoedit edits files")
		c.write(rest...)
		return
	}
	for len(rest) > 0 && strings.Contains(rest[0].s, "=") && !strings.HasPrefix(rest[0].s, "=") {
		c.assignArg(rest[0])
		rest = rest[1:]
	}
	if len(rest) == 0 {
		c.class(Unknown, "sudo without a command starts a shell")
		return
	}
	c.exec(rest)
}

func tasksetTool(c *call) {
	_, rest := leadingCommand(c.args)
	c.exec(skipN(rest, 1))
}

var durationRE = lazyre.New(`^[0-9.]+[smhd]?$`)

func timeoutTool(c *call) {
	_, rest := leadingCommand(c.args, "-s", "--signal", "-k", "--kill-after")
	if len(rest) > 0 && durationRE().MatchString(rest[0].s) {
		rest = rest[1:]
	}
	c.exec(rest)
}

func timeTool(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-o" || s == "--output":
			if i+1 < len(c.args) {
				c.class(Write, "time writes its report")
				c.write(c.args[i+1])
				i++
			}
		case s == "-f" || s == "--format":
			i++
		case strings.HasPrefix(s, "-"):
		default:
			c.exec(c.args[i:])
			return
		}
	}
	c.class(Read, "time alone")
}

func commandTool(c *call) {
	flags, rest := leadingCommand(c.args)
	if hasFlag(flags, "-v", "-V") {
		c.class(Read, "command -v looks a name up")
		return
	}
	c.exec(rest)
}

func xargsTool(c *call) {
	withArg := []string{"-I", "-i", "-n", "-L", "-l", "-P", "-s", "-d", "-E", "-e", "-a", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-lines", "--replace", "--eof"}
	flags, rest := leadingCommand(c.args, withArg...)
	for i, f := range flags {
		if (f == "-a" || f == "--arg-file") && i+1 < len(flags) {
			continue
		}
	}
	if len(rest) == 0 {
		c.class(Read, "xargs without a command echoes")
		return
	}
	c.exec(rest)
}

func parallelTool(c *call) {
	_, rest := leadingCommand(c.args, "-j", "--jobs", "-S", "--sshlogin", "--joblog", "-a")
	var cmd []word
	for _, w := range rest {
		if w.s == ":::" || w.s == "::::" || w.s == ":::+" {
			break
		}
		cmd = append(cmd, w)
	}
	if len(cmd) == 0 {
		c.class(Unknown, "parallel reads commands from its input")
		return
	}
	c.shell(joinWords(cmd))
}

func crossEnv(c *call) {
	rest := c.args
	for len(rest) > 0 && strings.Contains(rest[0].s, "=") {
		c.assignArg(rest[0])
		rest = rest[1:]
	}
	c.exec(rest)
}

func dotenvTool(c *call) {
	c.class(Secret, c.name+" loads an env file into the command")
	c.cmd.Secrets = appendUniq(c.cmd.Secrets, ".env")
	_, rest := leadingCommand(c.args, "-e", "-f", "-c", "-v", "-p", "--file", "--environment")
	c.exec(rest)
}

func setTool(c *call) {
	if len(c.args) == 0 {
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "environment")
		c.class(Secret, "set without arguments prints every variable")
		return
	}
	c.class(Read, "set changes shell options")
}

// cdTool follows the directory so that later relative writes resolve
// where the shell would put them; a directory known only at run time
// makes them unknown.
func cdTool(c *call) {
	c.class(Read, c.name+" changes directory")
	_, pos := opts(c.args)
	switch {
	case len(pos) == 0:
		c.SetCwd(Home)
	case !pos[0].static && !strings.HasPrefix(pos[0].s, "$HOME") && !strings.HasPrefix(pos[0].s, "${HOME}") || pos[0].s == "-":
		c.SetCwd("")
	default:
		if p := c.Resolve(pos[0]); strings.HasPrefix(p, "/") {
			c.SetCwd(p)
		} else {
			c.SetCwd("")
		}
	}
}

// readTool: read, printf -v and getopts set variables from what is only
// known at run time; into a watched variable (a pager, LD_PRELOAD...)
// that is unknown.
func readTool(c *call) {
	var names []string
	switch c.name {
	case "read":
		_, pos := opts(c.args, "-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u")
		names = strs(pos)
		if a := optValue(c.args, "-a", ""); a != nil {
			names = append(names, a.s)
		}
	case "printf":
		if v := optValue(c.args, "-v", ""); v != nil {
			names = append(names, v.s)
		}
	case "getopts":
		if len(c.args) > 1 {
			names = append(names, c.args[1].s)
		}
	}
	for _, n := range names {
		if envWatched(n) {
			c.class(Unknown, c.name+" sets "+n+", which names a command or loads code, from what is known only at run time")
			return
		}
	}
	c.class(Read, c.name+" only reads")
}

// callbackTool: mapfile -C, compgen -C and complete -C run a command.
func callbackTool(c *call) {
	if cb := optValue(c.args, "-C", ""); cb != nil {
		c.cmd.Why = joinWhy(c.cmd.Why, c.name+" -C runs a command")
		c.shell(*cb)
		c.Keep()
	}
	c.class(Read, c.name+" only reads")
}

func enableTool(c *call) {
	if f, _ := opts(c.args, "-f"); hasFlag(f, "-f") {
		c.class(Unknown, "enable -f loads a shared object into the shell")
		return
	}
	c.class(Read, "enable lists or switches builtins")
}

// argsOr gives one class with no arguments, another with.
func argsOr(c *call, bare, withArgs Class, why string) {
	if len(c.args) == 0 {
		if bare == Secret {
			c.cmd.Secrets = appendUniq(c.cmd.Secrets, "environment")
			c.class(Secret, c.name+" without arguments prints the environment")
			return
		}
		c.class(bare, c.name+" only reads")
		return
	}
	if why == "" {
		why = c.name + " sets shell state"
	}
	c.class(withArgs, why)
}

func outFlag(c *call, cl Class, name string, flagNames ...string) {
	if f := flagValue(c.args, flagNames...); f != nil {
		c.class(Write, name+" writes its output file")
		c.write(*f)
		return
	}
	c.class(cl, name+" only reads")
}

func inPlace(c *call, name string, flagNames ...string) {
	flags, pos := opts(c.args)
	if hasFlag(flags, flagNames...) {
		c.class(Write, name+" edits files in place")
		c.write(skipN(pos, 1)...)
		return
	}
	c.class(Read, name+" only reads")
}

// printenvTool: printenv of named harmless variables only reads; a dump
// or a credential's name is Secret (added by scan's checkEnvDump).
func printenvTool(c *call) {
	if _, dump := envDump(c); !dump {
		c.class(Read, "printenv prints harmless variables")
	}
}
