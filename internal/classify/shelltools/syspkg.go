package shelltools

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

func pkgTool(c *engine.Call) {
	sub, _, _ := engine.Subcommand(c.Args, "-o", "-c", "-t", "--target-release")
	switch sub {
	case "list", "search", "show", "policy", "info", "depends", "rdepends", "query", "-Q", "-Qi", "-Ss", "-Si", "madison", "":
		c.Class(engine.Read, c.Name+" "+sub+" only reads")
	case "autoremove", "purge", "clean", "autoclean", "cleanup":
		c.Class(engine.Dependency, c.Name+" "+sub+" removes packages or caches")
	default:
		c.Class(engine.Dependency, c.Name+" "+sub+" changes system packages")
	}
}

func dpkgTool(c *engine.Call) {
	flags, _ := engine.Opts(c.Args)
	switch {
	case engine.HasFlag(flags, "-i", "--install", "-r", "--remove", "-P", "--purge", "--configure", "--unpack"):
		c.Class(engine.Dependency, "dpkg changes system packages")
	default:
		c.Class(engine.Read, "dpkg only reads")
	}
}
