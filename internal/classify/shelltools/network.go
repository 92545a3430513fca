package shelltools

import (
	"path"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

func curlTool(c *engine.Call) {
	c.Class(engine.Network, "curl talks to another host")
	for i := 0; i < len(c.Args); i++ {
		s := c.Args[i].Text
		switch {
		case (s == "-o" || s == "--output") && i+1 < len(c.Args):
			if t := c.Args[i+1].Text; t != "-" && !engine.HarmlessSink(t) {
				c.Class(engine.Write, "curl saves to "+t)
				c.Write(c.Args[i+1])
			}
			i++
		case s == "-O" || s == "--remote-name" || s == "--remote-name-all" || (strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.HasSuffix(s, "O")):
			c.Class(engine.Write, "curl saves the download under its remote name")
			for _, w := range c.Args {
				if u := engine.HostOf(w.Text); u != "" {
					c.Write(engine.Word{Text: path.Base(w.Text), Static: w.Static})
				}
			}
		case strings.HasPrefix(s, "--output="):
			c.Class(engine.Write, "curl saves to a file")
			c.Write(engine.Word{Text: strings.TrimPrefix(s, "--output="), Static: c.Args[i].Static})
		}
	}
}

func wgetTool(c *engine.Call) {
	c.Class(engine.Network, "wget downloads")
	out := ""
	toStdout := false
	for i := 0; i < len(c.Args); i++ {
		s := c.Args[i].Text
		switch {
		case s == "-O" || s == "--output-document":
			if i+1 < len(c.Args) {
				out = c.Args[i+1].Text
				i++
			}
		case strings.HasPrefix(s, "--output-document="):
			out = strings.TrimPrefix(s, "--output-document=")
		case strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "O"):
			rest := s[strings.IndexByte(s, 'O')+1:]
			if rest != "" {
				out = rest
			} else if i+1 < len(c.Args) {
				out = c.Args[i+1].Text
				i++
			}
		case s == "--spider" || s == "-S" && false:
			toStdout = true
		}
	}
	if out == "-" || toStdout {
		return
	}
	c.Class(engine.Write, "wget saves the download")
	if out != "" {
		c.Write(engine.Word{Text: out, Static: true})
	}
}

func ghTool(c *engine.Call) {
	c.Class(engine.Network, "gh talks to GitHub")
	sub, rest, _ := engine.Subcommand(c.Args, "-R", "--repo", "--hostname")
	flags, _ := engine.Opts(rest)
	if sub == "auth" && (engine.FirstPos(rest) == "token" || engine.HasFlag(flags, "-t", "--show-token")) {
		c.Class(engine.Secret, "gh auth prints the token")
		c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "GitHub token")
	}
	if (sub == "repo" || sub == "release" || sub == "secret" || sub == "variable") && engine.FirstPos(rest) == "delete" {
		c.Class(engine.Destructive, "gh "+sub+" delete deletes")
	}
}

// getentTool: a lookup of a host name computed on the line goes to the
// resolver: DNS carries the name (and whatever was put in it) out.
func getentTool(c *engine.Call) {
	if db := engine.FirstPos(c.Args); db == "hosts" || db == "ahosts" || db == "ahostsv4" || db == "ahostsv6" {
		for _, w := range c.Args[1:] {
			if !w.Static {
				c.Class(engine.Network, "getent resolves a name computed at run time (DNS carries it out)")
				return
			}
		}
	}
	c.Class(engine.Read, "getent only reads")
}
