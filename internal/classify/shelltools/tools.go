package shelltools

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// Handler is the handler of the program name in this group, or nil. A
// switch costs nothing at start or on first use: the map it replaces,
// built on first use, cost a policy check (a process of its own) more
// than classifying its command.
func Handler(name string) engine.Handler {
	switch name {
	// Shells and evaluators.
	case "sh", "bash", "zsh", "dash", "ksh", "ash", "fish":
		return shellTool
	case "busybox":
		return busybox
	case "eval":
		return func(c *engine.Call) { c.Shell(engine.JoinWords(c.Args)) }
	case "source", ".":
		return sourceTool
	case "cd", "pushd", "popd":
		return cdTool
	case "alias":
		return aliasTool
	case "trap":
		return trapTool
	case "watch":
		return watchTool
	case "su":
		return suTool
	case "script":
		return scriptTool
	case "flock":
		return flockTool
	// Wrappers.
	case "env":
		return envTool
	case "printenv":
		return printenvTool
	case "sudo":
		return sudoTool
	case "doas":
		return func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-u", "-C"); execOrShell(c, rest) }
	case "runuser":
		return func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-u", "-g", "-G"); execOrShell(c, rest) }
	case "nice":
		return func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-n", "--adjustment"); c.Exec(rest) }
	case "ionice":
		return func(c *engine.Call) {
			_, rest := engine.LeadingCommand(c.Args, "-c", "-n", "-p", "-P", "-u")
			c.Exec(rest)
		}
	case "nohup":
		return func(c *engine.Call) { c.Exec(c.Args) }
	case "setsid":
		return func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args); c.Exec(rest) }
	case "unbuffer", "builtin":
		return func(c *engine.Call) { c.Exec(c.Args) }
	case "stdbuf":
		return func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-i", "-o", "-e"); c.Exec(rest) }
	case "taskset":
		return tasksetTool
	case "chrt":
		return func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args); c.Exec(engine.SkipN(rest, 1)) }
	case "timeout":
		return timeoutTool
	case "time":
		return timeTool
	case "command":
		return commandTool
	case "exec":
		return func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args, "-a"); c.Exec(rest) }
	case "xargs":
		return xargsTool
	case "parallel":
		return parallelTool
	case "strace":
		return func(c *engine.Call) {
			_, rest := engine.LeadingCommand(c.Args, "-o", "-e", "-p", "-s", "-u", "-E")
			c.Exec(rest)
		}
	case "ltrace":
		return func(c *engine.Call) {
			_, rest := engine.LeadingCommand(c.Args, "-o", "-e", "-p", "-s", "-u")
			c.Exec(rest)
		}
	case "valgrind":
		return func(c *engine.Call) { _, rest := engine.LeadingCommand(c.Args); c.Exec(rest) }
	case "cross-env":
		return crossEnv
	case "dotenv", "env-cmd":
		return dotenvTool
	// Files.
	case "rm", "unlink":
		return rmTool
	case "cp":
		return copyTool
	case "mv":
		return moveTool
	case "rsync":
		return rsyncTool
	case "chmod", "chown", "chgrp":
		return chTool
	case "kill":
		return killTool
	case "less", "more":
		return lessTool
	case "systemctl":
		return systemctlTool
	case "getent":
		return getentTool
	case "at", "batch":
		return atTool
	case "apply_patch":
		return func(c *engine.Call) { c.Class(engine.Write, "apply_patch edits the files its patch names") }
	case "awk", "gawk", "mawk", "nawk":
		return awkTool
	case "find":
		return findTool
	case "tar":
		return tarTool
	case "unzip":
		return unzipTool
	case "patch":
		return patchTool
	case "split", "csplit":
		return splitTool
	case "ssh-keygen":
		return sshKeygenTool
	case "sort":
		return sortTool
	case "read", "printf", "getopts":
		return readTool
	case "mapfile", "readarray", "compgen", "complete":
		return callbackTool
	case "enable":
		return enableTool
	case "man":
		return manTool
	case "zip":
		return zipTool
	case "ldd":
		return lddTool
	case "curl":
		return curlTool
	case "wget":
		return wgetTool
	case "gh":
		return ghTool
	case "uniq":
		return func(c *engine.Call) {
			if _, pos := engine.Opts(c.Args, "-f", "-s", "-w"); len(pos) > 1 {
				c.Class(engine.Write, "uniq writes its output file")
				c.Write(pos[1])
				return
			}
			c.Class(engine.Read, "uniq only reads")
		}
	case "yq":
		return func(c *engine.Call) { inPlace(c, "yq", "-i", "--inplace") }
	case "openssl":
		return opensslTool
	case "crontab":
		return crontabTool
	case "mount":
		return func(c *engine.Call) { argsOr(c, engine.Read, engine.Unknown, "mount with arguments changes mounts") }
	case "set":
		return setTool
	case "export", "declare":
		return func(c *engine.Call) { argsOr(c, engine.Secret, engine.Read, "") }
	case "apt", "apt-get", "aptitude", "yum", "dnf", "apk", "pacman", "zypper", "brew", "port",
		"snap", "nix-env", "pkg":
		return pkgTool
	case "apt-cache":
		return func(c *engine.Call) { c.Class(engine.Read, "apt-cache only reads") }
	case "dpkg":
		return dpkgTool
	case "doppler":
		return func(c *engine.Call) {
			c.Class(engine.Secret, "doppler injects secrets")
			c.Class(engine.Network, "")
			_, rest := engine.LeadingCommand(engine.SkipN(c.Args, 1), "-p", "-c", "--project", "--config")
			if engine.FirstPos(c.Args) == "run" {
				c.Exec(rest)
			}
		}
	case "gpg":
		return func(c *engine.Call) {
			if f, _ := engine.Opts(c.Args); engine.HasFlag(f, "--export-secret-keys", "--export-secret-subkeys", "--decrypt", "-d") {
				c.Class(engine.Secret, "gpg reads private keys or decrypts")
				return
			}
			c.Class(engine.Write, "gpg changes the keyring or files")
		}
	}
	return nil
}
