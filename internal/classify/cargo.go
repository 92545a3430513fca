package classify

import "strings"

func cargoTool(c *call) {
	args := c.args
	if len(args) > 0 && strings.HasPrefix(args[0].s, "+") {
		args = args[1:]
	}
	sub, rest, _ := subcommand(args, "--manifest-path", "-Z", "--config", "-C", "--color")
	flags, _ := opts(rest)
	switch sub {
	case "build", "b", "rustc", "doc", "d", "run", "r":
		c.class(Build, "cargo "+sub+" builds")
	case "test", "t", "check", "c", "bench", "nextest", "miri", "audit", "deny":
		c.class(Verify, "cargo "+sub+" checks the code")
	case "clippy":
		if hasFlag(flags, "--fix") {
			c.class(Write, "cargo clippy --fix rewrites files")
			return
		}
		c.class(Verify, "cargo clippy lints")
	case "fmt":
		checker(c, "cargo fmt", "--check")
	case "fix":
		c.class(Write, "cargo fix rewrites files")
	case "add", "remove", "rm", "update", "install", "fetch", "generate-lockfile", "vendor", "uninstall":
		c.class(Dependency, "cargo "+sub+" changes dependencies")
	case "publish", "login", "logout", "owner", "yank", "search":
		c.class(Network, "cargo "+sub+" talks to the registry")
	case "clean":
		c.class(Write, "cargo clean removes the build directory, which the next build makes again")
	case "metadata", "tree", "version", "pkgid", "locate-project", "read-manifest", "verify-project", "--version", "-V", "help", "":
		c.class(Read, "cargo "+sub+" only reads")
	case "new", "init":
		c.class(Write, "cargo "+sub+" creates a package")
	default:
		c.class(Unknown, "cargo "+sub+" is not a command the analyser knows")
	}
}
