package classify

import (
	"github.com/airlock-dev/airlock/internal/classify/devtools"
	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/git"
	"github.com/airlock-dev/airlock/internal/classify/inline"
	"github.com/airlock-dev/airlock/internal/classify/node"
	"github.com/airlock-dev/airlock/internal/classify/python"
	"github.com/airlock-dev/airlock/internal/classify/shelltools"
)

// readOnly tools only inspect (whatever their arguments, unless a handler
// in tools says otherwise).
func readOnly(name string) bool {
	switch name {
	case "ls", "ll", "la", "dir", "vdir", "cat", "tac", "nl", "head", "tail", "less", "more",
		"most", "bat", "batcat", "grep", "egrep", "fgrep", "rg", "ag", "ack", "fd", "fdfind",
		"locate", "wc", "diff", "colordiff", "cmp", "comm", "stat", "file", "tree", "pwd",
		"cd", "pushd", "popd", "dirs", "echo", "printf", "which", "type", "whereis", "hash",
		"jq", "gron", "cut", "tr", "basename", "dirname", "realpath", "readlink", "du", "df",
		"ps", "pgrep", "pstree", "top", "htop", "date", "cal", "whoami", "id", "groups",
		"uname", "hostname", "true", "false", "test", "[", "sleep", "seq", "nproc", "free",
		"uptime", "tput", "man", "help", "info", "apropos", "lsof", "xxd", "hexdump", "od",
		"strings", "md5sum", "sha1sum", "sha256sum", "sha512sum", "shasum", "cksum", "b2sum",
		"base64", "base32", "column", "fold", "fmt", "paste", "join", "expand", "unexpand",
		"rev", "look", "yes", "ldd", "nm", "objdump", "readelf", "size", "tty", "stty",
		"lscpu", "lsblk", "lsmod", "ulimit", "getconf", "locale", "iconv", "numfmt", "expr",
		"bc", "factor", "exit", "return", "shift", "wait", "jobs", "fg", "bg", "disown",
		"shopt", "umask", "history", ":", "tldr", "tokei", "cloc", "scc", "sloccount",
		"getent", "logname", "users", "who", "w", "last", "dmesg", "vmstat", "iostat",
		"mpstat", "sar", "let", "read", "mapfile", "readarray", "caller", "times", "break",
		"continue", "lsb_release", "arch", "unset", "unalias", "enable", "complete",
		"compgen", "pwdx":
		return true
	}
	return false
}

// simpleTool is the one class the program name has whatever its
// arguments, or "".
func simpleTool(name string) Class {
	switch name {
	case "jest", "vitest", "mocha", "ava", "tap", "karma", "pytest", "py.test", "tox", "nox",
		"mypy", "pyright", "flake8", "pylint", "pycodestyle", "pydocstyle", "bandit",
		"shellcheck", "staticcheck", "govulncheck", "revive", "errcheck", "phpunit",
		"phpstan", "psalm", "rspec", "minitest", "hadolint", "yamllint", "markdownlint",
		"stylelint", "tsd", "cucumber", "behave", "nyc", "c8", "ctest", "cypress",
		"vue-tsc", "svelte-check", "actionlint", "buf-lint":
		return Verify
	case "cmake", "ninja", "meson", "scons", "autoreconf", "autoconf", "automake", "configure",
		"webpack", "rollup", "esbuild", "tsup", "babel", "swc", "parcel", "protoc", "javac",
		"gcc", "g++", "cc", "c++", "clang", "clang++", "rustc", "ld", "ar", "node-gyp",
		"sass", "lessc", "tailwindcss", "postcss", "sphinx-build", "mkdocs", "hugo",
		"jekyll", "doxygen", "javadoc", "typedoc", "wasm-pack", "vite", "next", "nuxt",
		"astro", "turbo", "nx", "zig", "ghc", "kotlinc", "scalac", "swiftc", "sbt", "lein",
		"ant", "bazel", "bazelisk", "buck", "pants":
		return Build
	case "touch", "mkdir", "ln", "tee", "patch", "rmdir", "mktemp", "pkill", "killall", "zip",
		"gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "split", "csplit",
		"ssh-keygen", "rustfmt", "autopep8", "yapf", "shfmt", "stylua", "swiftformat",
		"clang-format", "install", "ed", "ex", "sponge":
		return Write
	case "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "ftp", "lftp", "ping",
		"ping6", "dig", "nslookup", "host", "traceroute", "tracepath", "mtr", "whois",
		"http", "https", "xh", "aria2c", "mosh", "ssh-keyscan", "hub", "glab", "grpcurl",
		"websocat", "nmap":
		return Network
	case "shred", "dd", "truncate", "wipefs", "fdisk", "parted", "mke2fs", "srm", "shutdown",
		"reboot", "halt", "poweroff", "rimraf", "del-cli", "trash":
		return Destructive
	case "security", "pass", "op", "secret-tool", "ssh-add", "keyring":
		return Secret
	case "vim", "vi", "nvim", "nano", "emacs", "code", "chroot", "unshare", "nsenter",
		"setpriv", "capsh", "gdb", "lldb", "nodemon", "lua", "Rscript", "osascript", "dc",
		"open", "xdg-open":
		return Unknown
	}
	return ""
}

// catalog is what the analyser knows of programs: each group's handler
// table and the tables above. Every table is a switch, so the catalogue
// costs nothing to make, at start or on first use: a policy check is a
// process of its own, and the maps these were (made on first use) cost
// it more than classifying its command (issue 20).
var theCatalog = engine.Catalog{
	Handler:  handler,
	ReadOnly: readOnly,
	Simple:   simpleTool,
	Family:   python.Family,
}

func catalog() *engine.Catalog { return &theCatalog }

// groups are the handler tables, asked in turn; no program is named by
// two of them (TestNoProgramHasTwoHandlers reads the tables to check it).
var groups = [...]func(name string) engine.Handler{
	shelltools.Handler, inline.Handler, git.Handler, node.Handler, python.Handler, devtools.Handler,
}

// handler is the handler of the program name, or nil.
func handler(name string) engine.Handler {
	for _, g := range groups {
		if h := g(name); h != nil {
			return h
		}
	}
	return nil
}
