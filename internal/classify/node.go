package classify

import "strings"

var npmAbbrev = map[string]string{
	"i": "install", "in": "install", "ins": "install", "inst": "install", "insta": "install", "instal": "install",
	"isnt": "install", "isnta": "install", "isntal": "install", "isntall": "install", "add": "install",
	"ci": "ci", "clean-install": "ci", "ic": "ci", "install-clean": "ci", "isntall-clean": "ci",
	"un": "uninstall", "unlink": "uninstall", "remove": "uninstall", "rm": "uninstall", "r": "uninstall",
	"up": "update", "upgrade": "update", "udpate": "update", "t": "test", "tst": "test",
	"run-script": "run", "rum": "run", "urn": "run", "x": "exec", "it": "install-test", "cit": "install-ci-test",
	"ddp": "dedupe", "ln": "link", "v": "view", "info": "view", "show": "view", "s": "search", "se": "search",
	"find": "search", "list": "ls", "la": "ls", "ll": "ls", "c": "config", "author": "owner",
}

var npmWithArg = []string{"--prefix", "-C", "-w", "--workspace", "--loglevel", "--registry", "--cache", "--userconfig", "--tag", "--otp", "--scope"}

func npmTool(c *call) {
	sub, rest, flags := subcommand(c.args, npmWithArg...)
	if full, ok := npmAbbrev[sub]; ok {
		sub = full
	}
	flagRegistry(c, flags)
	npmConfigFlags(c)
	switch sub {
	case "install", "uninstall", "update", "dedupe", "prune", "link", "ci", "rebuild", "shrinkwrap":
		c.class(Dependency, "npm "+sub+" changes dependencies")
	case "install-test", "install-ci-test":
		c.class(Dependency, "npm "+sub+" installs dependencies")
		c.class(Verify, "and runs the tests")
	case "test", "start", "stop", "restart":
		if sub == "test" {
			c.class(Verify, "npm test runs the tests")
		} else {
			c.class(Build, "npm "+sub+" runs the app")
		}
	case "run":
		runScript(c, "npm", firstPos(rest))
		extraFix(c, rest)
	case "exec":
		_, r := leadingCommand(rest, "-p", "--package", "-c", "--call")
		npxPackages(c, rest)
		if f := flagValue(rest, "-c", "--call"); f != nil {
			c.shell(*f)
			return
		}
		npxRun(c, r)
	case "publish", "unpublish", "deprecate", "dist-tag", "owner", "access", "login", "adduser", "logout",
		"token", "view", "search", "ping", "outdated", "audit", "doctor", "star", "stars", "team", "hook", "org", "profile", "whoami":
		c.class(Network, "npm "+sub+" talks to the registry")
		if sub == "unpublish" {
			c.class(Destructive, "npm unpublish deletes a published version")
		}
		if sub == "audit" && firstPos(rest) == "fix" {
			c.class(Dependency, "npm audit fix changes dependencies")
		}
		if sub == "token" || sub == "login" || sub == "adduser" {
			c.class(Secret, "npm "+sub+" handles registry credentials")
		}
	case "ls", "explain", "why", "prefix", "root", "bin", "help", "version", "query", "fund", "docs", "repo", "bugs", "help-search", "":
		if sub == "version" && firstPos(rest) != "" {
			c.class(Write, "npm version bumps the version")
			return
		}
		c.class(Read, "npm "+sub+" only reads")
	case "config", "get", "set":
		verb := firstPos(rest)
		if sub == "set" || verb == "set" || verb == "delete" || verb == "edit" {
			c.persist("npm config changes what later npm commands fetch and run")
		} else {
			c.class(Read, "npm config reads configuration")
		}
		if strings.Contains(strings.Join(strs(rest), " "), "_auth") || strings.Contains(strings.Join(strs(rest), " "), "token") {
			c.class(Secret, "npm config touches registry credentials")
		}
	case "cache":
		switch firstPos(rest) {
		case "clean", "rm", "clear":
			c.class(Destructive, "npm cache clean deletes the cache")
		default:
			c.class(Read, "npm cache inspects the cache")
		}
	case "pack":
		c.class(Build, "npm pack builds a tarball")
	case "init", "create", "innit", "pkg", "set-script":
		if sub == "pkg" && firstPos(rest) == "get" {
			c.class(Read, "npm pkg get only reads")
			return
		}
		if sub == "init" && len(rest) > 0 && !strings.HasPrefix(rest[0].s, "-") {
			c.class(Dependency, "npm init "+rest[0].s+" downloads and runs an initializer")
		}
		npmScriptsEdit(c, sub, rest)
		c.class(Write, "npm "+sub+" writes package.json")
	default:
		c.class(Unknown, "npm "+sub+" is not a command the analyser knows")
	}
}

// flagRegistry notes a registry named on the command line.
func flagRegistry(c *call, flags []string) {
	for i, f := range flags {
		if v, ok := strings.CutPrefix(f, "--registry="); ok {
			c.cmd.Hosts = appendUniq(c.cmd.Hosts, hostOf(v))
		} else if f == "--registry" && i+1 < len(flags) {
			c.cmd.Hosts = appendUniq(c.cmd.Hosts, hostOf(flags[i+1]))
		}
	}
}

func pnpmTool(c *call) {
	sub, rest, _ := subcommand(c.args, "-C", "--dir", "--filter", "-F", "--workspace-root", "--loglevel", "--reporter")
	switch sub {
	case "install", "i", "add", "remove", "rm", "un", "uninstall", "update", "up", "upgrade", "prune", "fetch", "dedupe", "import", "link", "unlink", "rebuild", "rb", "patch", "patch-commit":
		c.class(Dependency, "pnpm "+sub+" changes dependencies")
	case "test", "t", "tst":
		c.class(Verify, "pnpm test runs the tests")
	case "run", "run-script":
		runScript(c, "pnpm", firstPos(rest))
	case "exec":
		c.exec(rest)
	case "dlx", "create":
		if sub == "create" {
			c.class(Dependency, "pnpm create downloads and runs an initializer")
			c.class(Write, "")
			return
		}
		npxRun(c, rest)
	case "list", "ls", "ll", "la", "why", "root", "bin", "licenses", "":
		c.class(Read, "pnpm "+sub+" only reads")
	case "outdated", "audit", "publish", "view", "info", "login", "logout":
		c.class(Network, "pnpm "+sub+" talks to the registry")
	case "store":
		if firstPos(rest) == "prune" {
			c.class(Destructive, "pnpm store prune deletes the store")
			return
		}
		c.class(Read, "pnpm store inspects")
	case "start":
		c.class(Build, "pnpm start runs the app")
	case "config", "c", "get", "set":
		if v := firstPos(rest); sub == "set" || v == "set" || v == "delete" {
			c.persist("pnpm config changes what later pnpm commands fetch and run")
			return
		}
		c.class(Read, "pnpm config reads configuration")
	default:
		runScript(c, "pnpm", sub)
	}
}

func yarnTool(c *call) {
	sub, rest, _ := subcommand(c.args, "--cwd", "--modules-folder", "--cache-folder", "--mutex")
	switch sub {
	case "", "install", "add", "remove", "upgrade", "up", "upgrade-interactive", "dedupe", "import", "link", "unlink", "autoclean", "patch", "patch-commit":
		c.class(Dependency, "yarn "+sub+" changes dependencies")
	case "test":
		c.class(Verify, "yarn test runs the tests")
	case "run":
		runScript(c, "yarn", firstPos(rest))
	case "workspace":
		if len(rest) > 1 {
			c.exec(append([]word{{s: "yarn", static: true}}, rest[1:]...))
			return
		}
		c.class(Unknown, "yarn workspace without a command")
	case "workspaces":
		_, r := leadingCommand(skipN(rest, 1), "--include", "--exclude", "--since")
		if firstPos(rest) == "foreach" || firstPos(rest) == "run" {
			c.exec(append([]word{{s: "yarn", static: true}}, r...))
			return
		}
		c.class(Read, "yarn workspaces lists")
	case "dlx":
		npxRun(c, rest)
	case "exec":
		c.exec(rest)
	case "node":
		c.exec(append([]word{{s: "node", static: true}}, rest...))
	case "create":
		c.class(Dependency, "yarn create downloads and runs an initializer")
		c.class(Write, "")
	case "why", "list", "ls", "bin", "config", "licenses", "versions", "check":
		if v := firstPos(rest); sub == "config" && (v == "set" || v == "delete" || v == "unset") {
			c.persist("yarn config changes what later yarn commands fetch and run")
			return
		}
		c.class(Read, "yarn "+sub+" only reads")
	case "info", "npm", "publish", "login", "logout", "outdated", "audit", "owner", "tag", "team":
		c.class(Network, "yarn "+sub+" talks to the registry")
	case "cache":
		if firstPos(rest) == "clean" || firstPos(rest) == "clear" {
			c.class(Destructive, "yarn cache clean deletes the cache")
			return
		}
		c.class(Read, "yarn cache inspects")
	case "init":
		c.class(Write, "yarn init writes package.json")
	case "start":
		c.class(Build, "yarn start runs the app")
	default:
		runScript(c, "yarn", sub)
	}
}

func bunTool(c *call) {
	sub, rest, _ := subcommand(c.args, "--cwd", "-c", "--config")
	switch sub {
	case "install", "i", "add", "a", "remove", "rm", "update", "link", "unlink", "pm":
		c.class(Dependency, "bun "+sub+" changes dependencies")
	case "test":
		c.class(Verify, "bun test runs the tests")
	case "build":
		c.class(Build, "bun build bundles")
	case "run":
		s := firstPos(rest)
		if strings.Contains(s, ".") || strings.Contains(s, "/") {
			c.class(Unknown, "bun runs the file "+s)
			return
		}
		runScript(c, "bun", s)
	case "x":
		npxRun(c, rest)
	case "":
		c.class(Read, "bun alone")
	default:
		if strings.Contains(sub, ".") || strings.Contains(sub, "/") {
			c.class(Unknown, "bun runs the file "+sub)
			return
		}
		runScript(c, "bun", sub)
	}
}

func nodeTool(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-e" || s == "--eval" || s == "-p" || s == "--print":
			if i+1 < len(c.args) && c.args[i+1].static {
				c.inlineCode("node", c.args[i+1].s)
				return
			}
			c.class(Unknown, "node runs inline code")
			return
		case s == "--test":
			c.class(Verify, "node --test runs the tests")
			return
		case s == "-c" || s == "--check":
			c.class(Verify, "node --check checks syntax")
			return
		case s == "-v" || s == "--version" || s == "-h" || s == "--help":
			c.class(Read, "node prints its version")
			return
		case s == "-r" || s == "--require" || s == "--import" || s == "--loader" || s == "--env-file":
			if s == "--env-file" && i+1 < len(c.args) {
				c.class(Secret, "node loads an env file")
			}
			i++
		case strings.HasPrefix(s, "-"):
		default:
			c.runFile("node", c.args[i])
			return
		}
	}
	c.class(Unknown, "node reads code from its input")
}

func denoTool(c *call) {
	sub, _, _ := subcommand(c.args)
	switch sub {
	case "test", "lint", "check", "bench":
		c.class(Verify, "deno "+sub+" checks the code")
	case "fmt":
		checker(c, "deno fmt", "--check")
	case "compile", "bundle", "doc":
		c.class(Build, "deno "+sub+" builds")
	case "install", "add", "remove", "cache", "outdated", "uninstall":
		c.class(Dependency, "deno "+sub+" changes dependencies")
	case "info", "--version", "types", "completions":
		c.class(Read, "deno "+sub+" only reads")
	case "task":
		runScript(c, "deno", firstPos(skipN(c.args, 1)))
	default:
		c.class(Unknown, "deno runs code")
	}
}

func tscTool(c *call) {
	flags, _ := opts(c.args, "-p", "--project", "--outDir", "--target")
	switch {
	case hasFlag(flags, "--noEmit", "--noemit"):
		c.class(Verify, "tsc --noEmit type-checks")
	case hasFlag(flags, "-v", "--version", "-h", "--help", "--showConfig"):
		c.class(Read, "tsc prints")
	case hasFlag(flags, "--init"):
		c.class(Write, "tsc --init writes tsconfig.json")
	default:
		c.class(Build, "tsc compiles")
	}
}

func prettierTool(c *call) {
	flags, _ := opts(c.args, "--config", "--ignore-path", "--plugin")
	switch {
	case hasFlag(flags, "--write", "-w"):
		c.class(Write, "prettier --write rewrites files")
	case hasFlag(flags, "--check", "-c", "--list-different", "-l"):
		c.class(Verify, "prettier --check checks formatting")
	default:
		c.class(Read, "prettier prints formatted code")
	}
}

func biomeTool(c *call) {
	sub, _, _ := subcommand(c.args)
	flags, _ := opts(c.args)
	switch {
	case hasFlag(flags, "--write", "--apply", "--fix", "--apply-unsafe"):
		c.class(Write, "biome rewrites files")
	case sub == "format" && !hasFlag(flags, "--check"):
		c.class(Read, "biome format prints")
	default:
		c.class(Verify, "biome checks the code")
	}
}

// npmConfigFlags: npm takes any configuration as a flag; script-shell
// runs every script, node-options loads code into every node process,
// another userconfig or globalconfig file may set either.
func npmConfigFlags(c *call) {
	for i, w := range c.args {
		name, v, hasVal := strings.Cut(w.s, "=")
		val := word{s: v, static: w.static, params: w.params}
		if !hasVal && i+1 < len(c.args) {
			val = c.args[i+1]
		}
		switch name {
		case "--script-shell":
			c.cmd.Why = joinWhy(c.cmd.Why, "npm --script-shell runs the scripts with "+val.s)
			c.shell(val)
			c.Keep()
		case "--node-options":
			if _, unknown := envEffect("NODE_OPTIONS", val); unknown != "" {
				c.class(Unknown, unknown)
			}
		case "--userconfig", "--globalconfig":
			c.class(Unknown, "npm "+name+" reads configuration (a script shell, node options) from "+val.s)
		}
	}
}

func playwrightTool(c *call) {
	switch firstPos(c.args) {
	case "install", "install-deps":
		c.class(Dependency, "playwright install downloads browsers")
	case "test", "":
		c.class(Verify, "playwright runs the tests")
	default:
		c.class(Unknown, "playwright "+firstPos(c.args))
	}
}

// npmScriptsEdit: npm set-script, and npm pkg set/delete of scripts.*,
// bin, main or exports, change what later npm commands run.
func npmScriptsEdit(c *call, sub string, rest []word) {
	edit := sub == "set-script"
	if verb := firstPos(rest); sub == "pkg" && (verb == "set" || verb == "delete") {
		for _, w := range rest[1:] {
			k, _, _ := strings.Cut(w.s, "=")
			edit = edit || strings.HasPrefix(k, "scripts") || strings.HasPrefix(k, "bin") || k == "main" || strings.HasPrefix(k, "exports")
		}
	}
	if edit {
		c.persist("npm " + sub + " changes the package's scripts, which later npm commands run")
	}
}
