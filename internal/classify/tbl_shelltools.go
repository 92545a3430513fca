package classify

// shelltoolsHandlers is the handler table of this group of programs.
func shelltoolsHandlers() map[string]handler {
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
		"kill":   killTool, "less": lessTool, "more": lessTool,
		"systemctl": systemctlTool, "getent": getentTool, "at": atTool, "batch": atTool,
		"apply_patch": func(c *call) { c.class(Write, "apply_patch edits the files its patch names") },
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
		"uniq": func(c *call) {
			if _, pos := opts(c.args, "-f", "-s", "-w"); len(pos) > 1 {
				c.class(Write, "uniq writes its output file")
				c.write(pos[1])
				return
			}
			c.class(Read, "uniq only reads")
		},
		"yq":      func(c *call) { inPlace(c, "yq", "-i", "--inplace") },
		"openssl": opensslTool,
		"crontab": crontabTool,
		"mount":   func(c *call) { argsOr(c, Read, Unknown, "mount with arguments changes mounts") },
		"set":     setTool,
		"export":  func(c *call) { argsOr(c, Secret, Read, "") },
		"declare": func(c *call) { argsOr(c, Secret, Read, "") },
		"apt":     pkgTool, "apt-get": pkgTool, "aptitude": pkgTool, "yum": pkgTool, "dnf": pkgTool,
		"apk": pkgTool, "pacman": pkgTool, "zypper": pkgTool, "brew": pkgTool, "port": pkgTool,
		"snap": pkgTool, "nix-env": pkgTool, "pkg": pkgTool, "apt-cache": func(c *call) { c.class(Read, "apt-cache only reads") },
		"dpkg": dpkgTool,
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
