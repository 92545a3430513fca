package devtools

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

func bundleTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "--gemfile")
	switch sub {
	case "", "install", "update", "add", "remove", "lock", "binstubs", "clean", "cache", "package":
		c.Class(engine.Dependency, "bundle "+sub+" changes dependencies")
	case "exec", "e":
		c.Exec(rest)
	case "check", "list", "show", "info", "outdated", "config", "platform", "version", "licenses", "doctor":
		c.Class(engine.Read, "bundle "+sub+" only reads")
	default:
		c.Class(engine.Unknown, "bundle "+sub+" is not a command the analyser knows")
	}
}

func gemTool(c *engine.Call) {
	sub, _, _ := engine.Subcommand(c.Args)
	switch sub {
	case "install", "uninstall", "update", "cleanup", "pristine":
		c.Class(engine.Dependency, "gem "+sub+" changes installed gems")
	case "build":
		c.Class(engine.Build, "gem build builds a gem")
	case "push", "owner", "yank", "signin", "fetch":
		c.Class(engine.Network, "gem "+sub+" talks to the registry")
	case "list", "query", "search", "info", "env", "contents", "dependency", "which", "specification", "help", "--version", "":
		c.Class(engine.Read, "gem "+sub+" only reads")
	default:
		c.Class(engine.Unknown, "gem "+sub+" is not a command the analyser knows")
	}
}

func railsTool(c *engine.Call) {
	sub, _, _ := engine.Subcommand(c.Args)
	switch {
	case sub == "test" || sub == "spec" || strings.HasPrefix(sub, "test:"):
		c.Class(engine.Verify, "rails test runs the tests")
	case sub == "generate" || sub == "g" || sub == "destroy" || sub == "d" || sub == "new":
		c.Class(engine.Write, "rails "+sub+" writes files")
	case sub == "routes" || sub == "about" || sub == "stats" || sub == "notes" || sub == "--version" || sub == "":
		c.Class(engine.Read, "rails "+sub+" only reads")
	case strings.HasPrefix(sub, "assets:"):
		c.Class(engine.Build, "rails "+sub+" builds assets")
	default:
		c.Class(engine.Unknown, "rails "+sub+" runs application code")
	}
}
