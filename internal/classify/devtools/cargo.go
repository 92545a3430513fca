package devtools

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

func cargoTool(c *engine.Call) {
	args := c.Args
	if len(args) > 0 && strings.HasPrefix(args[0].Text, "+") {
		args = args[1:]
	}
	sub, rest, _ := engine.Subcommand(args, "--manifest-path", "-Z", "--config", "-C", "--color")
	flags, _ := engine.Opts(rest)
	switch sub {
	case "build", "b", "rustc", "doc", "d", "run", "r":
		c.Class(engine.Build, "cargo "+sub+" builds")
	case "test", "t", "check", "c", "bench", "nextest", "miri", "audit", "deny":
		c.Class(engine.Verify, "cargo "+sub+" checks the code")
	case "clippy":
		if engine.HasFlag(flags, "--fix") {
			c.Class(engine.Write, "cargo clippy --fix rewrites files")
			return
		}
		c.Class(engine.Verify, "cargo clippy lints")
	case "fmt":
		engine.Checker(c, "cargo fmt", "--check")
	case "fix":
		c.Class(engine.Write, "cargo fix rewrites files")
	case "add", "remove", "rm", "update", "install", "fetch", "generate-lockfile", "vendor", "uninstall":
		c.Class(engine.Dependency, "cargo "+sub+" changes dependencies")
	case "publish", "login", "logout", "owner", "yank", "search":
		c.Class(engine.Network, "cargo "+sub+" talks to the registry")
	case "clean":
		c.Class(engine.Write, "cargo clean removes the build directory, which the next build makes again")
	case "metadata", "tree", "version", "pkgid", "locate-project", "read-manifest", "verify-project", "--version", "-V", "help", "":
		c.Class(engine.Read, "cargo "+sub+" only reads")
	case "new", "init":
		c.Class(engine.Write, "cargo "+sub+" creates a package")
	default:
		c.Class(engine.Unknown, "cargo "+sub+" is not a command the analyser knows")
	}
}
