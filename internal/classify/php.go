package classify

func composerTool(c *call) {
	sub, rest, _ := subcommand(c.args, "-d", "--working-dir")
	switch sub {
	case "install", "i", "require", "update", "u", "upgrade", "remove", "rm", "reinstall", "bump":
		c.class(Dependency, "composer "+sub+" changes dependencies")
	case "dump-autoload", "dumpautoload":
		c.class(Build, "composer dump-autoload generates the autoloader")
	case "test":
		c.class(Verify, "composer test runs the tests")
	case "run-script", "run":
		runScript(c, "composer", firstPos(rest))
	case "show", "info", "validate", "diagnose", "licenses", "depends", "why", "why-not", "outdated", "audit", "check-platform-reqs", "--version", "":
		if sub == "validate" {
			c.class(Verify, "composer validate checks composer.json")
			return
		}
		c.class(Read, "composer "+sub+" only reads")
	case "create-project":
		c.class(Dependency, "composer create-project downloads a project")
		c.class(Write, "")
	default:
		runScript(c, "composer", sub)
	}
}
