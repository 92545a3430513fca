package policy

import (
	"path"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/lazyre"
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
	"kill": Write, "pkill": Write, "killall": Write, "zip": Write, "gzip": Write, "gunzip": Write,
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
	"keyring": Secret, "printenv": Secret,
	"vim": Unknown, "vi": Unknown, "nvim": Unknown, "nano": Unknown, "emacs": Unknown, "code": Unknown,
	"chroot": Unknown, "unshare": Unknown, "nsenter": Unknown, "setpriv": Unknown, "capsh": Unknown,
	"gdb": Unknown, "lldb": Unknown, "nodemon": Unknown, "ts-node": Unknown, "tsx": Unknown,
	"php": Unknown, "ruby": Unknown, "perl": Unknown, "lua": Unknown, "Rscript": Unknown, "java": Unknown,
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
		"awk":    awkTool, "gawk": awkTool, "mawk": awkTool, "nawk": awkTool,
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

func (c *call) execOrShell(rest []word) {
	if len(rest) == 0 {
		c.class(Unknown, c.name+" without a command starts a shell")
		return
	}
	c.exec(rest)
}

// Shells.

func shellTool(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-c" || (strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "c")):
			if i+1 < len(c.args) {
				c.shell(c.args[i+1])
				return
			}
			c.class(Unknown, c.name+" -c without a script")
			return
		case s == "-o" || s == "+o" || s == "-O" || s == "+O" || s == "--rcfile" || s == "--init-file":
			i++
		case s == "-s" || s == "-i" || (strings.HasPrefix(s, "-") && strings.ContainsAny(s, "si") && !strings.HasPrefix(s, "--")):
			c.class(Unknown, c.name+" reads commands from its input")
			return
		case s == "--version" || s == "--help":
			c.class(Read, c.name+" prints its version")
			return
		case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+"):
		default:
			c.class(Unknown, c.name+" runs the script "+s)
			return
		}
	}
	c.class(Unknown, c.name+" reads commands from its input")
}

func busybox(c *call) {
	if len(c.args) == 0 {
		c.class(Read, "busybox lists its applets")
		return
	}
	c.exec(c.args)
}

func sourceTool(c *call) {
	if len(c.args) == 0 {
		c.class(Unknown, c.name+" without a file")
		return
	}
	f := c.args[0]
	if name, secret, _ := c.a.secretWord(f); secret {
		c.class(Secret, c.name+" loads "+name+" into the shell")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, name)
		return
	}
	c.class(Unknown, c.name+" runs the script "+f.s+" in this shell")
}

var aliasRE = lazyre.New(`^[A-Za-z0-9_.-]+=`)

func aliasTool(c *call) {
	if len(c.args) == 0 {
		c.class(Read, "alias lists aliases")
		return
	}
	for _, w := range c.args {
		if m := aliasRE().FindString(w.s); m != "" {
			c.shell(word{s: w.s[len(m):], static: w.static})
		}
	}
	c.class(Read, "alias defines a name")
}

func trapTool(c *call) {
	if len(c.args) < 2 {
		c.class(Read, "trap lists traps")
		return
	}
	c.class(Read, "trap sets a handler")
	c.shell(c.args[0])
}

func watchTool(c *call) {
	_, rest := leadingCommand(c.args, "-n", "--interval", "-d", "-q")
	if len(rest) == 0 {
		c.class(Unknown, "watch without a command")
		return
	}
	c.shell(joinWords(rest))
}

func suTool(c *call) {
	for i, w := range c.args {
		if (w.s == "-c" || w.s == "--command") && i+1 < len(c.args) {
			c.shell(c.args[i+1])
			return
		}
	}
	c.class(Unknown, "su starts a shell")
}

func scriptTool(c *call) {
	for i, w := range c.args {
		if (w.s == "-c" || w.s == "--command") && i+1 < len(c.args) {
			c.shell(c.args[i+1])
			return
		}
	}
	c.class(Unknown, "script starts a shell")
}

func flockTool(c *call) {
	flags, rest := leadingCommand(c.args, "-w", "-E", "--timeout", "--conflict-exit-code")
	_ = flags
	if len(rest) == 0 {
		c.class(Unknown, "flock without a command")
		return
	}
	rest = rest[1:] // the lock file
	for i, w := range rest {
		if (w.s == "-c" || w.s == "--command") && i+1 < len(rest) {
			c.shell(rest[i+1])
			return
		}
	}
	c.exec(rest)
}

// Wrappers.

func envTool(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-u" || s == "--unset" || s == "-C" || s == "--chdir":
			i++
		case s == "-S" || s == "--split-string":
			if i+1 < len(c.args) {
				c.shell(joinWords(c.args[i+1:]))
				return
			}
		case strings.HasPrefix(s, "--split-string="):
			c.shell(word{s: strings.TrimPrefix(s, "--split-string=") + " " + joinWords(c.args[i+1:]).s, static: c.args[i].static})
			return
		case s == "--":
			c.exec(c.args[i+1:])
			return
		case strings.HasPrefix(s, "-"):
		case strings.Contains(s, "="):
			c.assignArg(c.args[i])
		default:
			c.exec(c.args[i:])
			return
		}
	}
	c.cmd.Secrets = appendUniq(c.cmd.Secrets, "environment")
	c.class(Secret, "env without a command prints the environment")
}

func sudoTool(c *call) {
	flags, rest := leadingCommand(c.args, "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user", "--group")
	if hasFlag(flags, "-l", "--list", "-v", "-V", "-k", "-K") && len(rest) == 0 {
		c.class(Read, "sudo lists or refreshes credentials")
		return
	}
	if hasFlag(flags, "-e", "--edit") {
		c.class(Write, "sudoedit edits files")
		c.write(rest...)
		return
	}
	for len(rest) > 0 && strings.Contains(rest[0].s, "=") && !strings.HasPrefix(rest[0].s, "=") {
		c.assignArg(rest[0])
		rest = rest[1:]
	}
	if len(rest) == 0 {
		c.class(Unknown, "sudo without a command starts a shell")
		return
	}
	c.exec(rest)
}

func tasksetTool(c *call) {
	_, rest := leadingCommand(c.args)
	c.exec(skipN(rest, 1))
}

var durationRE = lazyre.New(`^[0-9.]+[smhd]?$`)

func timeoutTool(c *call) {
	_, rest := leadingCommand(c.args, "-s", "--signal", "-k", "--kill-after")
	if len(rest) > 0 && durationRE().MatchString(rest[0].s) {
		rest = rest[1:]
	}
	c.exec(rest)
}

func timeTool(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-o" || s == "--output":
			if i+1 < len(c.args) {
				c.class(Write, "time writes its report")
				c.write(c.args[i+1])
				i++
			}
		case s == "-f" || s == "--format":
			i++
		case strings.HasPrefix(s, "-"):
		default:
			c.exec(c.args[i:])
			return
		}
	}
	c.class(Read, "time alone")
}

func commandTool(c *call) {
	flags, rest := leadingCommand(c.args)
	if hasFlag(flags, "-v", "-V") {
		c.class(Read, "command -v looks a name up")
		return
	}
	c.exec(rest)
}

func xargsTool(c *call) {
	withArg := []string{"-I", "-i", "-n", "-L", "-l", "-P", "-s", "-d", "-E", "-e", "-a", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-lines", "--replace", "--eof"}
	flags, rest := leadingCommand(c.args, withArg...)
	for i, f := range flags {
		if (f == "-a" || f == "--arg-file") && i+1 < len(flags) {
			continue
		}
	}
	if len(rest) == 0 {
		c.class(Read, "xargs without a command echoes")
		return
	}
	c.exec(rest)
}

func parallelTool(c *call) {
	_, rest := leadingCommand(c.args, "-j", "--jobs", "-S", "--sshlogin", "--joblog", "-a")
	var cmd []word
	for _, w := range rest {
		if w.s == ":::" || w.s == "::::" || w.s == ":::+" {
			break
		}
		cmd = append(cmd, w)
	}
	if len(cmd) == 0 {
		c.class(Unknown, "parallel reads commands from its input")
		return
	}
	c.shell(joinWords(cmd))
}

func crossEnv(c *call) {
	rest := c.args
	for len(rest) > 0 && strings.Contains(rest[0].s, "=") {
		c.assignArg(rest[0])
		rest = rest[1:]
	}
	c.exec(rest)
}

func dotenvTool(c *call) {
	c.class(Secret, c.name+" loads an env file into the command")
	c.cmd.Secrets = appendUniq(c.cmd.Secrets, ".env")
	_, rest := leadingCommand(c.args, "-e", "-f", "-c", "-v", "-p", "--file", "--environment")
	c.exec(rest)
}

// Files.

func rmTool(c *call) {
	flags, pos := opts(c.args)
	c.write(pos...)
	recursive := hasFlag(flags, "-r", "-R", "--recursive")
	allTmp := len(pos) > 0
	for _, w := range pos {
		if p := c.a.resolve(w); !w.static || !strings.HasPrefix(p, "/tmp/") {
			allTmp = false
		}
	}
	if allTmp {
		c.class(Write, c.name+" removes scratch files under /tmp")
		return
	}
	if recursive {
		c.class(Destructive, c.name+" -r deletes directory trees")
		return
	}
	c.class(Destructive, c.name+" deletes files")
}

func copyTool(c *call) {
	flags, pos := opts(c.args, "-t", "--target-directory", "-S", "--suffix")
	if dir := flagValue(c.args, "-t", "--target-directory"); dir != nil {
		c.write(*dir)
	} else if len(pos) > 1 {
		c.write(pos[len(pos)-1])
	}
	_ = flags
	c.class(Write, c.name+" copies files")
}

func moveTool(c *call) {
	_, pos := opts(c.args, "-t", "--target-directory", "-S", "--suffix")
	c.write(pos...)
	if dir := flagValue(c.args, "-t", "--target-directory"); dir != nil {
		c.write(*dir)
	}
	if len(pos) > 0 && pos[len(pos)-1].s == "/dev/null" {
		c.class(Destructive, "mv into /dev/null deletes")
		return
	}
	c.class(Write, "mv moves files")
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

func rsyncTool(c *call) {
	flags, pos := opts(c.args, "-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--port")
	remote := false
	for _, w := range pos {
		if strings.Contains(w.s, "::") || strings.HasPrefix(w.s, "rsync://") || scpHostRE().MatchString(w.s) {
			remote = true
		}
	}
	if remote {
		c.class(Network, "rsync copies to or from another host")
	} else {
		c.class(Write, "rsync copies files")
		if len(pos) > 1 {
			c.write(pos[len(pos)-1])
		}
	}
	if hasFlag(flags, "--delete", "--delete-before", "--delete-after", "--delete-during", "--delete-excluded", "--remove-source-files") {
		c.class(Destructive, "rsync deletes files")
	}
}

var systemPathRE = lazyre.New(`^(/|/(etc|usr|bin|sbin|lib|lib64|var|boot|home|root|opt|srv|proc|sys|dev)(/.*)?|~|~/?|\$HOME/?|\$\{HOME\}/?|\.|\./?|\*|/workspace/?)$`)

func chTool(c *call) {
	flags, pos := opts(c.args, "--reference")
	if len(pos) > 0 {
		c.write(pos[1:]...)
	}
	if hasFlag(flags, "-R", "--recursive") {
		c.class(Destructive, c.name+" -R changes a whole tree")
		return
	}
	for _, w := range skipN(pos, 1) {
		if systemPathRE().MatchString(w.s) {
			c.class(Destructive, c.name+" on "+w.s)
			return
		}
	}
	c.class(Write, c.name+" changes file modes or owners")
}

// awkRiskRE finds what runs a command, writes a file or loads code in an
// awk program: system(), pipes to and from commands (|, |&, getline),
// redirected print, gawk's @load, @include and extension().
var awkRiskRE = lazyre.New(`system\s*\(|\|\s*getline|\|&|print[^;}]*\||print[^;}]*>|@load|@include|extension\s*\(`)

func awkTool(c *call) {
	var progs []word
	var pos []word
	inplace := false
	for i := 0; i < len(c.args); i++ {
		w := c.args[i]
		s := w.s
		name, v, hasVal := strings.Cut(s, "=")
		val := func() (word, bool) {
			if hasVal && strings.HasPrefix(s, "--") {
				return word{s: v, static: w.static, params: w.params}, true
			}
			if i+1 < len(c.args) {
				i++
				return c.args[i], true
			}
			return word{}, false
		}
		switch {
		case s == "--":
			pos = append(pos, c.args[i+1:]...)
			i = len(c.args)
		case s == "-F" || s == "-v" || name == "--field-separator" || name == "--assign":
			val()
		case s == "-e" || name == "--source":
			if p, ok := val(); ok {
				progs = append(progs, p)
			}
		case s == "-i" || name == "--include":
			if p, ok := val(); ok && p.s == "inplace" && p.static {
				inplace = true
			} else {
				c.class(Unknown, "awk includes a source file")
			}
		case strings.HasPrefix(s, "-i"):
			if s == "-iinplace" {
				inplace = true
			} else {
				c.class(Unknown, "awk includes a source file")
			}
		case strings.HasPrefix(s, "-f") || strings.HasPrefix(s, "-E") || strings.HasPrefix(s, "-l") ||
			name == "--file" || name == "--exec" || name == "--load":
			c.class(Unknown, "awk runs a program file or loads an extension")
			return
		case strings.HasPrefix(s, "-") && len(s) > 1:
		default:
			pos = append(pos, w)
		}
	}
	if len(progs) == 0 && len(pos) > 0 {
		progs, pos = pos[:1], pos[1:]
	}
	for _, p := range progs {
		switch {
		case !p.static:
			c.class(Unknown, "awk program computed at run time")
			return
		case awkRiskRE().MatchString(p.s):
			c.class(Unknown, "awk program runs commands or writes files")
			return
		}
	}
	if inplace {
		c.class(Write, "awk -i inplace edits files")
		c.write(pos...)
		return
	}
	c.class(Read, "awk prints")
}

func findTool(c *call) {
	args := c.args
	acted := false
	secretNames := false
	for i := 0; i < len(args); i++ {
		switch args[i].s {
		case "-name", "-iname", "-path", "-ipath", "-wholename", "-regex":
			if i+1 < len(args) {
				p := strings.NewReplacer("*", "", "?", "").Replace(args[i+1].s)
				secretNames = secretNames || isSecretPath(p) || isSecretPath("x"+p)
			}
		}
	}
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch s {
		case "-delete":
			c.class(Destructive, "find -delete deletes what it matches")
			acted = true
		case "-exec", "-execdir", "-ok", "-okdir":
			acted = true
			j := i + 1
			for j < len(args) && args[j].s != ";" && args[j].s != "+" {
				j++
			}
			if j > i+1 {
				inner := args[i+1 : j]
				first := len(c.a.out.Commands)
				c.a.simple(inner, c.viaMe(), c.depth+1)
				// The command runs on every file found: a credential
				// file found by name is read by it.
				if secretNames && !metaOnly[inner[0].s] {
					for k := first; k < len(c.a.out.Commands); k++ {
						cmd := &c.a.out.Commands[k]
						cmd.Classes = addClass(cmd.Classes, Secret)
						cmd.Secrets = appendUniq(cmd.Secrets, "files find matches by a credential name")
					}
				}
			}
			i = j
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				c.class(Write, "find writes its list to a file")
				c.write(args[i+1])
				acted = true
			}
		}
	}
	if !acted {
		c.class(Read, "find only lists")
	} else if len(c.cmd.Classes) == 0 {
		c.delegated = true // find only hands files to its -exec command
	}
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

func opensslTool(c *call) {
	switch firstPos(c.args) {
	case "s_client", "s_time", "ocsp":
		c.class(Network, "openssl connects to another host")
	case "version", "x509", "dgst", "rand", "list", "ciphers", "verify", "asn1parse", "errstr", "":
		if f := flagValue(c.args, "-out"); f != nil {
			c.class(Write, "openssl writes "+f.s)
			c.write(*f)
			return
		}
		c.class(Read, "openssl inspects")
	default:
		c.class(Write, "openssl writes keys or files")
		if f := flagValue(c.args, "-out", "-keyout"); f != nil {
			c.write(*f)
		}
	}
}

func crontabTool(c *call) {
	f, _ := opts(c.args)
	switch {
	case hasFlag(f, "-r"):
		c.class(Destructive, "crontab -r deletes the table")
	case hasFlag(f, "-l"):
		c.class(Read, "crontab -l lists")
	default:
		c.class(Write, "crontab changes the table")
	}
}

func setTool(c *call) {
	if len(c.args) == 0 {
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "environment")
		c.class(Secret, "set without arguments prints every variable")
		return
	}
	c.class(Read, "set changes shell options")
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

func curlTool(c *call) {
	c.class(Network, "curl talks to another host")
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case (s == "-o" || s == "--output") && i+1 < len(c.args):
			if t := c.args[i+1].s; t != "-" && !harmlessSink(t) {
				c.class(Write, "curl saves to "+t)
				c.write(c.args[i+1])
			}
			i++
		case s == "-O" || s == "--remote-name" || s == "--remote-name-all" || (strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.HasSuffix(s, "O")):
			c.class(Write, "curl saves the download under its remote name")
			for _, w := range c.args {
				if u := hostOf(w.s); u != "" {
					c.write(word{s: path.Base(w.s), static: w.static})
				}
			}
		case strings.HasPrefix(s, "--output="):
			c.class(Write, "curl saves to a file")
			c.write(word{s: strings.TrimPrefix(s, "--output="), static: c.args[i].static})
		}
	}
}

func wgetTool(c *call) {
	c.class(Network, "wget downloads")
	out := ""
	toStdout := false
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-O" || s == "--output-document":
			if i+1 < len(c.args) {
				out = c.args[i+1].s
				i++
			}
		case strings.HasPrefix(s, "--output-document="):
			out = strings.TrimPrefix(s, "--output-document=")
		case strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "O"):
			rest := s[strings.IndexByte(s, 'O')+1:]
			if rest != "" {
				out = rest
			} else if i+1 < len(c.args) {
				out = c.args[i+1].s
				i++
			}
		case s == "--spider" || s == "-S" && false:
			toStdout = true
		}
	}
	if out == "-" || toStdout {
		return
	}
	c.class(Write, "wget saves the download")
	if out != "" {
		c.write(word{s: out, static: true})
	}
}

func ghTool(c *call) {
	c.class(Network, "gh talks to GitHub")
	sub, rest, _ := subcommand(c.args, "-R", "--repo", "--hostname")
	flags, _ := opts(rest)
	if sub == "auth" && (firstPos(rest) == "token" || hasFlag(flags, "-t", "--show-token")) {
		c.class(Secret, "gh auth prints the token")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "GitHub token")
	}
	if (sub == "repo" || sub == "release" || sub == "secret" || sub == "variable") && firstPos(rest) == "delete" {
		c.class(Destructive, "gh "+sub+" delete deletes")
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

// cdTool follows the directory so that later relative writes resolve
// where the shell would put them; a directory known only at run time
// makes them unknown.
func cdTool(c *call) {
	c.class(Read, c.name+" changes directory")
	_, pos := opts(c.args)
	switch {
	case len(pos) == 0:
		c.a.cwd = Home
	case !pos[0].static && !strings.HasPrefix(pos[0].s, "$HOME") && !strings.HasPrefix(pos[0].s, "${HOME}") || pos[0].s == "-":
		c.a.cwd = ""
	default:
		if p := c.a.resolve(pos[0]); strings.HasPrefix(p, "/") {
			c.a.cwd = p
		} else {
			c.a.cwd = ""
		}
	}
}
