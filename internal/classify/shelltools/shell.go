package shelltools

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

// execOrShell runs the command after a wrapper's options; none starts a
// shell (doas, runuser).
func execOrShell(c *engine.Call, rest []engine.Word) {
	if len(rest) == 0 {
		c.Class(engine.Unknown, c.Name+" without a command starts a shell")
		return
	}
	c.Exec(rest)
}

func shellTool(c *engine.Call) {
	for i := 0; i < len(c.Args); i++ {
		s := c.Args[i].Text
		switch {
		case s == "-c" || (strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "c")):
			if i+1 < len(c.Args) {
				c.Shell(c.Args[i+1])
				return
			}
			c.Class(engine.Unknown, c.Name+" -c without a script")
			return
		case s == "-o" || s == "+o" || s == "-O" || s == "+O" || s == "--rcfile" || s == "--init-file":
			i++
		case s == "-s" || s == "-i" || (strings.HasPrefix(s, "-") && strings.ContainsAny(s, "si") && !strings.HasPrefix(s, "--")):
			c.Class(engine.Unknown, c.Name+" reads commands from its input")
			return
		case s == "--version" || s == "--help":
			c.Class(engine.Read, c.Name+" prints its version")
			return
		case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+"):
		default:
			c.RunFile(c.Name, c.Args[i])
			return
		}
	}
	c.Class(engine.Unknown, c.Name+" reads commands from its input")
}

func busybox(c *engine.Call) {
	if len(c.Args) == 0 {
		c.Class(engine.Read, "busybox lists its applets")
		return
	}
	c.Exec(c.Args)
}

func sourceTool(c *engine.Call) {
	if len(c.Args) == 0 {
		c.Class(engine.Unknown, c.Name+" without a file")
		return
	}
	f := c.Args[0]
	if name, secret, _ := c.SecretWord(f); secret {
		c.Class(engine.Secret, c.Name+" loads "+name+" into the shell")
		c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, name)
		return
	}
	c.RunFile(c.Name, f)
}

var aliasRE = lazyre.New(`^[A-Za-z0-9_.-]+=`)

func aliasTool(c *engine.Call) {
	if len(c.Args) == 0 {
		c.Class(engine.Read, "alias lists aliases")
		return
	}
	for _, w := range c.Args {
		if m := aliasRE().FindString(w.Text); m != "" {
			c.Shell(engine.Word{Text: w.Text[len(m):], Static: w.Static})
		}
	}
	c.Class(engine.Read, "alias defines a name")
}

func trapTool(c *engine.Call) {
	if len(c.Args) < 2 {
		c.Class(engine.Read, "trap lists traps")
		return
	}
	c.Class(engine.Read, "trap sets a handler")
	c.Shell(c.Args[0])
}

func watchTool(c *engine.Call) {
	_, rest := engine.LeadingCommand(c.Args, "-n", "--interval", "-d", "-q")
	if len(rest) == 0 {
		c.Class(engine.Unknown, "watch without a command")
		return
	}
	c.Shell(engine.JoinWords(rest))
}

func suTool(c *engine.Call) {
	for i, w := range c.Args {
		if (w.Text == "-c" || w.Text == "--command") && i+1 < len(c.Args) {
			c.Shell(c.Args[i+1])
			return
		}
	}
	c.Class(engine.Unknown, "su starts a shell")
}

func scriptTool(c *engine.Call) {
	for i, w := range c.Args {
		if (w.Text == "-c" || w.Text == "--command") && i+1 < len(c.Args) {
			c.Shell(c.Args[i+1])
			return
		}
	}
	c.Class(engine.Unknown, "script starts a shell")
}

func flockTool(c *engine.Call) {
	flags, rest := engine.LeadingCommand(c.Args, "-w", "-E", "--timeout", "--conflict-exit-code")
	_ = flags
	if len(rest) == 0 {
		c.Class(engine.Unknown, "flock without a command")
		return
	}
	rest = rest[1:] // the lock file
	for i, w := range rest {
		if (w.Text == "-c" || w.Text == "--command") && i+1 < len(rest) {
			c.Shell(rest[i+1])
			return
		}
	}
	c.Exec(rest)
}

func envTool(c *engine.Call) {
	for i := 0; i < len(c.Args); i++ {
		s := c.Args[i].Text
		switch {
		case s == "-u" || s == "--unset" || s == "-C" || s == "--chdir":
			i++
		case s == "-S" || s == "--split-string":
			if i+1 < len(c.Args) {
				c.Shell(engine.JoinWords(c.Args[i+1:]))
				return
			}
		case strings.HasPrefix(s, "--split-string="):
			c.Shell(engine.Word{Text: strings.TrimPrefix(s, "--split-string=") + " " + engine.JoinWords(c.Args[i+1:]).Text, Static: c.Args[i].Static})
			return
		case s == "--":
			c.Exec(c.Args[i+1:])
			return
		case strings.HasPrefix(s, "-"):
		case strings.Contains(s, "="):
			c.AssignArg(c.Args[i])
		default:
			c.Exec(c.Args[i:])
			return
		}
	}
	c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "environment")
	c.Class(engine.Secret, "env without a command prints the environment")
}

func sudoTool(c *engine.Call) {
	flags, rest := engine.LeadingCommand(c.Args, "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user", "--group")
	if engine.HasFlag(flags, "-l", "--list", "-v", "-V", "-k", "-K") && len(rest) == 0 {
		c.Class(engine.Read, "sudo lists or refreshes credentials")
		return
	}
	if engine.HasFlag(flags, "-e", "--edit") {
		c.Class(engine.Write, "sudoedit edits files")
		c.Write(rest...)
		return
	}
	for len(rest) > 0 && strings.Contains(rest[0].Text, "=") && !strings.HasPrefix(rest[0].Text, "=") {
		c.AssignArg(rest[0])
		rest = rest[1:]
	}
	if len(rest) == 0 {
		c.Class(engine.Unknown, "sudo without a command starts a shell")
		return
	}
	c.Exec(rest)
}

func tasksetTool(c *engine.Call) {
	_, rest := engine.LeadingCommand(c.Args)
	c.Exec(engine.SkipN(rest, 1))
}

var durationRE = lazyre.New(`^[0-9.]+[smhd]?$`)

func timeoutTool(c *engine.Call) {
	_, rest := engine.LeadingCommand(c.Args, "-s", "--signal", "-k", "--kill-after")
	if len(rest) > 0 && durationRE().MatchString(rest[0].Text) {
		rest = rest[1:]
	}
	c.Exec(rest)
}

func timeTool(c *engine.Call) {
	for i := 0; i < len(c.Args); i++ {
		s := c.Args[i].Text
		switch {
		case s == "-o" || s == "--output":
			if i+1 < len(c.Args) {
				c.Class(engine.Write, "time writes its report")
				c.Write(c.Args[i+1])
				i++
			}
		case s == "-f" || s == "--format":
			i++
		case strings.HasPrefix(s, "-"):
		default:
			c.Exec(c.Args[i:])
			return
		}
	}
	c.Class(engine.Read, "time alone")
}

func commandTool(c *engine.Call) {
	flags, rest := engine.LeadingCommand(c.Args)
	if engine.HasFlag(flags, "-v", "-V") {
		c.Class(engine.Read, "command -v looks a name up")
		return
	}
	c.Exec(rest)
}

func xargsTool(c *engine.Call) {
	withArg := []string{"-I", "-i", "-n", "-L", "-l", "-P", "-s", "-d", "-E", "-e", "-a", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-lines", "--replace", "--eof"}
	flags, rest := engine.LeadingCommand(c.Args, withArg...)
	for i, f := range flags {
		if (f == "-a" || f == "--arg-file") && i+1 < len(flags) {
			continue
		}
	}
	if len(rest) == 0 {
		c.Class(engine.Read, "xargs without a command echoes")
		return
	}
	if what := c.PipedSecrets(); what != "" {
		c.Delegate()
		engine.ReadsSecrets(c.Nested(rest), what, "runs on "+what+", piped in")
		return
	}
	c.Exec(rest)
}

func parallelTool(c *engine.Call) {
	_, rest := engine.LeadingCommand(c.Args, "-j", "--jobs", "-S", "--sshlogin", "--joblog", "-a")
	var cmd []engine.Word
	for _, w := range rest {
		if w.Text == ":::" || w.Text == "::::" || w.Text == ":::+" {
			break
		}
		cmd = append(cmd, w)
	}
	if len(cmd) == 0 {
		c.Class(engine.Unknown, "parallel reads commands from its input")
		return
	}
	c.Shell(engine.JoinWords(cmd))
}

func crossEnv(c *engine.Call) {
	rest := c.Args
	for len(rest) > 0 && strings.Contains(rest[0].Text, "=") {
		c.AssignArg(rest[0])
		rest = rest[1:]
	}
	c.Exec(rest)
}

func dotenvTool(c *engine.Call) {
	c.Class(engine.Secret, c.Name+" loads an env file into the command")
	c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, ".env")
	_, rest := engine.LeadingCommand(c.Args, "-e", "-f", "-c", "-v", "-p", "--file", "--environment")
	c.Exec(rest)
}

func setTool(c *engine.Call) {
	if len(c.Args) == 0 {
		c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "environment")
		c.Class(engine.Secret, "set without arguments prints every variable")
		return
	}
	c.Class(engine.Read, "set changes shell options")
}

// cdTool follows the directory so that later relative writes resolve
// where the shell would put them; a directory known only at run time
// makes them unknown. pushd and popd keep the stack the line builds.
func cdTool(c *engine.Call) {
	c.Class(engine.Read, c.Name+" changes directory")
	_, pos := engine.Opts(c.Args)
	if c.Name == "popd" {
		if len(pos) == 0 {
			c.PopCwd()
		} else {
			c.SetCwd("") // popd +N drops an entry: the stack is lost track of
		}
		return
	}
	set := c.SetCwd
	if c.Name == "pushd" {
		set = c.PushCwd
	}
	switch {
	case len(pos) == 0 && c.Name == "pushd":
		c.SetCwd("") // swaps with a directory the line may not have set
	case len(pos) == 0:
		set(c.Home())
	case c.RepoRoot(pos[0]):
		set(engine.DefaultCwd)
	case !pos[0].Static && !strings.HasPrefix(pos[0].Text, "$HOME") && !strings.HasPrefix(pos[0].Text, "${HOME}") || pos[0].Text == "-":
		set("")
	case c.Name == "pushd" && (strings.HasPrefix(pos[0].Text, "+") || strings.HasPrefix(pos[0].Text, "-")):
		c.SetCwd("") // rotates the stack
	default:
		if p := c.Resolve(pos[0]); strings.HasPrefix(p, "/") {
			set(p)
		} else {
			set("")
		}
	}
}

// readTool: read, printf -v and getopts set variables from what is only
// known at run time; into a watched variable (a pager, LD_PRELOAD...)
// that is unknown.
func readTool(c *engine.Call) {
	var names []string
	switch c.Name {
	case "read":
		_, pos := engine.Opts(c.Args, "-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u")
		names = engine.Strs(pos)
		if a := engine.OptValue(c.Args, "-a", ""); a != nil {
			names = append(names, a.Text)
		}
	case "printf":
		if v := engine.OptValue(c.Args, "-v", ""); v != nil {
			names = append(names, v.Text)
		}
	case "getopts":
		if len(c.Args) > 1 {
			names = append(names, c.Args[1].Text)
		}
	}
	for _, n := range names {
		if engine.EnvWatched(n) {
			c.Class(engine.Unknown, c.Name+" sets "+n+", which names a command or loads code, from what is known only at run time")
			return
		}
	}
	c.Class(engine.Read, c.Name+" only reads")
}

// callbackTool: mapfile -C, compgen -C and complete -C run a command.
func callbackTool(c *engine.Call) {
	if cb := engine.OptValue(c.Args, "-C", ""); cb != nil {
		c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, c.Name+" -C runs a command")
		c.Shell(*cb)
		c.Keep()
	}
	c.Class(engine.Read, c.Name+" only reads")
}

func enableTool(c *engine.Call) {
	if f, _ := engine.Opts(c.Args, "-f"); engine.HasFlag(f, "-f") {
		c.Class(engine.Unknown, "enable -f loads a shared object into the shell")
		return
	}
	c.Class(engine.Read, "enable lists or switches builtins")
}

// argsOr gives one class with no arguments, another with.
func argsOr(c *engine.Call, bare, withArgs engine.Class, why string) {
	if len(c.Args) == 0 {
		if bare == engine.Secret {
			c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "environment")
			c.Class(engine.Secret, c.Name+" without arguments prints the environment")
			return
		}
		c.Class(bare, c.Name+" only reads")
		return
	}
	if why == "" {
		why = c.Name + " sets shell state"
	}
	c.Class(withArgs, why)
}

func outFlag(c *engine.Call, cl engine.Class, name string, flagNames ...string) {
	if f := engine.FlagValue(c.Args, flagNames...); f != nil {
		c.Class(engine.Write, name+" writes its output file")
		c.Write(*f)
		return
	}
	c.Class(cl, name+" only reads")
}

func inPlace(c *engine.Call, name string, flagNames ...string) {
	flags, pos := engine.Opts(c.Args)
	if engine.HasFlag(flags, flagNames...) {
		c.Class(engine.Write, name+" edits files in place")
		c.Write(engine.SkipN(pos, 1)...)
		return
	}
	c.Class(engine.Read, name+" only reads")
}

// printenvTool: printenv of named harmless variables only reads; a dump
// or a credential's name is Secret (added by scan's checkEnvDump).
func printenvTool(c *engine.Call) {
	if _, dump := engine.EnvDump(c); !dump {
		c.Class(engine.Read, "printenv prints harmless variables")
	}
}
