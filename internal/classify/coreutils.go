package classify

import (
	"path"
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

func rmTool(c *call) {
	flags, pos := opts(c.args)
	c.write(pos...)
	recursive := hasFlag(flags, "-r", "-R", "--recursive")
	allTmp := len(pos) > 0
	for _, w := range pos {
		if p := c.Resolve(w); !w.static || !strings.HasPrefix(p, "/tmp/") {
			allTmp = false
		}
	}
	if allTmp {
		c.class(Write, c.name+" removes scratch files under /tmp")
		return
	}
	if c.allRegenerable(pos) {
		c.class(Write, c.name+" removes build output, which the next build makes again")
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
	if len(pos) == 2 && pos[0].s == "/dev/null" && !regenerable(c.Resolve(pos[1])) && !Scratch(c.Resolve(pos[1])) {
		c.class(Destructive, c.name+" /dev/null empties "+pos[1].s)
		return
	}
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
	if len(pos) > 1 {
		dst := c.Resolve(pos[len(pos)-1])
		for _, w := range pos[:len(pos)-1] {
			if src := c.Resolve(w); path.IsAbs(src) && inWorkspace(src) && path.IsAbs(dst) && !inWorkspace(dst) {
				c.class(Destructive, "mv moves "+w.s+" out of the workspace (to "+dst+")")
				return
			}
		}
	}
	c.class(Write, "mv moves files")
}

func rsyncTool(c *call) {
	flags, pos := opts(c.args, "-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--port")
	remote := false
	for _, w := range pos {
		if strings.Contains(w.s, "::") || strings.HasPrefix(w.s, "rsync://") || scpHostRE().MatchString(w.s) {
			remote = true
		}
	}
	if e := flagValue(c.args, "-e", "--rsh"); e != nil {
		c.cmd.Why = joinWhy(c.cmd.Why, "rsync runs "+e.s+" as its remote shell")
		c.shell(*e)
		c.Keep()
		remote = true
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
	if c.name == "chmod" && len(pos) > 0 && setuidRE().MatchString(pos[0].s) {
		c.class(Unknown, "chmod "+pos[0].s+" makes a program run with its owner's privileges")
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
			if findsRegenerable(args) {
				c.class(Write, "find -delete removes build output, which the next build makes again")
			} else {
				c.class(Destructive, "find -delete deletes what it matches")
			}
			acted = true
		case "-exec", "-execdir", "-ok", "-okdir":
			acted = true
			j := i + 1
			for j < len(args) && args[j].s != ";" && args[j].s != "+" {
				j++
			}
			if j > i+1 {
				inner := args[i+1 : j]
				added := c.Nested(inner)
				// The command runs on every file found: a credential
				// file found by name is read by it.
				if secretNames && !metaOnly[inner[0].s] {
					for k := range added {
						cmd := &added[k]
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
		c.Delegate() // find only hands files to its -exec command
	}
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
		c.persist("crontab installs commands that run on a schedule")
	}
}

// manTool: man's pager and browser are commands it runs.
func manTool(c *call) {
	for _, o := range [][2]string{{"-P", "--pager"}, {"-H", "--html"}} {
		if p := optValue(c.args, o[0], o[1]); p != nil {
			c.cmd.Why = joinWhy(c.cmd.Why, "man "+o[0]+" runs a command")
			c.shell(*p)
			c.Keep()
		}
	}
	c.class(Read, "man only reads")
}

func sortTool(c *call) {
	if p := optValue(c.args, "", "--compress-program"); p != nil {
		c.cmd.Why = joinWhy(c.cmd.Why, "sort --compress-program runs a command")
		c.shell(*p)
		c.Keep()
	}
	c.class(Read, "sort reads")
	outFlag(c, Read, "sort", "-o", "--output")
}

// lddTool: ldd runs a program's own loader (its interpreter), so on a
// program that is not the system's it may run that program's code.
func lddTool(c *call) {
	_, pos := opts(c.args)
	for _, w := range pos {
		p := c.Resolve(w)
		if !w.static || !(strings.HasPrefix(p, "/usr/") || strings.HasPrefix(p, "/lib") || strings.HasPrefix(p, "/bin/") || strings.HasPrefix(p, "/sbin/")) {
			c.class(Unknown, "ldd runs the loader "+w.s+" names, which may be its own")
			return
		}
	}
	c.class(Read, "ldd lists libraries")
}

// patchTool: the file patched when one is named (else the patch names
// them: only the sandbox's own scope holds those), -o, -r and -d.
func patchTool(c *call) {
	flags, pos := opts(c.args, "-B", "-d", "-D", "-F", "-i", "-o", "-p", "-r", "-V", "-Y", "-z", "-g",
		"--backup-prefix", "--directory", "--ifdef", "--fuzz", "--input", "--output", "--strip", "--reject-file",
		"--version-control", "--basename-prefix", "--suffix", "--get", "--quoting-style", "--reject-format")
	if hasFlag(flags, "--dry-run") {
		c.class(Read, "patch --dry-run only checks")
		return
	}
	c.class(Write, "patch edits files")
	dir := optValue(c.args, "-d", "--directory")
	in := func(w word) word {
		if dir != nil && !strings.HasPrefix(w.s, "/") {
			return word{s: dir.s + "/" + w.s, static: w.static && dir.static}
		}
		return w
	}
	for _, f := range [][2]string{{"-o", "--output"}, {"-r", "--reject-file"}} {
		if w := optValue(c.args, f[0], f[1]); w != nil && w.s != "-" {
			c.write(in(*w))
		}
	}
	switch {
	case len(pos) > 0:
		c.write(in(pos[0]))
	case dir != nil:
		c.write(*dir)
	}
}

func splitTool(c *call) {
	c.class(Write, c.name+" writes the pieces")
	if c.name == "csplit" {
		_, pos := opts(c.args, "-f", "--prefix", "-b", "--suffix-format", "-n", "--digits")
		_ = pos
		prefix := word{s: "xx", static: true}
		if p := optValue(c.args, "-f", "--prefix"); p != nil {
			prefix = *p
		}
		c.write(prefix)
		return
	}
	_, pos := opts(c.args, "-a", "-b", "-C", "-l", "-n", "-t", "--additional-suffix", "--filter", "--suffix-length",
		"--bytes", "--line-bytes", "--lines", "--number", "--separator")
	if f := optValue(c.args, "", "--filter"); f != nil {
		c.cmd.Why = joinWhy(c.cmd.Why, "split --filter runs a command")
		c.shell(*f)
		c.Keep()
		return
	}
	prefix := word{s: "x", static: true}
	if len(pos) > 1 {
		prefix = pos[1]
	}
	c.write(prefix)
}

func sshKeygenTool(c *call) {
	f, _ := opts(c.args, "-a", "-b", "-C", "-D", "-E", "-F", "-f", "-G", "-I", "-J", "-j", "-K", "-m", "-M", "-N",
		"-n", "-O", "-P", "-R", "-r", "-S", "-s", "-t", "-V", "-w", "-Y", "-z")
	if hasFlag(f, "-l", "-y", "-L", "-F", "-Q", "-B") {
		c.class(Read, "ssh-keygen reads a key")
		return
	}
	c.class(Write, "ssh-keygen writes a key")
	if file := optValue(c.args, "-f", ""); file != nil {
		c.write(*file)
	}
}

var setuidRE = lazyre.New(`^(?:[ugoa]*[+=][rwxXt]*s|[4-7][0-7]{3})`)

// killTool: kill -1 (every process the user may signal), a negative pid
// (a whole process group) and pid 1 (the sandbox's init) are
// destructive; signalling one process is a local write.
func killTool(c *call) {
	args := strs(c.args)
	if len(args) > 0 && (args[0] == "-s" || args[0] == "-n") {
		args = skipStr(args, 2)
	} else if len(args) > 1 && strings.HasPrefix(args[0], "-") || len(args) == 1 && args[0] != "-1" && strings.HasPrefix(args[0], "-") {
		args = args[1:] // the signal (alone: the pids come from xargs)
	}
	if len(args) > 0 && (args[0] == "-l" || args[0] == "-L") {
		c.class(Read, "kill lists signals")
		return
	}
	for _, a := range args {
		if a == "1" || a == "-1" || strings.HasPrefix(a, "-") && len(a) > 1 && a[1] >= '0' && a[1] <= '9' {
			c.class(Destructive, "kill "+a+" signals every process or a whole process group")
			return
		}
	}
	c.class(Write, "kill signals a process")
}

// lessTool: less +cmd runs less's command cmd at start; "!" in it runs
// a shell command.
func lessTool(c *call) {
	for _, w := range c.args {
		if rest, ok := strings.CutPrefix(w.s, "+"); ok {
			if i := strings.IndexByte(rest, '!'); i >= 0 {
				c.cmd.Why = joinWhy(c.cmd.Why, c.name+" +! runs a shell command")
				c.shell(word{s: rest[i+1:], static: w.static, params: w.params})
				c.Keep()
				c.class(Read, "")
				return
			}
		}
	}
	c.class(Read, c.name+" only reads")
}
