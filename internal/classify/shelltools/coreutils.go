package shelltools

import (
	"path"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/secretnames"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

func rmTool(c *engine.Call) {
	flags, pos := engine.Opts(c.Args)
	c.Write(pos...)
	recursive := engine.HasFlag(flags, "-r", "-R", "--recursive")
	allTmp := len(pos) > 0
	for _, w := range pos {
		if p := c.Resolve(w); !w.Static || !strings.HasPrefix(p, "/tmp/") {
			allTmp = false
		}
	}
	if allTmp {
		c.Class(engine.Write, c.Name+" removes scratch files under /tmp")
		return
	}
	if c.AllRegenerable(pos) {
		c.Class(engine.Write, c.Name+" removes build output, which the next build makes again")
		return
	}
	if recursive {
		c.Class(engine.Destructive, c.Name+" -r deletes directory trees")
		return
	}
	c.Class(engine.Destructive, c.Name+" deletes files")
}

func copyTool(c *engine.Call) {
	flags, pos := engine.Opts(c.Args, "-t", "--target-directory", "-S", "--suffix")
	if dir := engine.FlagValue(c.Args, "-t", "--target-directory"); dir != nil {
		c.Write(*dir)
	} else if len(pos) > 1 {
		c.Write(pos[len(pos)-1])
	}
	_ = flags
	if len(pos) == 2 && pos[0].Text == "/dev/null" && !engine.Regenerable(c.Resolve(pos[1])) && !c.Scratch(c.Resolve(pos[1])) {
		c.Class(engine.Destructive, c.Name+" /dev/null empties "+pos[1].Text)
		return
	}
	c.Class(engine.Write, c.Name+" copies files")
}

func moveTool(c *engine.Call) {
	_, pos := engine.Opts(c.Args, "-t", "--target-directory", "-S", "--suffix")
	c.Write(pos...)
	if dir := engine.FlagValue(c.Args, "-t", "--target-directory"); dir != nil {
		c.Write(*dir)
	}
	if len(pos) > 0 && pos[len(pos)-1].Text == "/dev/null" {
		c.Class(engine.Destructive, "mv into /dev/null deletes")
		return
	}
	if len(pos) > 1 {
		dst := c.Resolve(pos[len(pos)-1])
		for _, w := range pos[:len(pos)-1] {
			if src := c.Resolve(w); path.IsAbs(src) && engine.InWorkspace(src) && path.IsAbs(dst) && !engine.InWorkspace(dst) {
				c.Class(engine.Destructive, "mv moves "+w.Text+" out of the workspace (to "+dst+")")
				return
			}
		}
	}
	c.Class(engine.Write, "mv moves files")
}

func rsyncTool(c *engine.Call) {
	flags, pos := engine.Opts(c.Args, "-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--port")
	remote := false
	for _, w := range pos {
		if strings.Contains(w.Text, "::") || strings.HasPrefix(w.Text, "rsync://") || engine.ScpTarget(w.Text) {
			remote = true
		}
	}
	if e := engine.FlagValue(c.Args, "-e", "--rsh"); e != nil {
		c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "rsync runs "+e.Text+" as its remote shell")
		c.Shell(*e)
		c.Keep()
		remote = true
	}
	if remote {
		c.Class(engine.Network, "rsync copies to or from another host")
	} else {
		c.Class(engine.Write, "rsync copies files")
		if len(pos) > 1 {
			c.Write(pos[len(pos)-1])
		}
	}
	if engine.HasFlag(flags, "--delete", "--delete-before", "--delete-after", "--delete-during", "--delete-excluded", "--remove-source-files") {
		c.Class(engine.Destructive, "rsync deletes files")
	}
}

var systemPathRE = lazyre.New(`^(/|/(etc|usr|bin|sbin|lib|lib64|var|boot|home|root|opt|srv|proc|sys|dev)(/.*)?|~|~/?|\$HOME/?|\$\{HOME\}/?|\.|\./?|\*|/workspace/?)$`)

func chTool(c *engine.Call) {
	flags, pos := engine.Opts(c.Args, "--reference")
	if len(pos) > 0 {
		c.Write(pos[1:]...)
	}
	if c.Name == "chmod" && len(pos) > 0 && setuidRE().MatchString(pos[0].Text) {
		c.Class(engine.Unknown, "chmod "+pos[0].Text+" makes a program run with its owner's privileges")
	}
	if engine.HasFlag(flags, "-R", "--recursive") {
		c.Class(engine.Destructive, c.Name+" -R changes a whole tree")
		return
	}
	for _, w := range engine.SkipN(pos, 1) {
		if systemPathRE().MatchString(w.Text) {
			c.Class(engine.Destructive, c.Name+" on "+w.Text)
			return
		}
	}
	c.Class(engine.Write, c.Name+" changes file modes or owners")
}

// awkRiskRE finds what runs a command, writes a file or loads code in an
// awk program: system(), pipes to and from commands (|, |&, getline),
// redirected print, gawk's @load, @include and extension().
var awkRiskRE = lazyre.New(`system\s*\(|\|\s*getline|\|&|print[^;}]*\||print[^;}]*>|@load|@include|extension\s*\(`)

func awkTool(c *engine.Call) {
	var progs []engine.Word
	var pos []engine.Word
	inplace := false
	for i := 0; i < len(c.Args); i++ {
		w := c.Args[i]
		s := w.Text
		name, v, hasVal := strings.Cut(s, "=")
		val := func() (engine.Word, bool) {
			if hasVal && strings.HasPrefix(s, "--") {
				return engine.Word{Text: v, Static: w.Static, Params: w.Params}, true
			}
			if i+1 < len(c.Args) {
				i++
				return c.Args[i], true
			}
			return engine.Word{}, false
		}
		switch {
		case s == "--":
			pos = append(pos, c.Args[i+1:]...)
			i = len(c.Args)
		case s == "-F" || s == "-v" || name == "--field-separator" || name == "--assign":
			val()
		case s == "-e" || name == "--source":
			if p, ok := val(); ok {
				progs = append(progs, p)
			}
		case s == "-i" || name == "--include":
			if p, ok := val(); ok && p.Text == "inplace" && p.Static {
				inplace = true
			} else {
				c.Class(engine.Unknown, "awk includes a source file")
			}
		case strings.HasPrefix(s, "-i"):
			if s == "-iinplace" {
				inplace = true
			} else {
				c.Class(engine.Unknown, "awk includes a source file")
			}
		case strings.HasPrefix(s, "-f") || strings.HasPrefix(s, "-E") || strings.HasPrefix(s, "-l") ||
			name == "--file" || name == "--exec" || name == "--load":
			c.Class(engine.Unknown, "awk runs a program file or loads an extension")
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
		case !p.Static:
			c.Class(engine.Unknown, "awk program computed at run time")
			return
		case awkRiskRE().MatchString(p.Text):
			c.Class(engine.Unknown, "awk program runs commands or writes files")
			return
		}
	}
	if inplace {
		c.Class(engine.Write, "awk -i inplace edits files")
		c.Write(pos...)
		return
	}
	c.Class(engine.Read, "awk prints")
}

func findTool(c *engine.Call) {
	args := c.Args
	acted := false
	roots := findRoots(args)
	secretNames := false
	for i := 0; i < len(args); i++ {
		switch args[i].Text {
		case "-name", "-iname", "-path", "-ipath", "-wholename", "-regex":
			if i+1 < len(args) {
				p := strings.NewReplacer("*", "", "?", "").Replace(args[i+1].Text)
				secretNames = secretNames || secretnames.Path(p) || secretnames.Path("x"+p)
			}
		}
	}
	found := "files find matches by a credential name"
	if r := secretRoot(c, roots); r != "" {
		secretNames, found = true, "files find lists under "+r
	}
	// build output: every root is, or every name selects it under the
	// workspace (find build -exec rm, find . -name '*.pyc' -delete)
	regen := c.AllRegenerable(roots) || engine.FindsRegenerable(args) && inWorkspace(c, roots)
	for i := 0; i < len(args); i++ {
		s := args[i].Text
		switch s {
		case "-delete":
			if regen {
				c.Class(engine.Write, "find -delete removes build output, which the next build makes again")
			} else {
				c.Class(engine.Destructive, "find -delete deletes what it matches")
			}
			acted = true
		case "-exec", "-execdir", "-ok", "-okdir":
			acted = true
			j := i + 1
			for j < len(args) && args[j].Text != ";" && args[j].Text != "+" {
				j++
			}
			if j > i+1 {
				findExec(c, args[i+1:j], regen, secretNames, found)
			}
			i = j
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				c.Class(engine.Write, "find writes its list to a file")
				c.Write(args[i+1])
				acted = true
			}
		}
	}
	if !acted {
		c.Class(engine.Read, "find only lists")
		if secretNames {
			c.ListsSecrets(found)
		}
	} else if len(c.Cmd.Classes) == 0 {
		c.Delegate() // find only hands files to its -exec command
	}
}

// findExec classifies the command find runs on every file it finds: a
// credential file found is read by it, and rm of build output only
// writes the workspace.
func findExec(c *engine.Call, inner []engine.Word, regen, secret bool, found string) {
	added := c.Nested(inner)
	if secret {
		engine.ReadsSecrets(added, found, "runs on "+found)
	}
	if inner[0].Text != "rm" && inner[0].Text != "rmdir" {
		return
	}
	if !regen || !onlyFound(inner[1:]) {
		// kept as find's own entry, so that a walk of ~ or / deleting
		// everything is graded catastrophic as find -delete is
		c.Class(engine.Destructive, "find runs "+inner[0].Text+" on what it finds")
		return
	}
	for k := range added {
		cmd := &added[k]
		if i := slices.Index(cmd.Classes, engine.Destructive); i >= 0 && len(cmd.Argv) > 0 && (cmd.Argv[0] == "rm" || cmd.Argv[0] == "rmdir") {
			cmd.Classes[i] = engine.Write
			cmd.Why = "find removes build output, which the next build makes again"
		}
	}
}

// onlyFound: rm's operands are only the file find found ({}), so it
// deletes what find matched and nothing named besides.
func onlyFound(args []engine.Word) bool {
	n := 0
	for _, w := range args {
		switch {
		case w.Text == "{}":
			n++
		case w.Text == "--" || strings.HasPrefix(w.Text, "-") && w.Static:
		default:
			return false
		}
	}
	return n > 0
}

// findRoots are the paths find walks: the words before its expression
// ("." when there are none).
func findRoots(args []engine.Word) []engine.Word {
	var roots []engine.Word
	for _, w := range args {
		s := w.Text
		if len(roots) == 0 && (s == "-H" || s == "-L" || s == "-P") {
			continue // options before the roots
		}
		if strings.HasPrefix(s, "-") || s == "(" || s == "!" {
			break
		}
		roots = append(roots, w)
	}
	if len(roots) == 0 {
		roots = []engine.Word{{Text: ".", Static: true}}
	}
	return roots
}

// secretRoot returns a root whose walk reaches credential files: ~, /,
// a directory above the home, or a credential directory; a computed
// root may be any of them.
func secretRoot(c *engine.Call, roots []engine.Word) string {
	for _, w := range roots {
		p := c.Resolve(w)
		switch {
		case !w.Static && !strings.HasPrefix(w.Text, "$HOME") && !strings.HasPrefix(w.Text, "${HOME}"):
			return w.Text
		case p == "/" || p == c.Home() || strings.HasPrefix(c.Home(), p+"/") || p == "/root" || p == "/etc" || p == "/run" || p == "/var/run":
			return w.Text
		case secretnames.Path(p) || secretnames.Path(p+"/x"):
			return w.Text
		}
	}
	return ""
}

func inWorkspace(c *engine.Call, roots []engine.Word) bool {
	for _, w := range roots {
		if !w.Static || !engine.InWorkspace(c.Resolve(w)) {
			return false
		}
	}
	return true
}

func opensslTool(c *engine.Call) {
	switch engine.FirstPos(c.Args) {
	case "s_client", "s_time", "ocsp":
		c.Class(engine.Network, "openssl connects to another host")
	case "version", "x509", "dgst", "rand", "list", "ciphers", "verify", "asn1parse", "errstr", "":
		if f := engine.FlagValue(c.Args, "-out"); f != nil {
			c.Class(engine.Write, "openssl writes "+f.Text)
			c.Write(*f)
			return
		}
		c.Class(engine.Read, "openssl inspects")
	default:
		c.Class(engine.Write, "openssl writes keys or files")
		if f := engine.FlagValue(c.Args, "-out", "-keyout"); f != nil {
			c.Write(*f)
		}
	}
}

func crontabTool(c *engine.Call) {
	f, _ := engine.Opts(c.Args)
	switch {
	case engine.HasFlag(f, "-r"):
		c.Class(engine.Destructive, "crontab -r deletes the table")
	case engine.HasFlag(f, "-l"):
		c.Class(engine.Read, "crontab -l lists")
	default:
		c.Persist("crontab installs commands that run on a schedule")
	}
}

// manTool: man's pager and browser are commands it runs.
func manTool(c *engine.Call) {
	for _, o := range [][2]string{{"-P", "--pager"}, {"-H", "--html"}} {
		if p := engine.OptValue(c.Args, o[0], o[1]); p != nil {
			c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "man "+o[0]+" runs a command")
			c.Shell(*p)
			c.Keep()
		}
	}
	c.Class(engine.Read, "man only reads")
}

func sortTool(c *engine.Call) {
	if p := engine.OptValue(c.Args, "", "--compress-program"); p != nil {
		c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "sort --compress-program runs a command")
		c.Shell(*p)
		c.Keep()
	}
	c.Class(engine.Read, "sort reads")
	outFlag(c, engine.Read, "sort", "-o", "--output")
}

// lddTool: ldd runs a program's own loader (its interpreter), so on a
// program that is not the system's it may run that program's code.
func lddTool(c *engine.Call) {
	_, pos := engine.Opts(c.Args)
	for _, w := range pos {
		p := c.Resolve(w)
		if !w.Static || !(strings.HasPrefix(p, "/usr/") || strings.HasPrefix(p, "/lib") || strings.HasPrefix(p, "/bin/") || strings.HasPrefix(p, "/sbin/")) {
			c.Class(engine.Unknown, "ldd runs the loader "+w.Text+" names, which may be its own")
			return
		}
	}
	c.Class(engine.Read, "ldd lists libraries")
}

// patchTool: the file patched when one is named (else the patch names
// them: only the sandbox's own scope holds those), -o, -r and -d.
func patchTool(c *engine.Call) {
	flags, pos := engine.Opts(c.Args, "-B", "-d", "-D", "-F", "-i", "-o", "-p", "-r", "-V", "-Y", "-z", "-g",
		"--backup-prefix", "--directory", "--ifdef", "--fuzz", "--input", "--output", "--strip", "--reject-file",
		"--version-control", "--basename-prefix", "--suffix", "--get", "--quoting-style", "--reject-format")
	if engine.HasFlag(flags, "--dry-run") {
		c.Class(engine.Read, "patch --dry-run only checks")
		return
	}
	c.Class(engine.Write, "patch edits files")
	dir := engine.OptValue(c.Args, "-d", "--directory")
	in := func(w engine.Word) engine.Word {
		if dir != nil && !strings.HasPrefix(w.Text, "/") {
			return engine.Word{Text: dir.Text + "/" + w.Text, Static: w.Static && dir.Static}
		}
		return w
	}
	for _, f := range [][2]string{{"-o", "--output"}, {"-r", "--reject-file"}} {
		if w := engine.OptValue(c.Args, f[0], f[1]); w != nil && w.Text != "-" {
			c.Write(in(*w))
		}
	}
	switch {
	case len(pos) > 0:
		c.Write(in(pos[0]))
	case dir != nil:
		c.Write(*dir)
	}
}

func splitTool(c *engine.Call) {
	c.Class(engine.Write, c.Name+" writes the pieces")
	if c.Name == "csplit" {
		_, pos := engine.Opts(c.Args, "-f", "--prefix", "-b", "--suffix-format", "-n", "--digits")
		_ = pos
		prefix := engine.Word{Text: "xx", Static: true}
		if p := engine.OptValue(c.Args, "-f", "--prefix"); p != nil {
			prefix = *p
		}
		c.Write(prefix)
		return
	}
	_, pos := engine.Opts(c.Args, "-a", "-b", "-C", "-l", "-n", "-t", "--additional-suffix", "--filter", "--suffix-length",
		"--bytes", "--line-bytes", "--lines", "--number", "--separator")
	if f := engine.OptValue(c.Args, "", "--filter"); f != nil {
		c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "split --filter runs a command")
		c.Shell(*f)
		c.Keep()
		return
	}
	prefix := engine.Word{Text: "x", Static: true}
	if len(pos) > 1 {
		prefix = pos[1]
	}
	c.Write(prefix)
}

func sshKeygenTool(c *engine.Call) {
	f, _ := engine.Opts(c.Args, "-a", "-b", "-C", "-D", "-E", "-F", "-f", "-G", "-I", "-J", "-j", "-K", "-m", "-M", "-N",
		"-n", "-O", "-P", "-R", "-r", "-S", "-s", "-t", "-V", "-w", "-Y", "-z")
	if engine.HasFlag(f, "-l", "-y", "-L", "-F", "-Q", "-B") {
		c.Class(engine.Read, "ssh-keygen reads a key")
		return
	}
	c.Class(engine.Write, "ssh-keygen writes a key")
	if file := engine.OptValue(c.Args, "-f", ""); file != nil {
		c.Write(*file)
	}
}

var setuidRE = lazyre.New(`^(?:[ugoa]*[+=][rwxXt]*s|[4-7][0-7]{3})`)

// killTool: kill -1 (every process the user may signal), a negative pid
// (a whole process group) and pid 1 (the sandbox's init) are
// destructive; signalling one process is a local write.
func killTool(c *engine.Call) {
	args := engine.Strs(c.Args)
	if len(args) > 0 && (args[0] == "-s" || args[0] == "-n") {
		args = engine.SkipStr(args, 2)
	} else if len(args) > 1 && strings.HasPrefix(args[0], "-") || len(args) == 1 && args[0] != "-1" && strings.HasPrefix(args[0], "-") {
		args = args[1:] // the signal (alone: the pids come from xargs)
	}
	if len(args) > 0 && (args[0] == "-l" || args[0] == "-L") {
		c.Class(engine.Read, "kill lists signals")
		return
	}
	for _, a := range args {
		if a == "1" || a == "-1" || strings.HasPrefix(a, "-") && len(a) > 1 && a[1] >= '0' && a[1] <= '9' {
			c.Class(engine.Destructive, "kill "+a+" signals every process or a whole process group")
			return
		}
	}
	c.Class(engine.Write, "kill signals a process")
}

// lessTool: less +cmd runs less's command cmd at start; "!" in it runs
// a shell command.
func lessTool(c *engine.Call) {
	for _, w := range c.Args {
		if rest, ok := strings.CutPrefix(w.Text, "+"); ok {
			if i := strings.IndexByte(rest, '!'); i >= 0 {
				c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, c.Name+" +! runs a shell command")
				c.Shell(engine.Word{Text: rest[i+1:], Static: w.Static, Params: w.Params})
				c.Keep()
				c.Class(engine.Read, "")
				return
			}
		}
	}
	c.Class(engine.Read, c.Name+" only reads")
}
