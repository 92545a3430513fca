package policy

import "strings"

// Shell builtins and small tools that take a command, load code or set a
// variable from input.

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
		c.delegated = false
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

// manTool: man's pager and browser are commands it runs.
func manTool(c *call) {
	for _, o := range [][2]string{{"-P", "--pager"}, {"-H", "--html"}} {
		if p := optValue(c.args, o[0], o[1]); p != nil {
			c.cmd.Why = joinWhy(c.cmd.Why, "man "+o[0]+" runs a command")
			c.shell(*p)
			c.delegated = false
		}
	}
	c.class(Read, "man only reads")
}

func sortTool(c *call) {
	if p := optValue(c.args, "", "--compress-program"); p != nil {
		c.cmd.Why = joinWhy(c.cmd.Why, "sort --compress-program runs a command")
		c.shell(*p)
		c.delegated = false
	}
	c.class(Read, "sort reads")
	outFlag(c, Read, "sort", "-o", "--output")
}

// zipTool: zip -TT/--unzip-command runs a command to test the archive.
func zipTool(c *call) {
	if p := optValue(c.args, "-TT", "--unzip-command"); p != nil {
		c.cmd.Why = joinWhy(c.cmd.Why, "zip -TT runs a command")
		c.shell(*p)
		c.delegated = false
	}
	c.class(Write, "zip writes an archive")
	if _, pos := opts(c.args, "-TT", "--unzip-command", "-b", "-n", "-t", "-tt", "-x", "-i", "-O", "--out"); len(pos) > 0 {
		c.write(pos[0])
	}
}

// lddTool: ldd runs a program's own loader (its interpreter), so on a
// program that is not the system's it may run that program's code.
func lddTool(c *call) {
	_, pos := opts(c.args)
	for _, w := range pos {
		p := c.a.resolve(w)
		if !w.static || !(strings.HasPrefix(p, "/usr/") || strings.HasPrefix(p, "/lib") || strings.HasPrefix(p, "/bin/") || strings.HasPrefix(p, "/sbin/")) {
			c.class(Unknown, "ldd runs the loader "+w.s+" names, which may be its own")
			return
		}
	}
	c.class(Read, "ldd lists libraries")
}

// npmConfigFlags: npm takes any configuration as a flag; script-shell
// runs every script, node-options loads code into every node process,
// another userconfig or globalconfig file may set either.
func npmConfigFlags(c *call) {
	for i, w := range c.args {
		name, v, hasVal := strings.Cut(w.s, "=")
		val := word{s: v, static: w.static, params: w.params}
		if !hasVal && i+1 < len(c.args) {
			val = c.args[i+1]
		}
		switch name {
		case "--script-shell":
			c.cmd.Why = joinWhy(c.cmd.Why, "npm --script-shell runs the scripts with "+val.s)
			c.shell(val)
			c.delegated = false
		case "--node-options":
			if _, unknown := envEffect("NODE_OPTIONS", val); unknown != "" {
				c.class(Unknown, unknown)
			}
		case "--userconfig", "--globalconfig":
			c.class(Unknown, "npm "+name+" reads configuration (a script shell, node options) from "+val.s)
		}
	}
}
