package devtools

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/pkgrun"
)

func composerTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "-d", "--working-dir")
	switch sub {
	case "install", "i", "require", "update", "u", "upgrade", "remove", "rm", "reinstall", "bump":
		c.Class(engine.Dependency, "composer "+sub+" changes dependencies")
	case "dump-autoload", "dumpautoload":
		c.Class(engine.Build, "composer dump-autoload generates the autoloader")
	case "test":
		c.Class(engine.Verify, "composer test runs the tests")
	case "run-script", "run":
		pkgrun.RunScript(c, "composer", engine.FirstPos(rest))
	case "show", "info", "validate", "diagnose", "licenses", "depends", "why", "why-not", "outdated", "audit", "check-platform-reqs", "--version", "":
		if sub == "validate" {
			c.Class(engine.Verify, "composer validate checks composer.json")
			return
		}
		c.Class(engine.Read, "composer "+sub+" only reads")
	case "create-project":
		c.Class(engine.Dependency, "composer create-project downloads a project")
		c.Class(engine.Write, "")
	default:
		pkgrun.RunScript(c, "composer", sub)
	}
}
