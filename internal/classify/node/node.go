package node

import (
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/pkgrun"
)

var npmAbbrev = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"i": "install", "in": "install", "ins": "install", "inst": "install", "insta": "install", "instal": "install",
		"isnt": "install", "isnta": "install", "isntal": "install", "isntall": "install", "add": "install",
		"ci": "ci", "clean-install": "ci", "ic": "ci", "install-clean": "ci", "isntall-clean": "ci",
		"un": "uninstall", "unlink": "uninstall", "remove": "uninstall", "rm": "uninstall", "r": "uninstall",
		"up": "update", "upgrade": "update", "udpate": "update", "t": "test", "tst": "test",
		"run-script": "run", "rum": "run", "urn": "run", "x": "exec", "it": "install-test", "cit": "install-ci-test",
		"ddp": "dedupe", "ln": "link", "v": "view", "info": "view", "show": "view", "s": "search", "se": "search",
		"find": "search", "list": "ls", "la": "ls", "ll": "ls", "c": "config", "author": "owner",
	}
})

var npmWithArg = []string{"--prefix", "-C", "-w", "--workspace", "--loglevel", "--registry", "--cache", "--userconfig", "--tag", "--otp", "--scope"}

func npmTool(c *engine.Call) {
	sub, rest, flags := engine.Subcommand(c.Args, npmWithArg...)
	if full, ok := npmAbbrev()[sub]; ok {
		sub = full
	}
	flagRegistry(c, flags)
	npmConfigFlags(c)
	switch sub {
	case "install", "uninstall", "update", "dedupe", "prune", "link", "ci", "rebuild", "shrinkwrap":
		c.Class(engine.Dependency, "npm "+sub+" changes dependencies")
	case "install-test", "install-ci-test":
		c.Class(engine.Dependency, "npm "+sub+" installs dependencies")
		c.Class(engine.Verify, "and runs the tests")
	case "test", "start", "stop", "restart":
		if sub == "test" {
			c.Class(engine.Verify, "npm test runs the tests")
		} else {
			c.Class(engine.Build, "npm "+sub+" runs the app")
		}
	case "run":
		pkgrun.RunScript(c, "npm", engine.FirstPos(rest))
		pkgrun.ExtraFix(c, rest)
	case "exec":
		_, r := engine.LeadingCommand(rest, "-p", "--package", "-c", "--call")
		pkgrun.PackageFlags(c, rest)
		if f := engine.FlagValue(rest, "-c", "--call"); f != nil {
			c.Shell(*f)
			return
		}
		pkgrun.RunPackage(c, r)
	case "publish", "unpublish", "deprecate", "dist-tag", "owner", "access", "login", "adduser", "logout",
		"token", "view", "search", "ping", "outdated", "audit", "doctor", "star", "stars", "team", "hook", "org", "profile", "whoami":
		c.Class(engine.Network, "npm "+sub+" talks to the registry")
		if sub == "unpublish" {
			c.Class(engine.Destructive, "npm unpublish deletes a published version")
		}
		if sub == "audit" && engine.FirstPos(rest) == "fix" {
			c.Class(engine.Dependency, "npm audit fix changes dependencies")
		}
		if sub == "token" || sub == "login" || sub == "adduser" {
			c.Class(engine.Secret, "npm "+sub+" handles registry credentials")
		}
	case "ls", "explain", "why", "prefix", "root", "bin", "help", "version", "query", "fund", "docs", "repo", "bugs", "help-search", "":
		if sub == "version" && engine.FirstPos(rest) != "" {
			c.Class(engine.Write, "npm version bumps the version")
			return
		}
		c.Class(engine.Read, "npm "+sub+" only reads")
	case "config", "get", "set":
		verb := engine.FirstPos(rest)
		if sub == "set" || verb == "set" || verb == "delete" || verb == "edit" {
			c.Persist("npm config changes what later npm commands fetch and run")
		} else {
			c.Class(engine.Read, "npm config reads configuration")
		}
		if strings.Contains(strings.Join(engine.Strs(rest), " "), "_auth") || strings.Contains(strings.Join(engine.Strs(rest), " "), "token") {
			c.Class(engine.Secret, "npm config touches registry credentials")
		}
	case "cache":
		switch engine.FirstPos(rest) {
		case "clean", "rm", "clear":
			c.Class(engine.Destructive, "npm cache clean deletes the cache")
		default:
			c.Class(engine.Read, "npm cache inspects the cache")
		}
	case "pack":
		c.Class(engine.Build, "npm pack builds a tarball")
	case "init", "create", "innit", "pkg", "set-script":
		if sub == "pkg" && engine.FirstPos(rest) == "get" {
			c.Class(engine.Read, "npm pkg get only reads")
			return
		}
		if sub == "init" && len(rest) > 0 && !strings.HasPrefix(rest[0].Text, "-") {
			c.Class(engine.Dependency, "npm init "+rest[0].Text+" downloads and runs an initializer")
		}
		npmScriptsEdit(c, sub, rest)
		c.Class(engine.Write, "npm "+sub+" writes package.json")
	default:
		c.Class(engine.Unknown, "npm "+sub+" is not a command the analyser knows")
	}
}

// flagRegistry notes a registry named on the command line.
func flagRegistry(c *engine.Call, flags []string) {
	for i, f := range flags {
		if v, ok := strings.CutPrefix(f, "--registry="); ok {
			c.Cmd.Hosts = engine.AppendUniq(c.Cmd.Hosts, engine.HostOf(v))
		} else if f == "--registry" && i+1 < len(flags) {
			c.Cmd.Hosts = engine.AppendUniq(c.Cmd.Hosts, engine.HostOf(flags[i+1]))
		}
	}
}

func pnpmTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "-C", "--dir", "--filter", "-F", "--workspace-root", "--loglevel", "--reporter")
	switch sub {
	case "install", "i", "add", "remove", "rm", "un", "uninstall", "update", "up", "upgrade", "prune", "fetch", "dedupe", "import", "link", "unlink", "rebuild", "rb", "patch", "patch-commit":
		c.Class(engine.Dependency, "pnpm "+sub+" changes dependencies")
	case "test", "t", "tst":
		c.Class(engine.Verify, "pnpm test runs the tests")
	case "run", "run-script":
		pkgrun.RunScript(c, "pnpm", engine.FirstPos(rest))
	case "exec":
		c.Exec(rest)
	case "dlx", "create":
		if sub == "create" {
			c.Class(engine.Dependency, "pnpm create downloads and runs an initializer")
			c.Class(engine.Write, "")
			return
		}
		pkgrun.RunPackage(c, rest)
	case "list", "ls", "ll", "la", "why", "root", "bin", "licenses", "":
		c.Class(engine.Read, "pnpm "+sub+" only reads")
	case "outdated", "audit", "publish", "view", "info", "login", "logout":
		c.Class(engine.Network, "pnpm "+sub+" talks to the registry")
	case "store":
		if engine.FirstPos(rest) == "prune" {
			c.Class(engine.Destructive, "pnpm store prune deletes the store")
			return
		}
		c.Class(engine.Read, "pnpm store inspects")
	case "start":
		c.Class(engine.Build, "pnpm start runs the app")
	case "config", "c", "get", "set":
		if v := engine.FirstPos(rest); sub == "set" || v == "set" || v == "delete" {
			c.Persist("pnpm config changes what later pnpm commands fetch and run")
			return
		}
		c.Class(engine.Read, "pnpm config reads configuration")
	default:
		pkgrun.RunScript(c, "pnpm", sub)
	}
}

func yarnTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "--cwd", "--modules-folder", "--cache-folder", "--mutex")
	switch sub {
	case "", "install", "add", "remove", "upgrade", "up", "upgrade-interactive", "dedupe", "import", "link", "unlink", "autoclean", "patch", "patch-commit":
		c.Class(engine.Dependency, "yarn "+sub+" changes dependencies")
	case "test":
		c.Class(engine.Verify, "yarn test runs the tests")
	case "run":
		pkgrun.RunScript(c, "yarn", engine.FirstPos(rest))
	case "workspace":
		if len(rest) > 1 {
			c.Exec(append([]engine.Word{{Text: "yarn", Static: true}}, rest[1:]...))
			return
		}
		c.Class(engine.Unknown, "yarn workspace without a command")
	case "workspaces":
		_, r := engine.LeadingCommand(engine.SkipN(rest, 1), "--include", "--exclude", "--since")
		if engine.FirstPos(rest) == "foreach" || engine.FirstPos(rest) == "run" {
			c.Exec(append([]engine.Word{{Text: "yarn", Static: true}}, r...))
			return
		}
		c.Class(engine.Read, "yarn workspaces lists")
	case "dlx":
		pkgrun.RunPackage(c, rest)
	case "exec":
		c.Exec(rest)
	case "node":
		c.Exec(append([]engine.Word{{Text: "node", Static: true}}, rest...))
	case "create":
		c.Class(engine.Dependency, "yarn create downloads and runs an initializer")
		c.Class(engine.Write, "")
	case "why", "list", "ls", "bin", "config", "licenses", "versions", "check":
		if v := engine.FirstPos(rest); sub == "config" && (v == "set" || v == "delete" || v == "unset") {
			c.Persist("yarn config changes what later yarn commands fetch and run")
			return
		}
		c.Class(engine.Read, "yarn "+sub+" only reads")
	case "info", "npm", "publish", "login", "logout", "outdated", "audit", "owner", "tag", "team":
		c.Class(engine.Network, "yarn "+sub+" talks to the registry")
	case "cache":
		if engine.FirstPos(rest) == "clean" || engine.FirstPos(rest) == "clear" {
			c.Class(engine.Destructive, "yarn cache clean deletes the cache")
			return
		}
		c.Class(engine.Read, "yarn cache inspects")
	case "init":
		c.Class(engine.Write, "yarn init writes package.json")
	case "start":
		c.Class(engine.Build, "yarn start runs the app")
	default:
		pkgrun.RunScript(c, "yarn", sub)
	}
}

func bunTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "--cwd", "-c", "--config")
	switch sub {
	case "install", "i", "add", "a", "remove", "rm", "update", "link", "unlink", "pm":
		c.Class(engine.Dependency, "bun "+sub+" changes dependencies")
	case "test":
		c.Class(engine.Verify, "bun test runs the tests")
	case "build":
		c.Class(engine.Build, "bun build bundles")
	case "run":
		s := engine.FirstPos(rest)
		if strings.Contains(s, ".") || strings.Contains(s, "/") {
			c.Class(engine.Unknown, "bun runs the file "+s)
			return
		}
		pkgrun.RunScript(c, "bun", s)
	case "x":
		pkgrun.RunPackage(c, rest)
	case "":
		c.Class(engine.Read, "bun alone")
	default:
		if strings.Contains(sub, ".") || strings.Contains(sub, "/") {
			c.Class(engine.Unknown, "bun runs the file "+sub)
			return
		}
		pkgrun.RunScript(c, "bun", sub)
	}
}

func nodeTool(c *engine.Call) {
	for i := 0; i < len(c.Args); i++ {
		s := c.Args[i].Text
		switch {
		case s == "-e" || s == "--eval" || s == "-p" || s == "--print":
			if i+1 < len(c.Args) && c.Args[i+1].Static {
				c.InlineCode("node", c.Args[i+1].Text)
				return
			}
			c.Class(engine.Unknown, "node runs inline code")
			return
		case s == "--test":
			c.Class(engine.Verify, "node --test runs the tests")
			return
		case s == "-c" || s == "--check":
			c.Class(engine.Verify, "node --check checks syntax")
			return
		case s == "-v" || s == "--version" || s == "-h" || s == "--help":
			c.Class(engine.Read, "node prints its version")
			return
		case s == "-r" || s == "--require" || s == "--import" || s == "--loader" || s == "--env-file":
			if s == "--env-file" && i+1 < len(c.Args) {
				c.Class(engine.Secret, "node loads an env file")
			}
			i++
		case strings.HasPrefix(s, "-"):
		default:
			c.RunFile("node", c.Args[i])
			return
		}
	}
	c.Class(engine.Unknown, "node reads code from its input")
}

func denoTool(c *engine.Call) {
	sub, _, _ := engine.Subcommand(c.Args)
	switch sub {
	case "test", "lint", "check", "bench":
		c.Class(engine.Verify, "deno "+sub+" checks the code")
	case "fmt":
		engine.Checker(c, "deno fmt", "--check")
	case "compile", "bundle", "doc":
		c.Class(engine.Build, "deno "+sub+" builds")
	case "install", "add", "remove", "cache", "outdated", "uninstall":
		c.Class(engine.Dependency, "deno "+sub+" changes dependencies")
	case "info", "--version", "types", "completions":
		c.Class(engine.Read, "deno "+sub+" only reads")
	case "task":
		pkgrun.RunScript(c, "deno", engine.FirstPos(engine.SkipN(c.Args, 1)))
	default:
		c.Class(engine.Unknown, "deno runs code")
	}
}

func tscTool(c *engine.Call) {
	flags, _ := engine.Opts(c.Args, "-p", "--project", "--outDir", "--target")
	switch {
	case engine.HasFlag(flags, "--noEmit", "--noemit"):
		c.Class(engine.Verify, "tsc --noEmit type-checks")
	case engine.HasFlag(flags, "-v", "--version", "-h", "--help", "--showConfig"):
		c.Class(engine.Read, "tsc prints")
	case engine.HasFlag(flags, "--init"):
		c.Class(engine.Write, "tsc --init writes tsconfig.json")
	default:
		c.Class(engine.Build, "tsc compiles")
	}
}

func prettierTool(c *engine.Call) {
	flags, _ := engine.Opts(c.Args, "--config", "--ignore-path", "--plugin")
	switch {
	case engine.HasFlag(flags, "--write", "-w"):
		c.Class(engine.Write, "prettier --write rewrites files")
	case engine.HasFlag(flags, "--check", "-c", "--list-different", "-l"):
		c.Class(engine.Verify, "prettier --check checks formatting")
	default:
		c.Class(engine.Read, "prettier prints formatted code")
	}
}

func biomeTool(c *engine.Call) {
	sub, _, _ := engine.Subcommand(c.Args)
	flags, _ := engine.Opts(c.Args)
	switch {
	case engine.HasFlag(flags, "--write", "--apply", "--fix", "--apply-unsafe"):
		c.Class(engine.Write, "biome rewrites files")
	case sub == "format" && !engine.HasFlag(flags, "--check"):
		c.Class(engine.Read, "biome format prints")
	default:
		c.Class(engine.Verify, "biome checks the code")
	}
}

// npmConfigFlags: npm takes any configuration as a flag; script-shell
// runs every script, node-options loads code into every node process,
// another userconfig or globalconfig file may set either.
func npmConfigFlags(c *engine.Call) {
	for i, w := range c.Args {
		name, v, hasVal := strings.Cut(w.Text, "=")
		val := engine.Word{Text: v, Static: w.Static, Params: w.Params}
		if !hasVal && i+1 < len(c.Args) {
			val = c.Args[i+1]
		}
		switch name {
		case "--script-shell":
			c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "npm --script-shell runs the scripts with "+val.Text)
			c.Shell(val)
			c.Keep()
		case "--node-options":
			if _, unknown := engine.EnvEffect("NODE_OPTIONS", val); unknown != "" {
				c.Class(engine.Unknown, unknown)
			}
		case "--userconfig", "--globalconfig":
			c.Class(engine.Unknown, "npm "+name+" reads configuration (a script shell, node options) from "+val.Text)
		}
	}
}

func playwrightTool(c *engine.Call) {
	switch engine.FirstPos(c.Args) {
	case "install", "install-deps":
		c.Class(engine.Dependency, "playwright install downloads browsers")
	case "test", "":
		c.Class(engine.Verify, "playwright runs the tests")
	default:
		c.Class(engine.Unknown, "playwright "+engine.FirstPos(c.Args))
	}
}

// npmScriptsEdit: npm set-script, and npm pkg set/delete of scripts.*,
// bin, main or exports, change what later npm commands run.
func npmScriptsEdit(c *engine.Call, sub string, rest []engine.Word) {
	edit := sub == "set-script"
	if verb := engine.FirstPos(rest); sub == "pkg" && (verb == "set" || verb == "delete") {
		for _, w := range rest[1:] {
			k, _, _ := strings.Cut(w.Text, "=")
			edit = edit || strings.HasPrefix(k, "scripts") || strings.HasPrefix(k, "bin") || k == "main" || strings.HasPrefix(k, "exports")
		}
	}
	if edit {
		c.Persist("npm " + sub + " changes the package's scripts, which later npm commands run")
	}
}
