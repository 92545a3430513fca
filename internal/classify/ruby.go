package classify

import "strings"

func bundleTool(c *call) {
	sub, rest, _ := subcommand(c.args, "--gemfile")
	switch sub {
	case "", "install", "update", "add", "remove", "lock", "binstubs", "clean", "cache", "package":
		c.class(Dependency, "bundle "+sub+" changes dependencies")
	case "exec", "e":
		c.exec(rest)
	case "check", "list", "show", "info", "outdated", "config", "platform", "version", "licenses", "doctor":
		c.class(Read, "bundle "+sub+" only reads")
	default:
		c.class(Unknown, "bundle "+sub+" is not a command the analyser knows")
	}
}

func gemTool(c *call) {
	sub, _, _ := subcommand(c.args)
	switch sub {
	case "install", "uninstall", "update", "cleanup", "pristine":
		c.class(Dependency, "gem "+sub+" changes installed gems")
	case "build":
		c.class(Build, "gem build builds a gem")
	case "push", "owner", "yank", "signin", "fetch":
		c.class(Network, "gem "+sub+" talks to the registry")
	case "list", "query", "search", "info", "env", "contents", "dependency", "which", "specification", "help", "--version", "":
		c.class(Read, "gem "+sub+" only reads")
	default:
		c.class(Unknown, "gem "+sub+" is not a command the analyser knows")
	}
}

func railsTool(c *call) {
	sub, _, _ := subcommand(c.args)
	switch {
	case sub == "test" || sub == "spec" || strings.HasPrefix(sub, "test:"):
		c.class(Verify, "rails test runs the tests")
	case sub == "generate" || sub == "g" || sub == "destroy" || sub == "d" || sub == "new":
		c.class(Write, "rails "+sub+" writes files")
	case sub == "routes" || sub == "about" || sub == "stats" || sub == "notes" || sub == "--version" || sub == "":
		c.class(Read, "rails "+sub+" only reads")
	case strings.HasPrefix(sub, "assets:"):
		c.class(Build, "rails "+sub+" builds assets")
	default:
		c.class(Unknown, "rails "+sub+" runs application code")
	}
}
