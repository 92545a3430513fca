package devtools

import (
	"path"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/pkgrun"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

// Make-like tools: the targets say what happens.
var makeVarRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*=`)

func makeTool(c *engine.Call) {
	flags, pos := engine.Opts(c.Args, "-C", "-f", "--file", "--directory", "-j", "--jobs", "-l", "-o", "-W", "-I", "-t", "--taskfile", "-d", "--dir", "-E")
	if c.Name == "make" || c.Name == "gmake" {
		if engine.HasFlag(flags, "--eval") || slices.Contains(flags, "-E") {
			c.Class(engine.Unknown, c.Name+" --eval evaluates makefile text given on the line")
		}
	}
	if f := engine.FlagValue(c.Args, "-f", "--file", "--makefile"); f != nil {
		if p := c.Resolve(*f); !f.Static || !path.IsAbs(p) || !engine.InWorkspace(p) {
			c.Class(engine.Unknown, c.Name+" runs the recipes of "+f.Text+", outside the workspace")
		}
	}
	var targets []string
	for _, w := range pos {
		if makeVarRE().MatchString(w.Text) {
			// make puts its command-line variables in the recipes'
			// environment; SHELL is the program that runs each recipe.
			if v, ok := strings.CutPrefix(w.Text, "SHELL="); ok && (c.Name == "make" || c.Name == "gmake") {
				c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "make SHELL= runs every recipe with "+v)
				c.Shell(engine.Word{Text: v, Static: w.Static, Params: w.Params})
				c.Keep()
			} else {
				c.AssignArg(w)
			}
			continue
		}
		targets = append(targets, w.Text)
	}
	if len(targets) == 0 {
		if c.Name == "just" || c.Name == "task" {
			c.Class(engine.Build, c.Name+" runs the default recipe")
			return
		}
		c.Class(engine.Build, c.Name+" builds the default target")
		return
	}
	for _, t := range targets {
		t = strings.ToLower(t)
		switch {
		case t == "install" && c.Name == "make":
			c.Class(engine.Build, "make install installs what was built")
		case t == "distclean" || t == "mrproper" || t == "realclean":
			c.Class(engine.Destructive, c.Name+" "+t+" deletes")
		default:
			cl, ok := pkgrun.ScriptClass(t)
			if !ok || cl == engine.Unknown || cl == engine.Read {
				cl = engine.Build
			}
			c.Class(cl, c.Name+" "+t+" ("+cl.Describe()+")")
		}
	}
}
