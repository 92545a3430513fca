package policy

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// subcommand skips global options (withArg ones take a value) and returns
// the subcommand and the words after it.
func subcommand(args []word, withArg ...string) (string, []word, []string) {
	var flags []string
	for i := 0; i < len(args); i++ {
		s := args[i].s
		if s == "--" {
			if i+1 < len(args) {
				return args[i+1].s, args[i+2:], flags
			}
			return "", nil, flags
		}
		if strings.HasPrefix(s, "-") && len(s) > 1 {
			flags = append(flags, s)
			if !strings.Contains(s, "=") && contains(withArg, s) && i+1 < len(args) {
				flags = append(flags, args[i+1].s)
				i++
			}
			continue
		}
		return s, args[i+1:], flags
	}
	return "", nil, flags
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Git.

func gitTool(c *call) {
	gitGlobal(c)
	sub, rest, _ := subcommand(c.args, "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--list-cmds", "--attr-source")
	flags, pos := opts(rest)
	force := hasFlag(flags, "-f", "--force")
	why := "git " + sub
	switch sub {
	case "clean", "check-ignore", "ls-files":
		c.namesOnly = true
	}
	switch sub {
	case "", "status", "diff", "log", "show", "blame", "rev-parse", "ls-files", "ls-tree", "cat-file",
		"describe", "shortlog", "grep", "whatchanged", "show-ref", "for-each-ref", "name-rev", "merge-base",
		"rev-list", "count-objects", "var", "check-ignore", "check-attr", "version", "help", "range-diff",
		"annotate", "diff-tree", "diff-index", "diff-files", "cherry", "show-branch", "verify-commit",
		"verify-tag", "fsck", "check-ref-format", "--version", "--help", "-h":
		c.class(Read, why+" only reads")
		if sub == "grep" {
			gitGrepPager(c, rest)
		}
		if f := flagValue(rest, "--output"); f != nil {
			c.class(Write, why+" writes "+f.s)
			c.write(*f)
		}
	case "branch":
		switch {
		case hasFlag(flags, "-D") || hasFlag(flags, "--delete") && force:
			c.class(Destructive, "git branch -D deletes a branch")
		case hasFlag(flags, "-d", "--delete", "-m", "-M", "-c", "-C", "--move", "--copy", "-u", "--set-upstream-to", "--unset-upstream", "--edit-description"):
			c.class(Write, "git branch changes branches")
		case len(pos) > 0 && !hasFlag(flags, "--list", "-l", "--contains", "--merged", "--no-merged", "--points-at"):
			c.class(Write, "git branch creates a branch")
		default:
			c.class(Read, "git branch lists branches")
		}
	case "tag":
		switch {
		case hasFlag(flags, "-d", "--delete"):
			c.class(Destructive, "git tag -d deletes a tag")
		case len(pos) > 0 && !hasFlag(flags, "-l", "--list", "--contains", "--points-at", "-n", "--merged"):
			c.class(Write, "git tag creates a tag")
		default:
			c.class(Read, "git tag lists tags")
		}
	case "remote":
		switch firstPos(rest) {
		case "", "show", "get-url":
			c.class(Read, "git remote lists remotes")
		case "update", "prune":
			c.class(Network, "git remote "+firstPos(rest)+" fetches")
		default:
			c.class(Write, "git remote changes remotes")
		}
	case "config":
		gitConfig(c, rest)
	case "add", "commit", "mv", "apply", "am", "cherry-pick", "merge", "rebase", "revert", "notes",
		"init", "bisect", "update-index", "sparse-checkout", "gc", "repack", "pack-refs", "replace",
		"commit-tree", "hash-object", "write-tree", "read-tree", "mktag", "rerere", "format-patch", "maintenance":
		c.class(Write, why+" changes the repository")
		if sub == "bisect" && firstPos(rest) == "run" {
			_, cmd := leadingCommand(skipN(rest, 1))
			c.exec(cmd)
			c.delegated = false
		}
		if x := flagValue(rest, "-x", "--exec"); x != nil && sub == "rebase" {
			c.shell(*x)
			c.delegated = false
		}
		if sub == "apply" || sub == "am" {
			if d := flagValue(rest, "--directory"); d != nil {
				c.write(*d)
			}
		}
		if sub == "init" {
			gitNewRepo(c, rest, false)
		}
		if sub == "format-patch" {
			if f := flagValue(rest, "-o", "--output-directory"); f != nil {
				c.write(*f)
			}
		}
	case "rm":
		if hasFlag(flags, "--cached") {
			c.class(Write, "git rm --cached unstages")
			return
		}
		c.class(Destructive, "git rm deletes files")
		c.write(pos...)
	case "switch":
		if force || hasFlag(flags, "--discard-changes") {
			c.class(Destructive, "git switch --force discards changes")
			return
		}
		c.class(Write, "git switch changes branch")
	case "checkout":
		dashdash := false
		for _, w := range rest {
			if w.s == "--" {
				dashdash = true
			}
		}
		switch {
		case force:
			c.class(Destructive, "git checkout --force discards changes")
		case hasFlag(flags, "-b", "-B", "--orphan"):
			c.class(Write, "git checkout -b creates a branch")
		case dashdash || (len(pos) > 0 && (pos[len(pos)-1].s == "." || strings.ContainsAny(pos[len(pos)-1].s, "/*") || len(pos) > 1)):
			c.class(Destructive, "git checkout of paths discards uncommitted changes")
			c.write(pos...)
		default:
			c.class(Write, "git checkout changes branch")
		}
	case "restore":
		if (hasFlag(flags, "--staged", "-S") && !hasFlag(flags, "--worktree", "-W")) || len(pos) == 0 {
			c.class(Write, "git restore --staged unstages")
			return
		}
		c.class(Destructive, "git restore discards uncommitted changes")
		c.write(pos...)
	case "reset":
		if hasFlag(flags, "--hard", "--merge", "--keep") {
			c.class(Destructive, "git reset --hard discards work")
			return
		}
		c.class(Write, "git reset moves HEAD or unstages")
	case "clean":
		if hasFlag(flags, "-n", "--dry-run") {
			c.class(Read, "git clean -n only lists")
			return
		}
		c.class(Destructive, "git clean deletes untracked files")
	case "stash":
		switch firstPos(rest) {
		case "drop", "clear":
			c.class(Destructive, "git stash "+firstPos(rest)+" deletes stashed work")
		case "list", "show":
			c.class(Read, "git stash "+firstPos(rest)+" only reads")
		default:
			c.class(Write, "git stash saves or applies work")
		}
	case "worktree":
		verb := firstPos(rest)
		_, wpos := opts(skipN(rest, 1), "-b", "-B", "--reason")
		switch verb {
		case "list":
			c.class(Read, "git worktree list")
		case "remove", "prune":
			c.class(Destructive, "git worktree "+verb+" deletes a worktree")
			if verb == "remove" {
				c.write(wpos...)
			}
		default:
			c.class(Write, "git worktree changes worktrees")
			switch {
			case verb == "add" && len(wpos) > 0:
				c.write(wpos[0])
			case verb == "move" && len(wpos) > 1:
				c.write(wpos[1])
			}
		}
	case "reflog":
		switch firstPos(rest) {
		case "expire", "delete":
			c.class(Destructive, "git reflog "+firstPos(rest)+" drops history")
		default:
			c.class(Read, "git reflog only reads")
		}
	case "filter-branch", "filter-repo", "prune":
		c.class(Destructive, why+" rewrites or drops history")
	case "update-ref":
		if hasFlag(flags, "-d") {
			c.class(Destructive, "git update-ref -d deletes a ref")
			return
		}
		c.class(Write, "git update-ref moves a ref")
	case "push":
		c.class(Network, "git push sends to a remote")
		if force || hasFlag(flags, "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "-d", "--prune") {
			c.class(Destructive, "git push --force overwrites the remote's history")
		}
		for _, w := range pos {
			if strings.HasPrefix(w.s, "+") || strings.HasPrefix(w.s, ":") {
				c.class(Destructive, "git push of "+w.s+" overwrites or deletes a remote ref")
			}
		}
	case "clone", "fetch", "pull", "ls-remote", "send-email", "request-pull", "archive":
		if sub == "clone" {
			gitNewRepo(c, rest, true)
		}
		if sub == "archive" && flagValue(rest, "--remote") == nil {
			c.class(Write, "git archive writes an archive")
			return
		}
		c.class(Network, why+" talks to a remote")
	case "submodule":
		switch firstPos(rest) {
		case "foreach":
			_, cmd := leadingCommand(skipN(rest, 1))
			c.shell(joinWords(cmd))
		case "", "status", "summary":
			c.class(Read, "git submodule lists")
		case "init", "deinit", "set-url", "set-branch", "absorbgitdirs":
			c.class(Write, "git submodule changes configuration")
		default:
			c.class(Network, "git submodule "+firstPos(rest)+" fetches")
		}
	case "lfs":
		switch firstPos(rest) {
		case "pull", "fetch", "push", "clone":
			c.class(Network, "git lfs transfers objects")
		case "ls-files", "status", "env", "version":
			c.class(Read, "git lfs lists")
		default:
			c.class(Write, "git lfs changes configuration")
		}
	case "credential", "credential-store", "credential-cache":
		c.class(Secret, "git credential reads stored credentials")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "git credentials")
	default:
		c.class(Unknown, "git "+sub+" is not a command the analyser knows (an alias?)")
	}
}

func gitConfig(c *call, rest []word) {
	flags, pos := opts(rest, "-f", "--file", "--blob", "--type", "--default", "--comment", "--value")
	verb := ""
	if len(pos) > 0 {
		switch pos[0].s {
		case "set", "get", "list", "unset", "rename-section", "remove-section", "edit":
			verb, pos = pos[0].s, pos[1:] // git 2.46's subcommands
		}
	}
	key := ""
	if len(pos) > 0 {
		key = strings.ToLower(pos[0].s)
	}
	setting := verb == "set" || verb == "" && len(pos) >= 2 && !hasFlag(flags, "--get", "--get-all", "--get-regexp", "--unset", "--unset-all",
		"--list", "-l", "--get-urlmatch", "--rename-section", "--remove-section", "--show-origin", "--get-color", "--get-colorbool")
	if setting && len(pos) >= 2 {
		gitSetting(c, pos[0].s, pos[1])
		if f := flagValue(rest, "-f", "--file"); f != nil {
			c.write(*f)
		}
	}
	switch verb {
	case "set", "unset", "rename-section", "remove-section", "edit":
		c.class(Write, "git config "+verb+" changes configuration")
	case "get", "list":
		c.class(Read, "git config reads configuration")
	}
	if strings.Contains(key, "credential") || strings.Contains(key, "token") || strings.Contains(key, "password") || strings.HasSuffix(key, ".extraheader") {
		c.class(Secret, "git config "+key+" touches credentials")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "git config "+key)
	}
	switch {
	case hasFlag(flags, "--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit"):
		c.class(Write, "git config changes configuration")
	case hasFlag(flags, "--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--get-urlmatch"):
		c.class(Read, "git config reads configuration")
	case len(pos) >= 2:
		c.class(Write, "git config sets "+pos[0].s)
	default:
		c.class(Read, "git config reads configuration")
	}
}

// JavaScript.

// scriptClass guesses what a package script does from its name.
func scriptClass(name string) (Class, bool) {
	n := strings.ToLower(name)
	base, _, _ := strings.Cut(n, ":")
	switch {
	case n == "":
		return Read, true
	case base == "test" || base == "tests" || strings.HasSuffix(n, ":test") || base == "spec" || base == "e2e" ||
		base == "coverage" || base == "cov" || base == "vet" || base == "unit" || base == "integration" || strings.HasPrefix(base, "test-") || strings.HasPrefix(base, "test_"):
		return Verify, true
	case strings.HasPrefix(base, "lint") && !strings.Contains(n, "fix"), base == "typecheck", base == "type-check",
		base == "types", base == "tsc", base == "check", base == "validate", base == "verify", base == "ci",
		(base == "format" || base == "fmt" || base == "prettier") && strings.Contains(n, "check"):
		return Verify, true
	case base == "format", base == "fmt", base == "prettier", strings.Contains(n, "fix"):
		return Write, true
	case base == "build", strings.HasPrefix(base, "build-"), base == "dev", base == "start", base == "serve",
		base == "compile", base == "generate", base == "gen", base == "codegen", base == "bundle", base == "watch",
		base == "preview", base == "prepare", base == "docs", base == "storybook", base == "prebuild", base == "postbuild":
		return Build, true
	case base == "clean", base == "reset", base == "nuke", base == "purge":
		return Destructive, true
	case base == "deploy", base == "release", base == "publish":
		return Network, true
	case base == "install", base == "bootstrap", base == "setup", base == "deps":
		return Dependency, true
	}
	return Unknown, false
}

// extraFix: arguments after -- reach the script; --fix makes it write.
func extraFix(c *call, rest []word) {
	dd := false
	for _, w := range rest {
		if w.s == "--" {
			dd = true
		} else if dd && (w.s == "--fix" || w.s == "--write" || w.s == "-u" || w.s == "--updateSnapshot") {
			c.class(Write, "passes "+w.s+" to the script")
		}
	}
}

func runScript(c *call, tool, script string) {
	cl, ok := scriptClass(script)
	if !ok {
		c.class(Unknown, tool+" runs the script "+script+", whose content the analyser does not read")
		return
	}
	if script == "" {
		c.class(Read, tool+" run lists the scripts")
		return
	}
	c.class(cl, tool+" runs the script "+script+" ("+cl.Describe()+")")
}

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
			c.class(Write, "npm config changes configuration")
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

// npx-style runners: a known tool is that tool; anything else is a
// package fetched and run.
func npxTool(c *call) {
	_, rest := leadingCommand(c.args, "-p", "--package", "-c", "--call", "--node-options", "--cache", "--from", "--with", "--python")
	npxPackages(c, c.args)
	if f := flagValue(c.args, "-c", "--call"); f != nil {
		c.shell(*f)
		return
	}
	npxRun(c, rest)
}

var npxKnown = map[string]bool{
	"jest": true, "vitest": true, "mocha": true, "tsc": true, "eslint": true, "prettier": true, "playwright": true,
	"cypress": true, "ava": true, "c8": true, "nyc": true, "next": true, "vite": true, "webpack": true,
	"rollup": true, "esbuild": true, "tsup": true, "babel": true, "turbo": true, "nx": true, "lerna": true,
	"rimraf": true, "tsx": true, "ts-node": true, "biome": true, "stylelint": true, "vue-tsc": true,
	"svelte-check": true, "markdownlint": true, "node-gyp": true, "cross-env": true, "dotenv": true,
	"env-cmd": true, "ruff": true, "black": true, "mypy": true, "pytest": true, "sass": true,
	"tailwindcss": true, "postcss": true, "typedoc": true, "karma": true, "tap": true, "concurrently": true,
	"isort": true, "pyright": true, "flake8": true, "pylint": true,
}

// npxPackages: -p/--package (uvx: --from, --with) fetch a package before
// the command runs, whatever the command is.
func npxPackages(c *call, args []word) {
	for i, w := range args {
		if !strings.HasPrefix(w.s, "-") {
			break // the command starts
		}
		for _, f := range []string{"-p", "--package", "--from", "--with"} {
			if v, ok := strings.CutPrefix(w.s, f+"="); ok {
				c.class(Dependency, c.name+" "+f+" fetches the package "+v)
			} else if w.s == f && i+1 < len(args) {
				c.class(Dependency, c.name+" "+f+" fetches the package "+args[i+1].s)
			}
		}
	}
}

func npxRun(c *call, rest []word) {
	if len(rest) == 0 {
		c.class(Unknown, c.name+" without a package")
		return
	}
	pkg := rest[0].s
	name := pkg
	if i := strings.LastIndex(name, "@"); i > 0 {
		name = name[:i]
		c.class(Dependency, c.name+" fetches "+pkg+" (a version of its own)")
	}
	switch {
	case npxKnown[name]:
		c.exec(append([]word{{s: name, static: rest[0].static}}, rest[1:]...))
	case tools()[name] != nil || simpleTools[name] != "" && name != "open":
		c.exec(append([]word{{s: name, static: rest[0].static}}, rest[1:]...))
	default:
		c.class(Dependency, c.name+" downloads and runs the package "+pkg)
	}
}

func nodeTool(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-e" || s == "--eval" || s == "-p" || s == "--print":
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
			c.class(Unknown, "node runs the script "+s)
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

// Go.

func goTool(c *call) {
	sub, rest, _ := subcommand(c.args, "-C")
	gflags, gpos := goFlags(rest)
	switch sub {
	case "build", "test", "vet", "run", "install", "list", "generate":
		goRunsCommands(c, gflags)
	}
	switch sub {
	case "build", "generate", "run", "install":
		if sub == "install" {
			for _, w := range rest {
				if strings.Contains(w.s, "@") {
					c.class(Dependency, "go install "+w.s+" downloads and installs a module")
					return
				}
			}
		}
		if sub == "run" && len(gpos) > 0 && strings.Contains(gpos[0].s, "@") && !strings.HasSuffix(gpos[0].s, ".go") {
			c.class(Dependency, "go run "+gpos[0].s+" downloads a module and runs it")
		}
		c.class(Build, "go "+sub+" builds")
		if f, ok := gflags["-o"]; ok {
			c.write(f)
		}
	case "test", "vet":
		c.class(Verify, "go "+sub+" checks the code")
	case "get":
		c.class(Dependency, "go get changes dependencies")
	case "mod":
		switch firstPos(rest) {
		case "graph", "why", "verify", "":
			c.class(Read, "go mod "+firstPos(rest)+" only reads")
		case "edit", "init":
			c.class(Write, "go mod "+firstPos(rest)+" writes go.mod")
		default:
			c.class(Dependency, "go mod "+firstPos(rest)+" changes dependencies")
		}
	case "work":
		if firstPos(rest) == "sync" || firstPos(rest) == "vendor" {
			c.class(Dependency, "go work "+firstPos(rest)+" changes dependencies")
			return
		}
		c.class(Write, "go work changes go.work")
	case "fmt", "fix":
		c.class(Write, "go "+sub+" rewrites files")
	case "clean":
		if f, _ := opts(rest); hasFlag(f, "-cache", "-modcache", "-testcache", "-fuzzcache") {
			c.class(Destructive, "go clean deletes caches")
			return
		}
		c.class(Write, "go clean removes build files")
	case "env":
		if f, pos := opts(rest); hasFlag(f, "-w", "-u") {
			for _, w := range pos {
				c.assignArg(w)
			}
			c.class(Write, "go env -w changes settings")
			return
		}
		c.class(Read, "go env only reads")
	case "tool":
		if f, pos := opts(rest); len(pos) > 0 && !hasFlag(f, "-n") {
			c.class(Build, "go tool "+pos[0].s+" runs a tool")
			return
		}
		c.class(Read, "go tool lists its tools")
	case "version", "list", "doc", "help", "":
		c.class(Read, "go "+sub+" only reads")
	default:
		c.class(Unknown, "go "+sub+" is not a command the analyser knows")
	}
}

func gofmtTool(c *call) {
	flags, _ := opts(c.args)
	switch {
	case hasFlag(flags, "-w"):
		c.class(Write, c.name+" -w rewrites files")
	case hasFlag(flags, "-l", "-d"):
		c.class(Verify, c.name+" lists unformatted files")
	default:
		c.class(Read, c.name+" prints formatted code")
	}
}

// Rust.

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
		c.class(Destructive, "cargo clean deletes the build directory")
	case "metadata", "tree", "version", "pkgid", "locate-project", "read-manifest", "verify-project", "--version", "-V", "help", "":
		c.class(Read, "cargo "+sub+" only reads")
	case "new", "init":
		c.class(Write, "cargo "+sub+" creates a package")
	default:
		c.class(Unknown, "cargo "+sub+" is not a command the analyser knows")
	}
}

// Make-like tools: the targets say what happens.
var makeVarRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*=`)

func makeTool(c *call) {
	flags, pos := opts(c.args, "-C", "-f", "--file", "--directory", "-j", "--jobs", "-l", "-o", "-W", "-I", "-t", "--taskfile", "-d", "--dir", "-E")
	if c.name == "make" || c.name == "gmake" {
		if hasFlag(flags, "--eval") || contains(flags, "-E") {
			c.class(Unknown, c.name+" --eval evaluates makefile text given on the line")
		}
	}
	var targets []string
	for _, w := range pos {
		if makeVarRE().MatchString(w.s) {
			// make puts its command-line variables in the recipes'
			// environment; SHELL is the program that runs each recipe.
			if v, ok := strings.CutPrefix(w.s, "SHELL="); ok && (c.name == "make" || c.name == "gmake") {
				c.cmd.Why = joinWhy(c.cmd.Why, "make SHELL= runs every recipe with "+v)
				c.shell(word{s: v, static: w.static, params: w.params})
				c.delegated = false
			} else {
				c.assignArg(w)
			}
			continue
		}
		targets = append(targets, w.s)
	}
	if len(targets) == 0 {
		if c.name == "just" || c.name == "task" {
			c.class(Build, c.name+" runs the default recipe")
			return
		}
		c.class(Build, c.name+" builds the default target")
		return
	}
	for _, t := range targets {
		t = strings.ToLower(t)
		switch {
		case t == "install" && c.name == "make":
			c.class(Build, "make install installs what was built")
		case t == "distclean" || t == "mrproper" || t == "realclean":
			c.class(Destructive, c.name+" "+t+" deletes")
		default:
			cl, ok := scriptClass(t)
			if !ok || cl == Unknown || cl == Read {
				cl = Build
			}
			c.class(cl, c.name+" "+t+" ("+cl.Describe()+")")
		}
	}
}

// Python.

func python(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-m":
			if i+1 < len(c.args) {
				pythonModuleRun(c, c.args[i+1].s, c.args[i+2:])
				return
			}
		case strings.HasPrefix(s, "-m") && len(s) > 2:
			pythonModuleRun(c, s[2:], c.args[i+1:])
			return
		case s == "-c":
			c.class(Unknown, c.name+" runs inline code")
			return
		case s == "-V" || s == "--version" || s == "-h" || s == "--help":
			c.class(Read, c.name+" prints its version")
			return
		case s == "-W" || s == "-X":
			i++
		case s == "-":
			c.class(Unknown, c.name+" reads code from its input")
			return
		case strings.HasPrefix(s, "-"):
		default:
			pythonScript(c, c.args[i], c.args[i+1:])
			return
		}
	}
	c.class(Unknown, c.name+" reads code from its input")
}

func pythonScript(c *call, script word, rest []word) {
	base := script.s
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	sub := firstPos(rest)
	switch base {
	case "manage.py":
		switch sub {
		case "test", "check":
			c.class(Verify, "manage.py "+sub+" checks the project")
			return
		case "makemigrations", "collectstatic", "compilemessages":
			c.class(Build, "manage.py "+sub+" generates files")
			return
		}
	case "setup.py":
		switch sub {
		case "test":
			c.class(Verify, "setup.py test runs the tests")
			return
		case "build", "build_ext", "sdist", "bdist_wheel", "bdist", "egg_info":
			c.class(Build, "setup.py "+sub+" builds")
			return
		case "install", "develop":
			c.class(Dependency, "setup.py "+sub+" installs")
			return
		}
	}
	c.class(Unknown, c.name+" runs the script "+script.s)
}

func pythonModuleRun(c *call, mod string, rest []word) {
	switch mod {
	case "pytest", "unittest", "doctest", "nose", "nose2", "tox", "mypy", "pyright", "flake8", "pylint",
		"pycodestyle", "pyflakes", "bandit", "compileall", "py_compile", "coverage":
		if mod == "compileall" || mod == "py_compile" {
			c.class(Build, "python -m "+mod+" compiles")
			return
		}
		if mod == "coverage" && firstPos(rest) != "run" {
			c.class(Read, "coverage reports")
			return
		}
		c.class(Verify, "python -m "+mod+" checks the code")
	case "pip":
		c.exec(append([]word{{s: "pip", static: true}}, rest...))
	case "build":
		c.class(Build, "python -m build builds a package")
	case "venv", "virtualenv":
		c.class(Write, "python -m venv creates an environment")
	case "json.tool", "pydoc", "site", "platform", "sysconfig", "tokenize", "dis", "pstats", "this":
		c.class(Read, "python -m "+mod+" only reads")
	case "black", "isort", "ruff", "autopep8", "yapf", "poetry", "uv", "pipx", "twine":
		c.exec(append([]word{{s: mod, static: true}}, rest...))
	case "http.server", "smtpd", "SimpleHTTPServer":
		c.class(Unknown, "python -m "+mod+" serves")
	default:
		c.class(Unknown, "python -m "+mod+" runs a module the analyser does not know")
	}
}

func pipTool(c *call) {
	sub, rest, _ := subcommand(c.args, "--index-url", "-i", "--proxy", "--cache-dir", "--log")
	switch sub {
	case "install", "uninstall", "wheel":
		if sub == "wheel" {
			c.class(Build, "pip wheel builds wheels")
			return
		}
		c.class(Dependency, "pip "+sub+" changes dependencies")
		if f := flagValue(rest, "-r", "--requirement"); f != nil && f.s != "" {
			c.cmd.Why = joinWhy(c.cmd.Why, "from "+f.s)
		}
	case "download", "search", "index":
		c.class(Network, "pip "+sub+" talks to the index")
	case "list", "show", "freeze", "check", "config", "help", "--version", "-V", "debug", "inspect", "hash", "":
		if sub == "config" && (firstPos(rest) == "set" || firstPos(rest) == "unset") {
			c.class(Write, "pip config changes configuration")
			return
		}
		c.class(Read, "pip "+sub+" only reads")
	case "cache":
		if firstPos(rest) == "purge" || firstPos(rest) == "remove" {
			c.class(Destructive, "pip cache purge deletes the cache")
			return
		}
		c.class(Read, "pip cache inspects")
	default:
		c.class(Unknown, "pip "+sub+" is not a command the analyser knows")
	}
}

func pipxTool(c *call) {
	sub, rest, _ := subcommand(c.args)
	switch sub {
	case "run":
		npxRun(c, rest)
	case "list", "environment", "":
		c.class(Read, "pipx "+sub+" only reads")
	default:
		c.class(Dependency, "pipx "+sub+" changes installed tools")
	}
}

func uvTool(c *call) {
	sub, rest, _ := subcommand(c.args, "--directory", "--project", "-p", "--python", "--cache-dir", "--config-file")
	switch sub {
	case "add", "remove", "sync", "lock", "export":
		if sub == "export" {
			c.class(Read, "uv export prints requirements")
			return
		}
		c.class(Dependency, "uv "+sub+" changes dependencies")
	case "pip":
		switch firstPos(rest) {
		case "list", "show", "freeze", "check", "tree":
			c.class(Read, "uv pip "+firstPos(rest)+" only reads")
		default:
			c.class(Dependency, "uv pip "+firstPos(rest)+" changes dependencies")
		}
	case "tool":
		switch firstPos(rest) {
		case "run":
			npxRun(c, skipN(rest, 1))
		case "list", "dir":
			c.class(Read, "uv tool lists")
		default:
			c.class(Dependency, "uv tool "+firstPos(rest)+" changes installed tools")
		}
	case "python":
		if firstPos(rest) == "list" || firstPos(rest) == "find" || firstPos(rest) == "dir" {
			c.class(Read, "uv python lists")
			return
		}
		c.class(Dependency, "uv python installs interpreters")
	case "run":
		_, r := leadingCommand(rest, "--with", "--python", "-p", "--package", "--extra", "--group", "--env-file", "--directory", "--project", "--with-requirements", "--index")
		if f := flagValue(rest, "--env-file"); f != nil {
			c.class(Secret, "uv run loads an env file")
			c.cmd.Secrets = appendUniq(c.cmd.Secrets, f.s)
		}
		if flagValue(rest, "--with") != nil {
			c.class(Dependency, "uv run --with installs packages")
		}
		c.exec(r)
	case "build":
		c.class(Build, "uv build builds a package")
	case "venv", "init":
		c.class(Write, "uv "+sub+" creates files")
	case "tree", "version", "--version", "help", "":
		c.class(Read, "uv "+sub+" only reads")
	case "publish":
		c.class(Network, "uv publish uploads")
	case "cache":
		if firstPos(rest) == "clean" || firstPos(rest) == "prune" {
			c.class(Destructive, "uv cache clean deletes the cache")
			return
		}
		c.class(Read, "uv cache inspects")
	default:
		c.class(Unknown, "uv "+sub+" is not a command the analyser knows")
	}
}

func poetryTool(c *call) {
	sub, rest, _ := subcommand(c.args, "-C", "--directory", "-P", "--project")
	switch sub {
	case "add", "remove", "install", "update", "lock", "sync":
		c.class(Dependency, c.name+" "+sub+" changes dependencies")
	case "run":
		c.exec(rest)
	case "build":
		c.class(Build, c.name+" build builds a package")
	case "show", "check", "env", "version", "about", "config", "search", "list", "":
		if sub == "check" {
			c.class(Verify, c.name+" check validates the project")
			return
		}
		c.class(Read, c.name+" "+sub+" only reads")
	case "publish":
		c.class(Network, c.name+" publish uploads")
	case "test":
		c.class(Verify, c.name+" test runs the tests")
	case "fmt", "format":
		c.class(Write, c.name+" formats files")
	case "lint":
		c.class(Verify, c.name+" lints")
	case "new", "init":
		c.class(Write, c.name+" "+sub+" creates a project")
	case "shell":
		c.class(Unknown, c.name+" shell starts a shell")
	default:
		c.class(Unknown, c.name+" "+sub+" is not a command the analyser knows")
	}
}

func pipenvTool(c *call) {
	sub, rest, _ := subcommand(c.args)
	switch sub {
	case "install", "uninstall", "update", "lock", "sync", "upgrade", "clean":
		c.class(Dependency, "pipenv "+sub+" changes dependencies")
	case "run":
		c.exec(rest)
	case "graph", "check", "requirements", "--venv", "--where", "--py", "":
		c.class(Read, "pipenv "+sub+" only reads")
	case "shell":
		c.class(Unknown, "pipenv shell starts a shell")
	default:
		c.class(Unknown, "pipenv "+sub+" is not a command the analyser knows")
	}
}

func condaTool(c *call) {
	sub, rest, _ := subcommand(c.args)
	switch sub {
	case "install", "remove", "uninstall", "update", "upgrade", "create":
		c.class(Dependency, c.name+" "+sub+" changes packages")
	case "run":
		_, r := leadingCommand(rest, "-n", "--name", "-p", "--prefix")
		c.exec(r)
	case "list", "info", "search", "config", "env", "":
		c.class(Read, c.name+" "+sub+" only reads")
	case "activate", "deactivate":
		c.class(Read, c.name+" "+sub+" sets up the shell")
	case "clean":
		c.class(Destructive, c.name+" clean deletes caches")
	default:
		c.class(Unknown, c.name+" "+sub+" is not a command the analyser knows")
	}
}

func ruffTool(c *call) {
	sub, _, _ := subcommand(c.args, "--config")
	flags, _ := opts(c.args)
	switch sub {
	case "format":
		checker(c, "ruff format", "--check", "--diff")
	case "check", "":
		if hasFlag(flags, "--fix", "--unsafe-fixes") {
			c.class(Write, "ruff check --fix rewrites files")
			return
		}
		c.class(Verify, "ruff checks the code")
	default:
		c.class(Verify, "ruff checks the code")
	}
}

// JVM and .NET.

func mavenTool(c *call) {
	_, pos := opts(c.args, "-pl", "--projects", "-f", "--file", "-P", "-T", "-s", "-gs", "-rf", "-D", "-l", "-e")
	if len(pos) == 0 {
		c.class(Build, "mvn builds")
		return
	}
	for _, w := range pos {
		goal := strings.ToLower(w.s)
		switch {
		case goal == "test" || goal == "verify" || goal == "integration-test" || strings.Contains(goal, "checkstyle") || strings.Contains(goal, "spotbugs") || strings.HasSuffix(goal, ":check"):
			c.class(Verify, "mvn "+goal+" runs checks")
		case goal == "clean":
			c.class(Destructive, "mvn clean deletes the build directory")
		case goal == "deploy" || goal == "release:perform":
			c.class(Network, "mvn deploy uploads")
		case strings.HasPrefix(goal, "dependency:") && goal != "dependency:tree" && goal != "dependency:list" && goal != "dependency:analyze":
			c.class(Dependency, "mvn "+goal+" changes dependencies")
		case goal == "dependency:tree" || goal == "dependency:list" || goal == "dependency:analyze" || goal == "help:effective-pom":
			c.class(Read, "mvn "+goal+" only reads")
		case strings.HasPrefix(goal, "versions:"):
			c.class(Dependency, "mvn "+goal+" changes versions")
		case strings.HasSuffix(goal, ":apply"):
			c.class(Write, "mvn "+goal+" rewrites files")
		default:
			c.class(Build, "mvn "+goal+" builds")
		}
	}
}

func gradleTool(c *call) {
	_, pos := opts(c.args, "-p", "--project-dir", "-x", "--exclude-task", "-P", "-D", "-b", "--build-file", "-c", "--settings-file", "-I", "--init-script")
	if len(pos) == 0 {
		c.class(Build, c.name+" runs the default tasks")
		return
	}
	for _, w := range pos {
		task := w.s
		if i := strings.LastIndex(task, ":"); i >= 0 {
			task = task[i+1:]
		}
		t := strings.ToLower(task)
		switch {
		case t == "test" || t == "check" || strings.HasPrefix(t, "lint") || strings.HasSuffix(t, "check") || strings.HasSuffix(t, "test") || strings.HasPrefix(t, "test"):
			c.class(Verify, c.name+" "+task+" runs checks")
		case t == "clean":
			c.class(Destructive, c.name+" clean deletes the build directory")
		case t == "dependencies" || t == "tasks" || t == "projects" || t == "properties" || t == "help" || t == "dependencyinsight":
			c.class(Read, c.name+" "+task+" only reads")
		case strings.HasPrefix(t, "publish") || t == "uploadarchives":
			c.class(Network, c.name+" "+task+" uploads")
		case strings.HasSuffix(t, "apply") || t == "ktlintformat" || t == "format":
			c.class(Write, c.name+" "+task+" rewrites files")
		case t == "wrapper" || t == "init":
			c.class(Write, c.name+" "+task+" writes build files")
		default:
			c.class(Build, c.name+" "+task+" builds")
		}
	}
}

func dotnetTool(c *call) {
	sub, rest, _ := subcommand(c.args)
	switch sub {
	case "test":
		c.class(Verify, "dotnet test runs the tests")
	case "build", "publish", "pack", "run", "msbuild", "watch":
		c.class(Build, "dotnet "+sub+" builds")
	case "restore":
		c.class(Dependency, "dotnet restore installs packages")
	case "add", "remove":
		if strings.Contains(strings.Join(strs(rest), " "), "package") {
			c.class(Dependency, "dotnet "+sub+" package changes dependencies")
			return
		}
		c.class(Write, "dotnet "+sub+" changes the project")
	case "format":
		checker(c, "dotnet format", "--verify-no-changes")
	case "clean":
		c.class(Destructive, "dotnet clean deletes build output")
	case "new", "sln":
		c.class(Write, "dotnet "+sub+" writes project files")
	case "list", "--info", "--version", "--list-sdks", "help", "":
		c.class(Read, "dotnet "+sub+" only reads")
	case "tool", "workload", "nuget":
		c.class(Dependency, "dotnet "+sub+" changes installed packages")
	default:
		c.class(Unknown, "dotnet "+sub+" is not a command the analyser knows")
	}
}

// Ruby and PHP.

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

// System packages.

func pkgTool(c *call) {
	sub, _, _ := subcommand(c.args, "-o", "-c", "-t", "--target-release")
	switch sub {
	case "list", "search", "show", "policy", "info", "depends", "rdepends", "query", "-Q", "-Qi", "-Ss", "-Si", "madison", "":
		c.class(Read, c.name+" "+sub+" only reads")
	case "autoremove", "purge", "clean", "autoclean", "cleanup":
		c.class(Dependency, c.name+" "+sub+" removes packages or caches")
	default:
		c.class(Dependency, c.name+" "+sub+" changes system packages")
	}
}

func dpkgTool(c *call) {
	flags, _ := opts(c.args)
	switch {
	case hasFlag(flags, "-i", "--install", "-r", "--remove", "-P", "--purge", "--configure", "--unpack"):
		c.class(Dependency, "dpkg changes system packages")
	default:
		c.class(Read, "dpkg only reads")
	}
}

// Containers and clouds.

func dockerTool(c *call) {
	sub, rest, _ := subcommand(c.args, "-H", "--host", "--context", "-c", "--config", "-l", "--log-level")
	switch sub {
	case "pull", "push", "search", "login", "logout":
		c.class(Network, c.name+" "+sub+" talks to a registry")
		if sub == "login" {
			c.class(Secret, c.name+" login handles registry credentials")
		}
	case "ps", "images", "inspect", "logs", "version", "info", "history", "top", "stats", "port", "diff", "events", "":
		c.class(Read, c.name+" "+sub+" only reads")
	case "rm", "rmi", "kill", "stop", "prune":
		c.class(Destructive, c.name+" "+sub+" deletes or stops containers")
	case "system", "volume", "network", "image", "container", "builder", "buildx":
		switch firstPos(rest) {
		case "prune", "rm", "remove":
			c.class(Destructive, c.name+" "+sub+" "+firstPos(rest)+" deletes")
		case "ls", "list", "inspect", "df", "info":
			c.class(Read, c.name+" "+sub+" "+firstPos(rest)+" only reads")
		case "build", "bake":
			c.class(Build, c.name+" builds an image")
		default:
			c.class(Unknown, c.name+" "+sub+" "+firstPos(rest))
		}
	case "build":
		c.class(Build, c.name+" build builds an image")
	case "compose":
		dockerCompose(c, rest)
	default:
		c.class(Unknown, c.name+" "+sub+" runs a container")
	}
}

func dockerCompose(c *call, args []word) {
	sub, _, _ := subcommand(args, "-f", "--file", "-p", "--project-name", "--env-file", "--profile")
	switch sub {
	case "ps", "logs", "config", "ls", "images", "top", "version":
		c.class(Read, "compose "+sub+" only reads")
	case "down", "rm", "kill":
		c.class(Destructive, "compose "+sub+" stops and deletes containers")
	case "build":
		c.class(Build, "compose build builds images")
	case "pull", "push":
		c.class(Network, "compose "+sub+" talks to a registry")
	default:
		c.class(Unknown, "compose "+sub+" runs containers")
	}
}

var cloudDestroyRE = lazyre.New(`^(delete|destroy|rm|remove|terminate|purge|uninstall|drain|scale)$|^(delete|destroy|remove|terminate)-`)

func cloudTool(c *call) {
	all := strs(c.args)
	joined := strings.Join(all, " ")
	switch {
	case c.name == "aws" && (strings.Contains(joined, "configure get") || strings.Contains(joined, "configure export-credentials") || strings.Contains(joined, "sts get-session-token") || strings.Contains(joined, "ecr get-login-password")):
		c.class(Secret, "aws reads credentials")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "aws credentials")
	case c.name == "gcloud" && strings.Contains(joined, "print-access-token"), c.name == "gcloud" && strings.Contains(joined, "print-identity-token"):
		c.class(Secret, "gcloud prints a token")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "gcloud token")
	case c.name == "az" && strings.Contains(joined, "get-access-token"):
		c.class(Secret, "az prints a token")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "azure token")
	case c.name == "kubectl" && strings.Contains(joined, "config view") && strings.Contains(joined, "--raw"):
		c.class(Secret, "kubectl config view --raw prints credentials")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "kubeconfig")
	case c.name == "kubectl" && strings.Contains(joined, "get secret"):
		c.class(Secret, "kubectl reads secrets")
		c.class(Network, "")
	case c.name == "vault":
		c.class(Secret, "vault reads secrets")
		c.class(Network, "")
	case (c.name == "terraform" || c.name == "tofu") && (firstPos(c.args) == "fmt" || firstPos(c.args) == "validate" || firstPos(c.args) == "version"):
		if firstPos(c.args) == "fmt" {
			checker(c, c.name+" fmt", "-check")
			return
		}
		c.class(Verify, c.name+" "+firstPos(c.args)+" checks configuration")
		return
	case onlyAsksVersion(c.args):
		c.class(Read, c.name+" prints its version")
		return
	}
	c.class(Network, c.name+" talks to a remote service")
	for _, s := range all {
		if cloudDestroyRE().MatchString(s) {
			c.class(Destructive, c.name+" "+s+" deletes remote resources")
			break
		}
	}
	if (c.name == "terraform" || c.name == "tofu") && firstPos(c.args) == "apply" {
		c.class(Destructive, c.name+" apply changes infrastructure")
	}
}
