package shelltools

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// Handlers is the handler table of this group of programs.
func Handlers() map[string]engine.Handler {
	return map[string]engine.Handler{
		// Shells and evaluators.
		"sh": shellTool, "bash": shellTool, "zsh": shellTool, "dash": shellTool, "ksh": shellTool,
		"ash": shellTool, "fish": shellTool, "busybox": busybox,
		"eval":   func(c *engine.Call) { c.Shell(engine.JoinWords(c.Args)) },
		"source": sourceTool, ".": sourceTool,
		"cd": cdTool, "pushd": cdTool, "popd": cdTool,
		"alias":  aliasTool,
		"trap":   trapTool,
		"watch":  watchTool,
		"su":     suTool,
		"script": scriptTool,
		"flock":  flockTool,
		// Wrappers.
		"env":      envTool,
		"printenv": printenvTool,
		"sudo":     sudoTool,
		"doas":     func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-u", "-C"); execOrShell(c, rest) },
		"runuser":  func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-u", "-g", "-G"); execOrShell(c, rest) },
		"nice":     func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-n", "--adjustment"); c.Exec(rest) },
		"ionice": func(c *engine.Call) {
			_, rest := engine.LeadingCommand(c.Args, "-c", "-n", "-p", "-P", "-u")
			c.Exec(rest)
		},
		"nohup":    func(c *engine.Call) { c.Exec(c.Args) },
		"setsid":   func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args); c.Exec(rest) },
		"unbuffer": func(c *engine.Call) { c.Exec(c.Args) },
		"builtin":  func(c *engine.Call) { c.Exec(c.Args) },
		"stdbuf":   func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-i", "-o", "-e"); c.Exec(rest) },
		"taskset":  tasksetTool,
		"chrt":     func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args); c.Exec(engine.SkipN(rest, 1)) },
		"timeout":  timeoutTool,
		"time":     timeTool,
		"command":  commandTool,
		"exec":     func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-a"); c.Exec(rest) },
		"xargs":    xargsTool,
		"parallel": parallelTool,
		"strace": func(c *engine.Call) {
			_, rest := engine.LeadingCommand(c.Args, "-o", "-e", "-p", "-s", "-u", "-E")
			c.Exec(rest)
		},
		"ltrace": func(c *engine.Call) {
			_, rest := engine.LeadingCommand(c.Args, "-o", "-e", "-p", "-s", "-u")
			c.Exec(rest)
		},
		"valgrind":  func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args); c.Exec(rest) },
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
		"kill":   killTool, "less": lessTool, "more": lessTool,
		"systemctl": systemctlTool, "getent": getentTool, "at": atTool, "batch": atTool,
		"apply_patch": func(c *engine.Call) { c.Class(engine.Write, "apply_patch edits the files its patch names") },
		"awk":         awkTool, "gawk": awkTool, "mawk": awkTool, "nawk": awkTool,
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
		"uniq": func(c *engine.Call) {
			if _, pos := engine.Opts(c.Args, "-f", "-s", "-w"); len(pos) > 1 {
				c.Class(engine.Write, "uniq writes its output file")
				c.Write(pos[1])
				return
			}
			c.Class(engine.Read, "uniq only reads")
		},
		"yq":      func(c *engine.Call) { inPlace(c, "yq", "-i", "--inplace") },
		"openssl": opensslTool,
		"crontab": crontabTool,
		"mount":   func(c *engine.Call) { argsOr(c, engine.Read, engine.Unknown, "mount with arguments changes mounts") },
		"set":     setTool,
		"export":  func(c *engine.Call) { argsOr(c, engine.Secret, engine.Read, "") },
		"declare": func(c *engine.Call) { argsOr(c, engine.Secret, engine.Read, "") },
		"apt":     pkgTool, "apt-get": pkgTool, "aptitude": pkgTool, "yum": pkgTool, "dnf": pkgTool,
		"apk": pkgTool, "pacman": pkgTool, "zypper": pkgTool, "brew": pkgTool, "port": pkgTool,
		"snap": pkgTool, "nix-env": pkgTool, "pkg": pkgTool, "apt-cache": func(c *engine.Call) { c.Class(engine.Read, "apt-cache only reads") },
		"dpkg": dpkgTool,
		"doppler": func(c *engine.Call) {
			c.Class(engine.Secret, "doppler injects secrets")
			c.Class(engine.Network, "")
			_, rest := engine.LeadingCommand(engine.SkipN(c.Args, 1), "-p", "-c", "--project", "--config")
			if engine.FirstPos(c.Args) == "run" {
				c.Exec(rest)
			}
		},
		"gpg": func(c *engine.Call) {
			if f, _ := engine.Opts(c.Args); engine.HasFlag(f, "--export-secret-keys", "--export-secret-subkeys", "--decrypt", "-d") {
				c.Class(engine.Secret, "gpg reads private keys or decrypts")
				return
			}
			c.Class(engine.Write, "gpg changes the keyring or files")
		},
	}
}
