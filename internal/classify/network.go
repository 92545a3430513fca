package classify

import (
	"path"
	"strings"
)

func curlTool(c *call) {
	c.class(Network, "curl talks to another host")
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case (s == "-o" || s == "--output") && i+1 < len(c.args):
			if t := c.args[i+1].s; t != "-" && !harmlessSink(t) {
				c.class(Write, "curl saves to "+t)
				c.write(c.args[i+1])
			}
			i++
		case s == "-O" || s == "--remote-name" || s == "--remote-name-all" || (strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.HasSuffix(s, "O")):
			c.class(Write, "curl saves the download under its remote name")
			for _, w := range c.args {
				if u := hostOf(w.s); u != "" {
					c.write(word{s: path.Base(w.s), static: w.static})
				}
			}
		case strings.HasPrefix(s, "--output="):
			c.class(Write, "curl saves to a file")
			c.write(word{s: strings.TrimPrefix(s, "--output="), static: c.args[i].static})
		}
	}
}

func wgetTool(c *call) {
	c.class(Network, "wget downloads")
	out := ""
	toStdout := false
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-O" || s == "--output-document":
			if i+1 < len(c.args) {
				out = c.args[i+1].s
				i++
			}
		case strings.HasPrefix(s, "--output-document="):
			out = strings.TrimPrefix(s, "--output-document=")
		case strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "O"):
			rest := s[strings.IndexByte(s, 'O')+1:]
			if rest != "" {
				out = rest
			} else if i+1 < len(c.args) {
				out = c.args[i+1].s
				i++
			}
		case s == "--spider" || s == "-S" && false:
			toStdout = true
		}
	}
	if out == "-" || toStdout {
		return
	}
	c.class(Write, "wget saves the download")
	if out != "" {
		c.write(word{s: out, static: true})
	}
}

func ghTool(c *call) {
	c.class(Network, "gh talks to GitHub")
	sub, rest, _ := subcommand(c.args, "-R", "--repo", "--hostname")
	flags, _ := opts(rest)
	if sub == "auth" && (firstPos(rest) == "token" || hasFlag(flags, "-t", "--show-token")) {
		c.class(Secret, "gh auth prints the token")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "GitHub token")
	}
	if (sub == "repo" || sub == "release" || sub == "secret" || sub == "variable") && firstPos(rest) == "delete" {
		c.class(Destructive, "gh "+sub+" delete deletes")
	}
}

// getentTool: a lookup of a host name computed on the line goes to the
// resolver: DNS carries the name (and whatever was put in it) out.
func getentTool(c *call) {
	if db := firstPos(c.args); db == "hosts" || db == "ahosts" || db == "ahostsv4" || db == "ahostsv6" {
		for _, w := range c.args[1:] {
			if !w.static {
				c.class(Network, "getent resolves a name computed at run time (DNS carries it out)")
				return
			}
		}
	}
	c.class(Read, "getent only reads")
}
