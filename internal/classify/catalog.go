package classify

import (
	"sync"

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
var readOnly = engine.SetOf(`ls ll la dir vdir cat tac nl head tail less more most bat batcat grep egrep fgrep
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

// simpleTools have one class whatever their arguments (a function: the
// table is made once, with the catalog, on first use).
func simpleTools() map[string]Class {
	return map[string]Class{
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
}

// catalog is what the analyser knows of programs: each group's handler
// table, merged, and the tables above. Built on first use rather than at
// package init: every airlock process, a sandbox's init too, would pay
// for it at start.
var catalog = sync.OnceValue(func() *engine.Catalog {
	return &engine.Catalog{
		Handlers: mergeHandlers(shelltools.Handlers(), inline.Handlers(), git.Handlers(), node.Handlers(), python.Handlers(), devtools.Handlers()),
		ReadOnly: readOnly,
		Simple:   simpleTools(),
		Family:   python.Family,
	}
})

// mergeHandlers merges the groups' tables; a program named by two groups
// is a mistake in the tables, and panics on first use (every test that
// classifies a line finds it).
func mergeHandlers(tables ...map[string]engine.Handler) map[string]engine.Handler {
	out := map[string]engine.Handler{}
	for _, t := range tables {
		for name, h := range t {
			if _, dup := out[name]; dup {
				panic("classify: two handlers for " + name)
			}
			out[name] = h
		}
	}
	return out
}
