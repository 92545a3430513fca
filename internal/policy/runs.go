package policy

import (
	"slices"
	"strings"
)

// Options of build and file tools that hand them a command to run.

// tarOpt is one of tar's options with its value (nil: none).
type tarOpt struct {
	name string // "-x" or a long name
	val  *word
}

// tar's short options that take a value, and long ones (the ones that
// run something first: GNU tar takes a long option abbreviated).
const tarShortArg = "bCfFgHIKLNTVX"

var tarLongArg = []string{"--to-command", "--use-compress-program", "--checkpoint-action", "--rsh-command",
	"--info-script", "--new-volume-script", "--file", "--directory", "--files-from", "--exclude-from", "--exclude",
	"--transform", "--xform", "--owner", "--group", "--mode", "--mtime", "--newer", "--newer-mtime", "--after-date",
	"--suffix", "--label", "--format", "--blocking-factor", "--record-size", "--tape-length", "--index-file",
	"--volno-file", "--listed-incremental", "--strip-components", "--warning", "--owner-map", "--group-map",
	"--pax-option", "--quoting-style", "--hole-detection", "--sparse-version", "--starting-file", "--level"}

// tarOptions reads tar's options in its three styles: old (tar xIf zstd
// a.tar: each letter that takes a value takes the next word), short
// bundles (-xIzstd) and long (--to-command=x, --to-command x, --to-com x).
func tarOptions(args []word) (opts []tarOpt, pos []word) {
	i := 0
	if len(args) > 0 && !strings.HasPrefix(args[0].s, "-") && args[0].s != "" {
		i = 1
		for _, ch := range args[0].s {
			o := tarOpt{name: "-" + string(ch)}
			if strings.ContainsRune(tarShortArg, ch) && i < len(args) {
				o.val = &args[i]
				i++
			}
			opts = append(opts, o)
		}
	}
	for ; i < len(args); i++ {
		w := args[i]
		s := w.s
		switch {
		case s == "--":
			return opts, append(pos, args[i+1:]...)
		case strings.HasPrefix(s, "--"):
			name, v, hasVal := strings.Cut(s, "=")
			full := name
			if !contains(tarLongArg, name) && name != "--checkpoint" { // --checkpoint[=N] is an option of its own
				for _, l := range tarLongArg {
					if len(name) >= 4 && strings.HasPrefix(l, name) {
						full = l
						break
					}
				}
			}
			o := tarOpt{name: full}
			if hasVal {
				o.val = &word{s: v, static: w.static, params: w.params}
			} else if full != name || contains(tarLongArg, name) {
				if i+1 < len(args) {
					i++
					o.val = &args[i]
				}
			}
			opts = append(opts, o)
		case strings.HasPrefix(s, "-") && len(s) > 1:
			for j := 1; j < len(s); j++ {
				o := tarOpt{name: "-" + s[j:j+1]}
				if strings.IndexByte(tarShortArg, s[j]) >= 0 {
					if j+1 < len(s) {
						o.val = &word{s: s[j+1:], static: w.static, params: w.params}
					} else if i+1 < len(args) {
						i++
						o.val = &args[i]
					}
					opts = append(opts, o)
					break
				}
				opts = append(opts, o)
			}
		default:
			pos = append(pos, w)
		}
	}
	return opts, pos
}

func tarTool(c *call) {
	if len(c.args) == 0 {
		c.class(Read, "tar alone")
		return
	}
	opts, _ := tarOptions(c.args)
	has := func(names ...string) bool {
		for _, o := range opts {
			if contains(names, o.name) {
				return true
			}
		}
		return false
	}
	value := func(names ...string) *word {
		for _, o := range opts {
			if contains(names, o.name) && o.val != nil {
				return o.val
			}
		}
		return nil
	}
	for _, o := range opts {
		if o.val == nil {
			continue
		}
		switch o.name {
		case "--to-command", "--use-compress-program", "-I", "--rsh-command":
			c.cmd.Why = joinWhy(c.cmd.Why, "tar "+o.name+" runs a command")
			c.shell(*o.val)
			c.delegated = false
		case "--checkpoint-action":
			if cmd, ok := strings.CutPrefix(o.val.s, "exec="); ok {
				c.cmd.Why = joinWhy(c.cmd.Why, "tar --checkpoint-action=exec runs a command")
				c.shell(word{s: cmd, static: o.val.static, params: o.val.params})
				c.delegated = false
			}
		case "-F", "--info-script", "--new-volume-script":
			c.class(Unknown, "tar runs the script "+o.val.s+" at the end of each volume")
		case "-f", "--file":
			if i := strings.IndexByte(o.val.s, ':'); i > 0 && !strings.Contains(o.val.s[:i], "/") && !has("--force-local") {
				c.class(Network, "tar reaches the remote archive "+o.val.s)
				if h := hostOf(o.val.s); h != "" {
					c.cmd.Hosts = appendUniq(c.cmd.Hosts, h)
				}
			}
		}
	}
	switch {
	case has("-t", "--list"):
		c.class(Read, "tar lists an archive")
	case has("-x", "--extract", "--get"):
		c.class(Write, "tar writes files")
		if d := value("-C", "--directory"); d != nil {
			c.write(*d)
		} else if !has("-O", "--to-stdout", "--to-command") {
			c.write(word{s: ".", static: true})
		}
	case has("-c", "--create", "-r", "--append", "-u", "--update"):
		c.class(Write, "tar writes files")
		if f := value("-f", "--file"); f != nil && f.s != "-" {
			c.write(*f)
		}
	default:
		c.class(Write, "tar")
	}
}

// goFlagsWithArg: the go command's flags that take a value.
var goFlagsWithArg = setOf(`-C -o -p -asmflags -buildmode -compiler -gccgoflags -gcflags -installsuffix -tags
-ldflags -mod -modfile -overlay -pgo -pkgdir -toolexec -exec -coverpkg -covermode -vettool -run -bench -count
-timeout -cpu -parallel -benchtime -fuzz -fuzztime -fuzzminimizetime -skip -shuffle -outputdir -coverprofile
-cpuprofile -memprofile -blockprofile -mutexprofile -trace -list -memprofilerate -blockprofilerate
-mutexprofilefraction -debug-actiongraph -debug-runtime-trace -debug-trace`)

// goFlags splits a go subcommand's arguments: each flag with its value
// (-flag=v, -flag v, --flag v), and the positional words.
func goFlags(args []word) (flags map[string]word, pos []word) {
	flags = map[string]word{}
	for i := 0; i < len(args); i++ {
		s := args[i].s
		if s == "--" {
			return flags, append(pos, args[i+1:]...)
		}
		if !strings.HasPrefix(s, "-") || s == "-" {
			pos = append(pos, args[i])
			continue
		}
		name, v, hasVal := strings.Cut(s, "=")
		if strings.HasPrefix(name, "--") {
			name = name[1:]
		}
		switch {
		case hasVal:
			flags[name] = word{s: v, static: args[i].static, params: args[i].params}
		case goFlagsWithArg[name] && i+1 < len(args):
			i++
			flags[name] = args[i]
		default:
			flags[name] = word{static: true}
		}
	}
	return flags, pos
}

// goRunsCommands: -toolexec, -exec and -vettool name programs the go
// command runs (on every compiler call, on the test binary, as vet).
func goRunsCommands(c *call, flags map[string]word) {
	for _, f := range []string{"-toolexec", "-exec", "-vettool"} {
		if w, ok := flags[f]; ok && (w.s != "" || !w.static) {
			c.cmd.Why = joinWhy(c.cmd.Why, "go "+f+" runs "+w.s)
			c.shell(w)
			c.delegated = false
		}
	}
	if w, ok := flags["-ldflags"]; ok {
		if ld := extLinker(w.s); ld != "" {
			c.cmd.Why = joinWhy(c.cmd.Why, "go -ldflags -extld runs "+ld)
			c.shell(word{s: ld, static: w.static, params: w.params})
			c.delegated = false
		}
	}
}

// extLinker finds -extld in linker flags: the external linker the go
// linker runs.
func extLinker(ldflags string) string {
	f := strings.Fields(ldflags)
	for i, s := range f {
		s = strings.Trim(s, `'"`)
		if v, ok := strings.CutPrefix(strings.TrimPrefix(s, "-"), "-extld="); ok {
			return v
		}
		if v, ok := strings.CutPrefix(s, "-extld="); ok {
			return v
		}
		if (s == "-extld" || s == "--extld") && i+1 < len(f) {
			return strings.Trim(f[i+1], `'"`)
		}
	}
	return ""
}

// perlTool: perl -p/-n with only plain s/// and tr/// edits (no e flag,
// no code in an interpolation or a regex) prints, or with -i edits files
// in place; any other code is unknown.
func perlTool(c *call) {
	var code []string
	var why string
	loop, inplace, info := false, false, false
	args := c.args
	i := 0
	notCode := func(s string) {
		if why == "" {
			why = s
		}
	}
	for ; i < len(args); i++ {
		s := args[i].s
		if s == "--" {
			i++
			break
		}
		if !strings.HasPrefix(s, "-") || s == "-" {
			break
		}
		if !args[i].static {
			notCode("perl takes options computed at run time")
		}
	bundle:
		for j := 1; j < len(s); j++ {
			switch ch := s[j]; ch {
			case 'p', 'n':
				loop = true
			case 'a', 's', 't', 'T', 'u', 'U', 'w', 'W', 'X':
			case 'v', 'h', 'V':
				info = true
				break bundle
			case 'e', 'E':
				if j+1 < len(s) {
					code = append(code, s[j+1:])
				} else if i+1 < len(args) {
					i++
					code = append(code, args[i].s)
					if !args[i].static {
						notCode("perl runs code computed at run time")
					}
				}
				break bundle
			case 'i':
				inplace = true
				break bundle // the rest is the backup extension
			case 'l':
				for j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '7' {
					j++
				}
			case '0':
				if j+1 < len(s) && (s[j+1] == 'x' || s[j+1] == 'X') {
					j++
					for j+1 < len(s) && strings.IndexByte("0123456789abcdefABCDEF", s[j+1]) >= 0 {
						j++
					}
				} else {
					for j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '7' {
						j++
					}
				}
			case 'C':
				for j+1 < len(s) && strings.IndexByte("0123456789IOEioeASL", s[j+1]) >= 0 {
					j++
				}
			case 'F':
				loop = true
				if !plainPerlSplit(s[j+1:]) {
					notCode("perl -F pattern holds code")
				}
				break bundle
			case 'I':
				if j+1 == len(s) {
					i++
				}
				break bundle
			case 'M', 'm', 'd', 'D':
				notCode("perl -" + string(ch) + " loads a module")
				break bundle
			default:
				notCode("perl -" + string(ch))
				break bundle
			}
		}
	}
	files := args[min(i, len(args)):]
	if len(code) == 0 {
		if info && why == "" {
			c.class(Read, "perl prints its version or help")
			return
		}
		if len(files) > 0 {
			notCode("perl runs the script " + files[0].s)
		} else {
			notCode("perl reads code from its input")
		}
	}
	if why == "" && !loop {
		notCode("perl runs code")
	}
	if why == "" && !plainPerlEdits(strings.Join(code, "\n")) {
		notCode("perl runs code other than a plain s/// or tr///")
	}
	if why != "" {
		c.class(Unknown, why)
		return
	}
	if inplace {
		c.class(Write, "perl -i edits files in place")
		c.write(files...)
		return
	}
	c.class(Read, "perl -p prints edited text")
}

// plainPerlEdits reports whether code is only s///, tr/// and y///
// statements without the e flag and without code in them.
func plainPerlEdits(code string) bool {
	s := code
	for {
		s = strings.TrimLeft(s, " \t\n;")
		if s == "" {
			return true
		}
		parts := 2
		switch {
		case strings.HasPrefix(s, "s"):
			s = s[1:]
		case strings.HasPrefix(s, "tr"):
			s, parts = s[2:], -2
		case strings.HasPrefix(s, "y"):
			s, parts = s[1:], -2
		default:
			return false
		}
		translit := parts < 0
		rest, ok := perlQuoted(s, translit)
		if !ok {
			return false
		}
		flags := rest
		n := 0
		for n < len(flags) && (flags[n] >= 'a' && flags[n] <= 'z' || flags[n] >= 'A' && flags[n] <= 'Z') {
			n++
		}
		if !translit && strings.ContainsRune(flags[:n], 'e') {
			return false
		}
		s = flags[n:]
		if s != "" && !strings.ContainsRune(" \t\n;", rune(s[0])) {
			return false
		}
	}
}

// perlQuoted reads the two delimited parts after s, tr or y; the text
// after them is returned.
func perlQuoted(s string, translit bool) (string, bool) {
	if s == "" {
		return "", false
	}
	d := s[0]
	if d == ' ' || d == '\t' || d == '\n' || d == '_' || d >= '0' && d <= '9' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d == '=' || d == ',' || d == ';' {
		return "", false
	}
	closer := map[byte]byte{'(': ')', '[': ']', '{': '}', '<': '>'}
	part := func(s string, open byte) (body, rest string, ok bool) {
		cl, bracket := closer[open]
		if !bracket {
			cl = open
		}
		depth := 0
		for i := 1; i < len(s); i++ {
			switch {
			case s[i] == '\\':
				i++
			case bracket && s[i] == open:
				depth++
			case s[i] == cl:
				if depth == 0 {
					return s[1:i], s[i+1:], true
				}
				depth--
			}
		}
		return "", "", false
	}
	first, rest, ok := part(s, d)
	if !ok {
		return "", false
	}
	var second string
	if _, bracket := closer[d]; bracket {
		rest = strings.TrimLeft(rest, " \t\n")
		if rest == "" {
			return "", false
		}
		second, rest, ok = part(rest, rest[0])
	} else {
		second, rest, ok = part(string(d)+rest, d)
	}
	if !ok {
		return "", false
	}
	interp := d != '\''
	if !translit && interp && (perlCodeIn(first) || perlCodeIn(second)) {
		return "", false
	}
	if !translit && perlRegexCode(first) {
		return "", false
	}
	return rest, true
}

// perlCodeIn reports interpolations that run code or read a named
// variable: @{[ ]}, ${\ }, $name, @name.
func perlCodeIn(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '$', '@':
			if i+1 == len(s) {
				continue
			}
			n := s[i+1]
			if n == '{' && s[i] == '$' {
				j := i + 2
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				if j > i+2 && j < len(s) && s[j] == '}' {
					continue // ${1}
				}
				return true
			}
			if n == '{' || n == '[' || n == '_' || n == ':' || n == '$' || n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z' {
				return true
			}
		}
	}
	return false
}

// perlRegexCode: a regex's code blocks, (?{ }), (??{ }) and (*{ }).
func perlRegexCode(s string) bool {
	return strings.Contains(s, "(?{") || strings.Contains(s, "(??{") || strings.Contains(s, "(*{") || strings.Contains(s, "(?? {")
}

// plainPerlSplit: perl -F puts a pattern that starts and ends with /, '
// or " into its code as written (text after the closing delimiter is
// code); any other pattern is quoted.
func plainPerlSplit(p string) bool {
	if strings.ContainsAny(p, " \t\n") || perlRegexCode(p) {
		return false
	}
	if p == "" || !strings.ContainsRune(`/'"`, rune(p[0])) || !strings.ContainsRune(p[1:], rune(p[0])) {
		return true
	}
	d := p[0]
	for i := 1; i < len(p); i++ {
		if p[i] == '\\' {
			i++
			continue
		}
		if p[i] == d {
			return i == len(p)-1 && (d == '\'' || !perlCodeIn(p[1:i]))
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

func unzipTool(c *call) {
	f, _ := opts(c.args, "-d", "-x")
	f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "-d") })
	if hasFlag(f, "-l", "-t", "-v", "-Z", "-p") {
		c.class(Read, "unzip lists or prints")
		return
	}
	c.class(Write, "unzip extracts files")
	if d := optValue(c.args, "-d", ""); d != nil {
		c.write(*d)
	} else {
		c.write(word{s: ".", static: true})
	}
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
		c.delegated = false
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
