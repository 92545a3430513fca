package classify

import (
	"strings"
	"sync"
)

// readOnly tools only inspect (whatever their arguments, unless a handler
// in tools says otherwise).
var readOnly = setOf(`ls ll la dir vdir cat tac nl head tail less more most bat batcat grep egrep fgrep
rg ag ack fd fdfind locate wc diff colordiff cmp comm stat file tree pwd cd pushd popd dirs echo
printf which type whereis hash jq gron cut tr basename dirname realpath readlink du df ps pgrep
pstree top htop date cal whoami id groups uname hostname true false test [ sleep seq nproc free
uptime tput man help info apropos lsof xxd hexdump od strings md5sum sha1sum sha256sum sha512sum
shasum cksum b2sum base64 base32 column fold fmt paste join expand unexpand rev look yes ldd nm
objdump readelf size tty stty lscpu lsblk lsmod ulimit getconf locale iconv numfmt expr bc factor
exit return shift wait jobs fg bg disown shopt umask history : tldr tokei cloc scc sloccount
getent logname users who w last dmesg vmstat iostat mpstat sar let read
mapfile readarray caller times break continue lsb_release arch unset unalias
enable complete compgen pwdx`)

// simpleTools have one class whatever their arguments.
var simpleTools = map[string]Class{
	"jest": Verify, "vitest": Verify, "mocha": Verify, "ava": Verify, "tap": Verify, "karma": Verify,
	"pytest": Verify, "py.test": Verify, "tox": Verify, "nox": Verify, "mypy": Verify, "pyright": Verify,
	"flake8": Verify, "pylint": Verify, "pycodestyle": Verify, "pydocstyle": Verify, "bandit": Verify,
	"shellcheck": Verify, "staticcheck": Verify, "govulncheck": Verify, "revive": Verify, "errcheck": Verify,
	"phpunit": Verify, "phpstan": Verify, "psalm": Verify, "rspec": Verify, "minitest": Verify,
	"hadolint": Verify, "yamllint": Verify, "markdownlint": Verify, "stylelint": Verify, "tsd": Verify,
	"cucumber": Verify, "behave": Verify, "nyc": Verify, "c8": Verify, "ctest": Verify, "cypress": Verify,
	"vue-tsc": Verify, "svelte-check": Verify, "actionlint": Verify, "buf-lint": Verify,
	"cmake": Build, "ninja": Build, "meson": Build, "scons": Build, "autoreconf": Build, "autoconf": Build,
	"automake": Build, "configure": Build, "webpack": Build, "rollup": Build, "esbuild": Build, "tsup": Build,
	"babel": Build, "swc": Build, "parcel": Build, "protoc": Build, "javac": Build, "gcc": Build, "g++": Build,
	"cc": Build, "c++": Build, "clang": Build, "clang++": Build, "rustc": Build, "ld": Build, "ar": Build,
	"node-gyp": Build, "sass": Build, "lessc": Build, "tailwindcss": Build, "postcss": Build, "sphinx-build": Build,
	"mkdocs": Build, "hugo": Build, "jekyll": Build, "doxygen": Build, "javadoc": Build, "typedoc": Build,
	"wasm-pack": Build, "vite": Build, "next": Build, "nuxt": Build, "astro": Build, "turbo": Build, "nx": Build, "zig": Build, "ghc": Build, "kotlinc": Build, "scalac": Build, "swiftc": Build,
	"sbt": Build, "lein": Build, "ant": Build, "bazel": Build, "bazelisk": Build, "buck": Build, "pants": Build,
	"touch": Write, "mkdir": Write, "ln": Write, "tee": Write, "patch": Write, "rmdir": Write, "mktemp": Write,
	"pkill": Write, "killall": Write, "zip": Write, "gzip": Write, "gunzip": Write,
	"bzip2": Write, "bunzip2": Write, "xz": Write, "unxz": Write, "zstd": Write, "split": Write, "csplit": Write,
	"ssh-keygen": Write, "rustfmt": Write, "autopep8": Write, "yapf": Write, "shfmt": Write, "stylua": Write,
	"swiftformat": Write, "clang-format": Write, "install": Write, "ed": Write, "ex": Write, "sponge": Write,
	"nc": Network, "ncat": Network, "netcat": Network, "socat": Network,
	"telnet": Network, "ssh": Network, "scp": Network, "sftp": Network, "ftp": Network, "lftp": Network,
	"ping": Network, "ping6": Network, "dig": Network, "nslookup": Network, "host": Network,
	"traceroute": Network, "tracepath": Network, "mtr": Network, "whois": Network, "http": Network,
	"https": Network, "xh": Network, "aria2c": Network, "mosh": Network, "ssh-keyscan": Network,
	"hub": Network, "glab": Network, "grpcurl": Network, "websocat": Network, "nmap": Network,
	"shred": Destructive, "dd": Destructive, "truncate": Destructive, "wipefs": Destructive,
	"fdisk": Destructive, "parted": Destructive, "mke2fs": Destructive, "srm": Destructive,
	"shutdown": Destructive, "reboot": Destructive, "halt": Destructive, "poweroff": Destructive,
	"rimraf": Destructive, "del-cli": Destructive, "trash": Destructive,
	"security": Secret, "pass": Secret, "op": Secret, "secret-tool": Secret, "ssh-add": Secret,
	"keyring": Secret,
	"vim":     Unknown, "vi": Unknown, "nvim": Unknown, "nano": Unknown, "emacs": Unknown, "code": Unknown,
	"chroot": Unknown, "unshare": Unknown, "nsenter": Unknown, "setpriv": Unknown, "capsh": Unknown,
	"gdb": Unknown, "lldb": Unknown, "nodemon": Unknown,
	"lua": Unknown, "Rscript": Unknown,
	"osascript": Unknown, "dc": Unknown, "open": Unknown, "xdg-open": Unknown,
}

func setOf(s string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(s) {
		m[f] = true
	}
	return m
}

type handler func(*call)

// tools returns the handler table, built on first use rather than at
// package init: every airlock process, a sandbox's init too, would pay for
// it at start. (Set in init: the handlers refer back to tools.)
var tools func() map[string]handler

func init() { tools = sync.OnceValue(toolTable) }

func toolTable() map[string]handler {
	return map[string]handler{
		// Shells and evaluators.
		"sh": shellTool, "bash": shellTool, "zsh": shellTool, "dash": shellTool, "ksh": shellTool,
		"ash": shellTool, "fish": shellTool, "busybox": busybox,
		"eval":   func(c *call) { c.shell(joinWords(c.args)) },
		"source": sourceTool, ".": sourceTool,
		"cd": cdTool, "pushd": cdTool,
		"alias":  aliasTool,
		"trap":   trapTool,
		"watch":  watchTool,
		"su":     suTool,
		"script": scriptTool,
		"flock":  flockTool,
		// Wrappers.
		"env":       envTool,
		"printenv":  printenvTool,
		"sudo":      sudoTool,
		"doas":      func(c *call) { _, rest := leadingCommand(c.args, "-u", "-C"); c.execOrShell(rest) },
		"runuser":   func(c *call) { _, rest := leadingCommand(c.args, "-u", "-g", "-G"); c.execOrShell(rest) },
		"nice":      func(c *call) { _, rest := leadingCommand(c.args, "-n", "--adjustment"); c.exec(rest) },
		"ionice":    func(c *call) { _, rest := leadingCommand(c.args, "-c", "-n", "-p", "-P", "-u"); c.exec(rest) },
		"nohup":     func(c *call) { c.exec(c.args) },
		"setsid":    func(c *call) { _, rest := leadingCommand(c.args); c.exec(rest) },
		"unbuffer":  func(c *call) { c.exec(c.args) },
		"builtin":   func(c *call) { c.exec(c.args) },
		"stdbuf":    func(c *call) { _, rest := leadingCommand(c.args, "-i", "-o", "-e"); c.exec(rest) },
		"taskset":   tasksetTool,
		"chrt":      func(c *call) { _, rest := leadingCommand(c.args); c.exec(skipN(rest, 1)) },
		"timeout":   timeoutTool,
		"time":      timeTool,
		"command":   commandTool,
		"exec":      func(c *call) { _, rest := leadingCommand(c.args, "-a"); c.exec(rest) },
		"xargs":     xargsTool,
		"parallel":  parallelTool,
		"strace":    func(c *call) { _, rest := leadingCommand(c.args, "-o", "-e", "-p", "-s", "-u", "-E"); c.exec(rest) },
		"ltrace":    func(c *call) { _, rest := leadingCommand(c.args, "-o", "-e", "-p", "-s", "-u"); c.exec(rest) },
		"valgrind":  func(c *call) { _, rest := leadingCommand(c.args); c.exec(rest) },
		"cross-env": crossEnv,
		"dotenv":    dotenvTool,
		"env-cmd":   dotenvTool,
		// Files.
		"rm":     rmTool,
		"unlink": rmTool,
		"cp":     copyTool,
		"mv":     moveTool,
		"rsync":  rsyncTool,
		"chmod":  chTool,
		"chown":  chTool,
		"chgrp":  chTool,
		"sed":    sedTool,
		"perl":   perlTool,
		"kill":   killTool, "less": lessTool, "more": lessTool,
		"systemctl": systemctlTool, "getent": getentTool, "at": atTool, "batch": atTool,
		"twine": func(c *call) {
			if firstPos(c.args) == "check" {
				c.class(Verify, "twine check checks distributions")
				return
			}
			c.class(Network, "twine uploads packages to an index")
		},
		"apply_patch": func(c *call) { c.class(Write, "apply_patch edits the files its patch names") },
		"ruby":        interpTool("-e"), "php": interpTool("-r"), "ts-node": interpTool("-e", "--eval"),
		"tsx": interpTool("-e", "--eval"), "java": interpTool(),
		"awk": awkTool, "gawk": awkTool, "mawk": awkTool, "nawk": awkTool,
		"find":       findTool,
		"tar":        tarTool,
		"unzip":      unzipTool,
		"patch":      patchTool,
		"split":      splitTool,
		"csplit":     splitTool,
		"ssh-keygen": sshKeygenTool,
		"sort":       sortTool,
		"read":       readTool,
		"printf":     readTool,
		"getopts":    readTool,
		"mapfile":    callbackTool,
		"readarray":  callbackTool,
		"compgen":    callbackTool,
		"complete":   callbackTool,
		"enable":     enableTool,
		"man":        manTool,
		"zip":        zipTool,
		"ldd":        lddTool,
		"curl":       curlTool,
		"wget":       wgetTool,
		"gh":         ghTool,
		"playwright": playwrightTool,
		"uniq": func(c *call) {
			if _, pos := opts(c.args, "-f", "-s", "-w"); len(pos) > 1 {
				c.class(Write, "uniq writes its output file")
				c.write(pos[1])
				return
			}
			c.class(Read, "uniq only reads")
		},
		"yq":       func(c *call) { inPlace(c, "yq", "-i", "--inplace") },
		"openssl":  opensslTool,
		"crontab":  crontabTool,
		"mount":    func(c *call) { argsOr(c, Read, Unknown, "mount with arguments changes mounts") },
		"set":      setTool,
		"export":   func(c *call) { argsOr(c, Secret, Read, "") },
		"declare":  func(c *call) { argsOr(c, Secret, Read, "") },
		"git":      gitTool,
		"npm":      npmTool,
		"pnpm":     pnpmTool,
		"yarn":     yarnTool,
		"bun":      bunTool,
		"npx":      npxTool,
		"bunx":     npxTool,
		"pnpx":     npxTool,
		"node":     nodeTool,
		"deno":     denoTool,
		"tsc":      tscTool,
		"eslint":   func(c *call) { fixer(c, "eslint", []string{"--fix", "--fix-dry-run"}, nil) },
		"prettier": prettierTool,
		"biome":    biomeTool,
		"go":       goTool,
		"gofmt":    gofmtTool, "goimports": gofmtTool,
		"golangci-lint": func(c *call) {
			fixer(c, "golangci-lint", []string{"--fix"}, nil)
		},
		"cargo": cargoTool,
		"rustup": func(c *call) {
			sub := firstPos(c.args)
			switch sub {
			case "show", "which", "--version", "doc", "":
				c.class(Read, "rustup "+sub+" only reads")
			default:
				c.class(Dependency, "rustup "+sub+" changes toolchains")
			}
		},
		"make": makeTool, "gmake": makeTool, "just": makeTool, "task": makeTool, "mage": makeTool,
		"rake": makeTool, "invoke": makeTool,
		"pip": pipTool, "pip3": pipTool, "pipx": pipxTool, "uv": uvTool, "uvx": npxTool, "poetry": poetryTool,
		"pipenv": pipenvTool, "pdm": poetryTool, "hatch": poetryTool, "conda": condaTool, "mamba": condaTool,
		"micromamba": condaTool,
		"black":      func(c *call) { checker(c, "black", "--check", "--diff") },
		"isort":      func(c *call) { checker(c, "isort", "--check", "--check-only", "--diff", "-c") },
		"ruff":       ruffTool,
		"coverage": func(c *call) {
			if firstPos(c.args) == "run" {
				c.class(Verify, "coverage run measures tests")
				return
			}
			c.class(Read, "coverage reports")
		},
		"mvn": mavenTool, "mvnw": mavenTool, "gradle": gradleTool, "gradlew": gradleTool,
		"dotnet": dotnetTool,
		"bundle": bundleTool,
		"gem":    gemTool,
		"rails":  railsTool,
		"rubocop": func(c *call) {
			fixer(c, "rubocop", []string{"-a", "-A", "--autocorrect", "--autocorrect-all", "--auto-correct"}, nil)
		},
		"standardrb": func(c *call) {
			fixer(c, "standardrb", []string{"--fix"}, nil)
		},
		"composer": composerTool,
		"apt":      pkgTool, "apt-get": pkgTool, "aptitude": pkgTool, "yum": pkgTool, "dnf": pkgTool,
		"apk": pkgTool, "pacman": pkgTool, "zypper": pkgTool, "brew": pkgTool, "port": pkgTool,
		"snap": pkgTool, "nix-env": pkgTool, "pkg": pkgTool, "apt-cache": func(c *call) { c.class(Read, "apt-cache only reads") },
		"dpkg":           dpkgTool,
		"docker":         dockerTool,
		"podman":         dockerTool,
		"docker-compose": func(c *call) { dockerCompose(c, c.args) },
		"kubectl":        cloudTool, "helm": cloudTool, "terraform": cloudTool, "tofu": cloudTool,
		"aws": cloudTool, "gcloud": cloudTool, "az": cloudTool, "flyctl": cloudTool, "fly": cloudTool,
		"vercel": cloudTool, "netlify": cloudTool, "heroku": cloudTool, "firebase": cloudTool,
		"pulumi": cloudTool, "wrangler": cloudTool, "doctl": cloudTool, "vault": cloudTool,
		"doppler": func(c *call) {
			c.class(Secret, "doppler injects secrets")
			c.class(Network, "")
			_, rest := leadingCommand(skipN(c.args, 1), "-p", "-c", "--project", "--config")
			if firstPos(c.args) == "run" {
				c.exec(rest)
			}
		},
		"gpg": func(c *call) {
			if f, _ := opts(c.args); hasFlag(f, "--export-secret-keys", "--export-secret-subkeys", "--decrypt", "-d") {
				c.class(Secret, "gpg reads private keys or decrypts")
				return
			}
			c.class(Write, "gpg changes the keyring or files")
		},
	}
}

func skipN(ws []word, n int) []word {
	if len(ws) < n {
		return nil
	}
	return ws[n:]
}

func firstPos(args []word) string {
	for _, a := range args {
		if !strings.HasPrefix(a.s, "-") {
			return a.s
		}
	}
	return ""
}

// argsOr gives one class with no arguments, another with.
func argsOr(c *call, bare, withArgs Class, why string) {
	if len(c.args) == 0 {
		if bare == Secret {
			c.cmd.Secrets = appendUniq(c.cmd.Secrets, "environment")
			c.class(Secret, c.name+" without arguments prints the environment")
			return
		}
		c.class(bare, c.name+" only reads")
		return
	}
	if why == "" {
		why = c.name + " sets shell state"
	}
	c.class(withArgs, why)
}

func flagValue(args []word, names ...string) *word {
	for i, w := range args {
		for _, n := range names {
			if w.s == n && i+1 < len(args) {
				return &args[i+1]
			}
			if v, ok := strings.CutPrefix(w.s, n+"="); ok && strings.HasPrefix(n, "--") {
				return &word{s: v, static: w.static, params: w.params}
			}
		}
	}
	return nil
}

func outFlag(c *call, cl Class, name string, flagNames ...string) {
	if f := flagValue(c.args, flagNames...); f != nil {
		c.class(Write, name+" writes its output file")
		c.write(*f)
		return
	}
	c.class(cl, name+" only reads")
}

func inPlace(c *call, name string, flagNames ...string) {
	flags, pos := opts(c.args)
	if hasFlag(flags, flagNames...) {
		c.class(Write, name+" edits files in place")
		c.write(skipN(pos, 1)...)
		return
	}
	c.class(Read, name+" only reads")
}

// fixer: a linter that rewrites files with one of fixFlags, else verifies.
func fixer(c *call, name string, fixFlags []string, _ []string) {
	flags, _ := opts(c.args)
	if hasFlag(flags, fixFlags...) {
		c.class(Write, name+" rewrites files to fix them")
		return
	}
	c.class(Verify, name+" checks the code")
}

// checker: a formatter that rewrites files unless a check flag is given.
func checker(c *call, name string, checkFlags ...string) {
	var flags []string
	for _, w := range c.args { // after -- too: cargo fmt -- --check
		flags = append(flags, w.s)
	}
	if hasFlag(flags, checkFlags...) {
		c.class(Verify, name+" checks formatting")
		return
	}
	if onlyAsksVersion(c.args) {
		c.class(Read, name+" prints its version")
		return
	}
	c.class(Write, name+" rewrites files")
}

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

// optValue finds an option's value: -oVAL, -o VAL, --long=VAL, --long VAL
// (short or long may be "").
func optValue(args []word, short, long string) *word {
	for i, w := range args {
		s := w.s
		switch {
		case s == "--":
			return nil
		case (s == short || s == long) && s != "" && i+1 < len(args):
			return &args[i+1]
		case long != "" && strings.HasPrefix(s, long+"="):
			return &word{s: s[len(long)+1:], static: w.static, params: w.params}
		case short != "" && strings.HasPrefix(s, short) && len(s) > len(short) && !strings.HasPrefix(s, "--"):
			return &word{s: s[len(short):], static: w.static, params: w.params}
		}
	}
	return nil
}
