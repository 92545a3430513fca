package classify

import (
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// call is one simple command being classified.
type call struct {
	a     *analyzer
	name  string // the tool, after path and launcher were stripped
	args  []word // arguments after the name
	via   []string
	depth int
	cmd   Command
	// delegated: a wrapper handed the rest of the argv on; its own entry is
	// kept only if it has classes of its own.
	delegated bool
	// namesOnly: its arguments name files (patterns, excludes) without
	// reading them, so a credential file named there is not a read.
	namesOnly bool
}

func (c *call) class(cl Class, why string) {
	c.cmd.Classes = addClass(c.cmd.Classes, cl)
	if why != "" {
		c.cmd.Why = joinWhy(c.cmd.Why, why)
	}
}

func (c *call) write(ws ...word) {
	for _, w := range ws {
		if w.s == "" || (w.static && harmlessSink(w.s)) {
			continue
		}
		c.cmd.Writes = appendUniq(c.cmd.Writes, c.a.resolve(w))
	}
}

// exec hands the rest of the argv on as a command of its own (wrappers).
func (c *call) exec(rest []word) {
	c.delegated = true
	if len(rest) == 0 {
		return
	}
	c.a.simple(rest, c.viaMe(), c.depth+1)
}

func (c *call) viaMe() []string {
	return append(slices.Clip(c.via), c.name)
}

// shell analyses a script given as text (sh -c, eval, su -c, watch...).
func (c *call) shell(src word) {
	c.delegated = true
	if !src.static {
		// Parse what is known (the expansions stay as variables) and mark
		// the rest unknown: the expanded text may be any code.
		c.class(Unknown, c.name+" runs script text computed at run time")
		if c.depth+1 <= maxDepth {
			_ = c.a.script(src.s, c.viaMe(), c.depth+1)
		}
		return
	}
	if c.depth+1 > maxDepth {
		c.class(Unknown, "nested too deeply to analyse")
		return
	}
	cwd := c.a.cwd // a child shell's cd stays in the child
	defer func() { c.a.cwd = cwd }()
	if err := c.a.script(src.s, c.viaMe(), c.depth+1); err != nil {
		c.class(Unknown, c.name+" runs script text that does not parse")
	}
}

// joinWords is what eval and friends do with several arguments.
func joinWords(ws []word) word {
	out := word{static: true}
	var parts []string
	for _, w := range ws {
		parts = append(parts, w.s)
		out.static = out.static && w.static
		out.params = append(out.params, w.params...)
	}
	out.s = strings.Join(parts, " ")
	return out
}

func (a *analyzer) simple(args []word, via []string, depth int) {
	if depth > maxDepth {
		a.unknown(via, "nested too deeply to analyse")
		return
	}
	c := &call{a: a, args: args[1:], via: via, depth: depth}
	c.cmd.Via = via
	for _, w := range args {
		c.cmd.Argv = append(c.cmd.Argv, w.s)
	}
	name := args[0]
	tool := name.s
	switch {
	case !name.static || (strings.ContainsAny(tool, "*?[") && tool != "[" && tool != "[[") || tool == "":
		c.name = tool
		c.class(Unknown, "the command name is computed at run time")
	case strings.Contains(tool, "/"):
		c.name = launcher(tool)
		if c.name == "" {
			c.name = tool
			c.runFile("", name)
		}
	default:
		c.name = tool
	}
	if len(c.cmd.Classes) == 0 && a.funcs[c.name] && name.static {
		return // a function of this line: its body was classified
	}
	if len(c.cmd.Classes) == 0 {
		c.dispatch()
	}
	if c.delegated && len(c.cmd.Classes) == 0 {
		return
	}
	c.scan()
	if len(c.cmd.Classes) == 0 {
		c.class(Unknown, "the analyser has no class for "+c.name)
	}
	a.add(c.cmd)
}

// launcher maps a program named by path to the tool it is: system paths
// (/usr/bin/rm is rm) and the project-local launchers of package managers.
// "" means it is a program of the workspace, whose effect is unknown.
func launcher(p string) string {
	base := path.Base(p)
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		for _, d := range []string{"go/bin/", ".cargo/bin/", ".local/bin/", ".bun/bin/", ".deno/bin/"} {
			if tool, ok := strings.CutPrefix(rest, d); ok && tool != "" && !strings.Contains(tool, "/") {
				return tool
			}
		}
		return ""
	}
	if strings.HasPrefix(p, "/") {
		dir := path.Dir(path.Clean(p))
		switch dir {
		case "/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/usr/local/go/bin", "/usr/lib/go/bin":
			return base
		}
		if strings.HasSuffix(dir, "/node_modules/.bin") || strings.HasSuffix(dir, "/go/bin") {
			return base
		}
		return ""
	}
	clean := strings.TrimPrefix(p, "./")
	switch {
	case clean == "gradlew" || clean == "mvnw":
		return base
	case clean == "configure":
		return "configure"
	}
	for _, pre := range []string{"node_modules/.bin/", "vendor/bin/", ".venv/bin/", "venv/bin/", "env/bin/"} {
		if rest, ok := strings.CutPrefix(clean, pre); ok && rest != "" && !strings.Contains(rest, "/") {
			return rest
		}
	}
	return ""
}

func (c *call) dispatch() {
	cat := c.a.cat
	if h, ok := cat.Handlers[c.name]; ok {
		h(c)
		return
	}
	if onlyAsksVersion(c.args) {
		c.class(Read, c.name+" prints its version or help")
		return
	}
	if cat.ReadOnly[c.name] {
		c.class(Read, c.name+" only reads")
		return
	}
	if cl, ok := cat.Simple[c.name]; ok {
		c.class(cl, c.name+" is "+cl.Describe())
		// What these write is named by their arguments: the scope check
		// needs it.
		withArg := []string{"-m", "--mode", "-t", "--target-directory", "-o", "-g"}
		if c.name == "truncate" || c.name == "shred" {
			withArg = append(withArg, "-s", "--size", "-n", "--iterations")
		}
		_, pos := opts(c.args, withArg...)
		switch c.name {
		case "touch", "mkdir", "tee", "rmdir", "truncate", "shred":
			c.write(pos...)
		case "ln", "install":
			if len(pos) > 1 {
				c.write(pos[len(pos)-1])
			}
		}
		return
	}
	if strings.HasPrefix(c.name, "mkfs") {
		c.class(Destructive, c.name+" formats a filesystem")
		return
	}
	if cat.Family != nil {
		if h := cat.Family(c.name); h != nil {
			h(c)
			return
		}
	}
	c.class(Unknown, "unknown program "+c.name)
}

var pythonRE = lazyre.New(`^(python|pypy)[0-9.]*$`)

// IsPython reports whether a program name is a Python interpreter of any
// version (python3.12, pypy3).
func IsPython(name string) bool { return pythonRE().MatchString(name) }

func onlyAsksVersion(args []word) bool {
	if len(args) != 1 {
		return false
	}
	switch args[0].s {
	case "--version", "-v", "-V", "version", "--help", "-h", "help", "-version":
		return true
	}
	return false
}

// scan adds what any argument shows, whatever the tool: credential files
// and variables, and network destinations of network commands.
func (c *call) scan() {
	c.checkEnvDump()
	c.recursiveRoots()
	tmpl := templateCopy(c)
	for _, w := range c.args {
		if tmpl {
			break
		}
		if metaOnly[c.name] || c.namesOnly {
			break
		}
		for _, p := range w.params {
			if secretParam(p) {
				c.cmd.Secrets = appendUniq(c.cmd.Secrets, "$"+p)
				c.class(Secret, "uses the variable $"+p)
			}
		}
		for _, cand := range pathCandidates(w.s) {
			if isSecretPath(cand) {
				c.cmd.Secrets = appendUniq(c.cmd.Secrets, cand)
				c.class(Secret, "touches "+cand)
			}
		}
		if w.glob && c.name != "echo" && c.name != "printf" {
			if name, secret, deep := c.a.secretWord(w); secret {
				c.cmd.Secrets = appendUniq(c.cmd.Secrets, name)
				c.class(Secret, w.s+" may expand to "+name)
			} else if deep {
				c.class(Unknown, "a glob too deep or too many to judge")
			}
		}
	}
	for _, wp := range c.cmd.Writes {
		if isSecretPath(wp) && !tmpl {
			c.cmd.Secrets = appendUniq(c.cmd.Secrets, wp)
			c.class(Secret, "writes "+wp)
		}
	}
	c.keepLoopbackLocal()
	if slices.Contains(c.cmd.Classes, Network) {
		for _, w := range c.args {
			if h := hostOf(w.s); h != "" {
				c.cmd.Hosts = appendUniq(c.cmd.Hosts, h)
			}
		}
	}
}

// pathCandidates are the parts of an argument that may name a file:
// the argument itself, the value of --opt=value, and @file.
func pathCandidates(s string) []string {
	if s == "" || strings.ContainsAny(s, " \t\n") {
		return nil
	}
	out := []string{s}
	if strings.ContainsAny(s, "*?") {
		out = append(out, strings.NewReplacer("*", "", "?", "").Replace(s)) // .env* names .env
	}
	if i := strings.IndexByte(s, '='); i >= 0 && strings.HasPrefix(s, "-") {
		out = append(out, s[i+1:])
	}
	if strings.HasPrefix(s, "@") {
		out = append(out, s[1:])
	}
	if strings.HasPrefix(s, "-") && len(s) > 2 && s[1] != '-' {
		out = append(out, s[2:]) // -f.env
	}
	return out
}

var scpHostRE = lazyre.New(`^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]{2,}|[0-9.]+|\[[0-9a-fA-F:]+\]):`)
var bareHostRE = lazyre.New(`^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)$`)

// hostOf finds a destination in an argument of a network command.
func hostOf(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			return u.Hostname()
		}
		return ""
	}
	if strings.HasPrefix(s, "-") {
		return ""
	}
	if m := scpHostRE().FindStringSubmatch(s); m != nil {
		return strings.Trim(m[1], "[]")
	}
	if m := bareHostRE().FindStringSubmatch(s); m != nil && !looksLikeFile(m[1]) {
		return m[1]
	}
	return ""
}

var fileExtRE = lazyre.New(`\.(json|ya?ml|txt|md|sh|py|js|ts|go|rs|tar|gz|tgz|zip|log|toml|lock|cfg|conf|ini|xml|html|css|csv|pem|key|pub|out|bin|deb|rpm|whl|o|so|a|c|h|java|rb|php|env)$`)

func looksLikeFile(s string) bool {
	return fileExtRE().MatchString(s) || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/")
}

// Option parsing for tools whose options are known.

// opts splits args into flags and positional words. withArg lists the
// flags that take the next word as their value; after "--" everything is
// positional.
func opts(args []word, withArg ...string) (flags []string, pos []word) {
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case s == "--":
			return flags, append(pos, args[i+1:]...)
		case strings.HasPrefix(s, "-") && len(s) > 1:
			flags = append(flags, s)
			if slices.Contains(withArg, s) && i+1 < len(args) {
				i++
			}
		default:
			pos = append(pos, args[i])
		}
	}
	return flags, pos
}

// hasFlag reports whether flags holds any of names; a one-letter name
// also matches inside bundled short flags (-rf has -r and -f).
func hasFlag(flags []string, names ...string) bool {
	for _, f := range flags {
		for _, n := range names {
			if f == n || strings.HasPrefix(f, n+"=") {
				return true
			}
			if len(n) == 2 && n[0] == '-' && n[1] != '-' && len(f) > 2 && f[0] == '-' && f[1] != '-' && strings.IndexByte(f[1:], n[1]) >= 0 {
				return true
			}
		}
	}
	return false
}

// leadingCommand skips a wrapper's options and returns the command after
// them: withArg flags consume a value; the first word that is not a flag
// starts the command.
func leadingCommand(args []word, withArg ...string) (flags []string, rest []word) {
	for i := 0; i < len(args); i++ {
		s := args[i].s
		if s == "--" {
			return flags, args[i+1:]
		}
		if !strings.HasPrefix(s, "-") || len(s) == 1 {
			return flags, args[i:]
		}
		flags = append(flags, s)
		if slices.Contains(withArg, s) && i+1 < len(args) {
			i++
		}
	}
	return flags, nil
}

func strs(ws []word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.s
	}
	return out
}

// underTmp reports whether a resolved path is scratch space.
func underTmp(p string) bool {
	return p == "/tmp" || strings.HasPrefix(p, "/tmp/") || p == "/var/tmp" || strings.HasPrefix(p, "/var/tmp/")
}

// metaOnly tools name files without reading them: naming a credential
// file there (ls ~/.ssh, test -f .env, find -name '*.pem') is not a read.
var metaOnly = setOf("ls ll la dir vdir test [ [[ find fd fdfind stat du realpath dirname basename readlink which type")

// Keep keeps the command's own entry although it handed work on (Exec,
// Shell): what it runs is classified, and so is what it does itself.
func (c *call) Keep() { c.delegated = false }

// Delegate marks the command as only handing work on (find -exec): its
// entry is kept only if it has classes of its own.
func (c *call) Delegate() { c.delegated = true }

// NamesOnly says its arguments name files (patterns, excludes) without
// reading them, so a credential file named there is not a read.
func (c *call) NamesOnly() { c.namesOnly = true }

// Resolve makes a word's path absolute against what is known of the
// directory the command runs in; a path with run-time parts is returned
// as written.
func (c *call) Resolve(w word) string { return c.a.resolve(w) }

// SecretWord reports whether an argument names a credential file, as
// written or by the names its wildcards expand to; deep: a glob too deep
// to judge.
func (c *call) SecretWord(w word) (name string, secret, deep bool) { return c.a.secretWord(w) }

// SetCwd sets the directory later commands of the line run in (cd); ""
// means it is known only at run time.
func (c *call) SetCwd(dir string) { c.a.cwd = dir }

// Nested classifies argv as a command of its own that this one runs
// (find -exec), without handing the rest over as Exec does, and returns
// the entries it added; the caller may amend them before it returns.
func (c *call) Nested(argv []word) []Command {
	first := len(c.a.out.Commands)
	c.a.simple(argv, c.viaMe(), c.depth+1)
	return c.a.out.Commands[first:]
}

// Known reports whether the catalogue has a handler or a single class
// for the program name.
func (c *call) Known(name string) bool {
	return c.a.cat.Handlers[name] != nil || c.a.cat.Simple[name] != ""
}
