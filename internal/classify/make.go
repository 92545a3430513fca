package classify

import (
	"path"
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// Make-like tools: the targets say what happens.
var makeVarRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*=`)

func makeTool(c *call) {
	flags, pos := opts(c.args, "-C", "-f", "--file", "--directory", "-j", "--jobs", "-l", "-o", "-W", "-I", "-t", "--taskfile", "-d", "--dir", "-E")
	if c.name == "make" || c.name == "gmake" {
		if hasFlag(flags, "--eval") || contains(flags, "-E") {
			c.class(Unknown, c.name+" --eval evaluates makefile text given on the line")
		}
	}
	if f := flagValue(c.args, "-f", "--file", "--makefile"); f != nil {
		if p := c.Resolve(*f); !f.static || !path.IsAbs(p) || !inWorkspace(p) {
			c.class(Unknown, c.name+" runs the recipes of "+f.s+", outside the workspace")
		}
	}
	var targets []string
	for _, w := range pos {
		if makeVarRE().MatchString(w.s) {
			// make puts its command-line variables in the recipes'
			// environment; SHELL is the program that runs each recipe.
			if v, ok := strings.CutPrefix(w.s, "SHELL="); ok && (c.name == "make" || c.name == "gmake") {
				c.cmd.Why = joinWhy(c.cmd.Why, "make SHELL= runs every recipe with "+v)
				c.shell(word{s: v, static: w.static, params: w.params})
				c.Keep()
			} else {
				c.assignArg(w)
			}
			continue
		}
		targets = append(targets, w.s)
	}
	if len(targets) == 0 {
		if c.name == "just" || c.name == "task" {
			c.class(Build, c.name+" runs the default recipe")
			return
		}
		c.class(Build, c.name+" builds the default target")
		return
	}
	for _, t := range targets {
		t = strings.ToLower(t)
		switch {
		case t == "install" && c.name == "make":
			c.class(Build, "make install installs what was built")
		case t == "distclean" || t == "mrproper" || t == "realclean":
			c.class(Destructive, c.name+" "+t+" deletes")
		default:
			cl, ok := scriptClass(t)
			if !ok || cl == Unknown || cl == Read {
				cl = Build
			}
			c.class(cl, c.name+" "+t+" ("+cl.Describe()+")")
		}
	}
}
