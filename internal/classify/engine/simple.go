package engine

import (
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/secretnames"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

// Call is one simple command being classified, as its program's Handler
// sees it. The handler reads Name and Args and says what the command does
// through the methods (Class, Write, Exec, Shell, RunFile...); it may add
// to Cmd's Why, Secrets and Hosts directly. A Call is valid only while
// its handler runs.
type Call struct {
	a     *analyzer
	Name  string // the tool, after path and launcher were stripped
	Args  []Word // arguments after the name
	via   []string
	depth int
	// Cmd is the command's entry in the analysis, as far as it is known.
	Cmd Command
	// delegated: a wrapper handed the rest of the argv on; its own entry is
	// kept only if it has classes of its own.
	delegated bool
	// namesOnly: its arguments name files (patterns, excludes) without
	// reading them, so a credential file named there is not a read.
	namesOnly bool
}

// Class adds the class cl to the command, and why (if not "") to its Why.
func (c *Call) Class(cl Class, why string) {
	c.Cmd.Classes = AddClass(c.Cmd.Classes, cl)
	if why != "" {
		c.Cmd.Why = JoinWhy(c.Cmd.Why, why)
	}
}

// Write notes the paths the words name as written by the command
// (resolved against its directory; /dev/null and the like are skipped).
// It adds no class: the handler says which.
func (c *Call) Write(ws ...Word) {
	for _, w := range ws {
		if w.Text == "" || (w.Static && HarmlessSink(w.Text)) {
			continue
		}
		c.Cmd.Writes = AppendUniq(c.Cmd.Writes, c.a.resolve(w))
	}
}

// Exec hands the rest of the argv on as a command of its own (wrappers):
// it is classified as if run alone, and the wrapper's own entry is kept
// only if it has classes of its own (see Keep).
func (c *Call) Exec(rest []Word) {
	c.delegated = true
	if len(rest) == 0 {
		return
	}
	c.a.simple(rest, c.viaMe(), c.depth+1)
}

func (c *Call) viaMe() []string {
	return append(slices.Clip(c.via), c.Name)
}

// Shell analyses a script given as text (sh -c, eval, su -c, watch...),
// its commands as the line's; like Exec, it hands the command over.
func (c *Call) Shell(src Word) {
	c.delegated = true
	if !src.Static {
		// Parse what is known (the expansions stay as variables) and mark
		// the rest unknown: the expanded text may be any code.
		c.Class(Unknown, c.Name+" runs script text computed at run time")
		if c.depth+1 <= maxDepth {
			_ = c.a.script(src.Text, c.viaMe(), c.depth+1)
		}
		return
	}
	if c.depth+1 > maxDepth {
		c.Class(Unknown, "nested too deeply to analyse")
		return
	}
	cwd, dirs := c.a.cwd, slices.Clone(c.a.dirs) // a child shell's cd stays in the child
	defer func() { c.a.cwd, c.a.dirs = cwd, dirs }()
	if err := c.a.script(src.Text, c.viaMe(), c.depth+1); err != nil {
		c.Class(Unknown, c.Name+" runs script text that does not parse")
	}
}

// JoinWords is what eval and friends do with several arguments.
func JoinWords(ws []Word) Word {
	out := Word{Static: true}
	var parts []string
	for _, w := range ws {
		parts = append(parts, w.Text)
		out.Static = out.Static && w.Static
		out.Params = append(out.Params, w.Params...)
	}
	out.Text = strings.Join(parts, " ")
	return out
}

func (a *analyzer) simple(args []Word, via []string, depth int) {
	if depth > maxDepth {
		a.unknown(via, "nested too deeply to analyse")
		return
	}
	c := &Call{a: a, Args: args[1:], via: via, depth: depth}
	a.pipeOut = "" // a handler that lists files says so after its own nested commands
	c.Cmd.Via = via
	for _, w := range args {
		c.Cmd.Argv = append(c.Cmd.Argv, w.Text)
	}
	name := args[0]
	tool := name.Text
	switch {
	case !name.Static || (strings.ContainsAny(tool, "*?[") && tool != "[" && tool != "[[") || tool == "":
		c.Name = tool
		c.Class(Unknown, "the command name is computed at run time")
	case strings.Contains(tool, "/"):
		c.Name = launcher(tool)
		if c.Name == "" {
			c.Name = tool
			c.RunFile("", name)
		}
	default:
		c.Name = tool
	}
	if len(c.Cmd.Classes) == 0 && a.funcs[c.Name] && name.Static {
		return // a function of this line: its body was classified
	}
	if len(c.Cmd.Classes) == 0 {
		c.dispatch()
		a.passPipe(c.Name, c.Args)
	}
	if c.delegated && len(c.Cmd.Classes) == 0 {
		return
	}
	c.scan()
	if len(c.Cmd.Classes) == 0 {
		c.Class(Unknown, "the analyser has no class for "+c.Name)
	}
	a.add(c.Cmd)
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

func (c *Call) dispatch() {
	cat := c.a.cat
	if h := cat.handler(c.Name); h != nil {
		h(c)
		return
	}
	if OnlyAsksVersion(c.Args) {
		c.Class(Read, c.Name+" prints its version or help")
		return
	}
	if cat.readOnly(c.Name) {
		c.Class(Read, c.Name+" only reads")
		return
	}
	if cl := cat.simple(c.Name); cl != "" {
		c.Class(cl, c.Name+" is "+cl.Describe())
		// What these write is named by their arguments: the scope check
		// needs it.
		withArg := []string{"-m", "--mode", "-t", "--target-directory", "-o", "-g"}
		if c.Name == "truncate" || c.Name == "shred" {
			withArg = append(withArg, "-s", "--size", "-n", "--iterations")
		}
		_, pos := Opts(c.Args, withArg...)
		switch c.Name {
		case "touch", "mkdir", "tee", "rmdir", "truncate", "shred":
			c.Write(pos...)
		case "ln", "install":
			if len(pos) > 1 {
				c.Write(pos[len(pos)-1])
			}
		}
		return
	}
	if strings.HasPrefix(c.Name, "mkfs") {
		c.Class(Destructive, c.Name+" formats a filesystem")
		return
	}
	if cat.Family != nil {
		if h := cat.Family(c.Name); h != nil {
			h(c)
			return
		}
	}
	c.Class(Unknown, "unknown program "+c.Name)
}

var pythonRE = lazyre.New(`^(python|pypy)[0-9.]*$`)

// IsPython reports whether a program name is a Python interpreter of any
// version (python3.12, pypy3).
func IsPython(name string) bool { return pythonRE().MatchString(name) }

// OnlyAsksVersion reports whether the only argument asks for a version
// or help (--version, -h, help...).
func OnlyAsksVersion(args []Word) bool {
	if len(args) != 1 {
		return false
	}
	switch args[0].Text {
	case "--version", "-v", "-V", "version", "--help", "-h", "help", "-version":
		return true
	}
	return false
}

// scan adds what any argument shows, whatever the tool: credential files
// and variables, and network destinations of network commands.
func (c *Call) scan() {
	c.checkEnvDump()
	c.recursiveRoots()
	tmpl := templateCopy(c)
	for _, w := range c.Args {
		if tmpl {
			break
		}
		if metaOnly.Has(c.Name) || c.namesOnly {
			break
		}
		for _, p := range w.Params {
			if secretnames.Var(p) {
				c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, "$"+p)
				c.Class(Secret, "uses the variable $"+p)
			}
		}
		for _, cand := range pathCandidates(w.Text) {
			if secretnames.Path(cand) {
				name := c.a.inHome(cand)
				c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, name)
				c.Class(Secret, "touches "+name)
			}
		}
		c.afterCd(w)
		if w.glob && c.Name != "echo" && c.Name != "printf" {
			if name, secret, deep := c.a.secretWord(w); secret {
				c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, name)
				c.Class(Secret, w.Text+" may expand to "+name)
			} else if deep {
				c.Class(Unknown, "a glob too deep or too many to judge")
			}
		}
	}
	for _, wp := range c.Cmd.Writes {
		if secretnames.Path(wp) && !tmpl {
			c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, wp)
			c.Class(Secret, "writes "+wp)
		}
	}
	c.keepLoopbackLocal()
	if slices.Contains(c.Cmd.Classes, Network) {
		for _, w := range c.Args {
			if h := HostOf(w.Text); h != "" {
				c.Cmd.Hosts = AppendUniq(c.Cmd.Hosts, h)
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

// afterCd judges a relative name where an earlier cd or pushd of the
// line put it: cd ~/.ssh && cat id_rsa reads a key, and after a cd into
// a directory known only at run time any relative name may be one.
func (c *Call) afterCd(w Word) {
	cwd := c.a.cwd
	if cwd == c.a.out.Cwd || !w.Static || c.Name == "echo" || c.Name == "printf" ||
		w.Text == "" || strings.HasPrefix(w.Text, "-") || strings.HasPrefix(w.Text, "/") || strings.HasPrefix(w.Text, "~") {
		return
	}
	if cwd == "" {
		c.Class(Unknown, w.Text+" is relative to a directory known only at run time")
		return
	}
	if rel := path.Clean(w.Text); !dirMayHoldSecrets(cwd) && rel != "." && !strings.HasPrefix(rel, "..") {
		return // the word alone was judged, and the directory adds nothing
	}
	p := path.Join(cwd, w.Text)
	if w.glob {
		p = path.Join(cwd, strings.NewReplacer("*", "x", "?", "x").Replace(w.Text))
	}
	if secretnames.Path(p) {
		c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, p)
		c.Class(Secret, "touches "+p)
	}
}

// dirMayHoldSecrets: a credential path made of dir and a relative name
// that is not one by itself (and does not climb out of dir or name dir
// itself) needs part of a credential directory in dir: they are all
// hidden, or under run/secrets, Library or /proc/PID/environ. The check
// skips the rest, such as a cd within the workspace.
func dirMayHoldSecrets(dir string) bool {
	return strings.Contains(dir, "/.") || strings.Contains(dir, "/run") ||
		strings.Contains(dir, "Library") || strings.HasPrefix(dir, "/proc")
}

// ScpTarget reports whether an argument is scp's HOST:PATH (or
// USER@HOST:PATH) form of a remote file.
func ScpTarget(s string) bool { return scpHostRE().MatchString(s) }

var scpHostRE = lazyre.New(`^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]{2,}|[0-9.]+|\[[0-9a-fA-F:]+\]):`)
var bareHostRE = lazyre.New(`^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)$`)

// HostOf finds a destination in an argument of a network command.
func HostOf(s string) string {
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

// Opts splits args into flags and positional words. withArg lists the
// flags that take the next word as their value; after "--" everything is
// positional.
func Opts(args []Word, withArg ...string) (flags []string, pos []Word) {
	for i := 0; i < len(args); i++ {
		s := args[i].Text
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

// HasFlag reports whether flags holds any of names; a one-letter name
// also matches inside bundled short flags (-rf has -r and -f).
func HasFlag(flags []string, names ...string) bool {
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

// LeadingCommand skips a wrapper's options and returns the command after
// them: withArg flags consume a value; the first word that is not a flag
// starts the command.
func LeadingCommand(args []Word, withArg ...string) (flags []string, rest []Word) {
	for i := 0; i < len(args); i++ {
		s := args[i].Text
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

// Strs returns the words' texts.
func Strs(ws []Word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Text
	}
	return out
}

// underTmp reports whether a resolved path is scratch space.
func underTmp(p string) bool {
	return p == "/tmp" || strings.HasPrefix(p, "/tmp/") || p == "/var/tmp" || strings.HasPrefix(p, "/var/tmp/")
}

// metaOnly tools name files without reading them: naming a credential
// file there (ls ~/.ssh, test -f .env, find -name '*.pem') is not a read.
var metaOnly = SetOf("ls ll la dir vdir test [ [[ find fd fdfind stat du realpath dirname basename readlink which type")

// Keep keeps the command's own entry although it handed work on (Exec,
// Shell): what it runs is classified, and so is what it does itself.
func (c *Call) Keep() { c.delegated = false }

// Delegate marks the command as only handing work on (find -exec): its
// entry is kept only if it has classes of its own.
func (c *Call) Delegate() { c.delegated = true }

// NamesOnly says its arguments name files (patterns, excludes) without
// reading them, so a credential file named there is not a read.
func (c *Call) NamesOnly() { c.namesOnly = true }

// Resolve makes a word's path absolute against what is known of the
// directory the command runs in; a path with run-time parts is returned
// as written.
func (c *Call) Resolve(w Word) string { return c.a.resolve(w) }

// Home is the sandbox user's home, which ~ and $HOME are.
func (c *Call) Home() string { return c.a.home }

// Scratch reports whether an absolute path is scratch in the analysed
// sandbox (Scratch, and its user's home).
func (c *Call) Scratch(abs string) bool { return c.a.scratch(abs) }

// SecretWord reports whether an argument names a credential file, as
// written or by the names its wildcards expand to; deep: a glob too deep
// to judge.
func (c *Call) SecretWord(w Word) (name string, secret, deep bool) { return c.a.secretWord(w) }

// SetCwd sets the directory later commands of the line run in (cd); ""
// means it is known only at run time.
func (c *Call) SetCwd(dir string) { c.a.cwd = dir }

// RepoRoot reports whether w is "$(git rev-parse --show-toplevel)" run
// from inside the workspace, the workspace's repository: the substitution
// is the last command the line added before w's command.
func (c *Call) RepoRoot(w Word) bool {
	cmds := c.a.out.Commands
	if w.Text != "$(…)" || len(cmds) == 0 || c.a.cwd == "" || !InWorkspace(c.a.cwd) {
		return false
	}
	last := cmds[len(cmds)-1]
	return slices.Equal(last.Argv, []string{"git", "rev-parse", "--show-toplevel"}) && last.Dir == ""
}

// PushCwd is pushd: the directory is dir ("" when computed), the one
// left is kept for a later popd.
func (c *Call) PushCwd(dir string) {
	c.a.dirs = append(c.a.dirs, c.a.cwd)
	c.a.cwd = dir
}

// PopCwd is popd: back to the directory of the last pushd; with none on
// the line the stack held before it is unknown, and so the directory.
func (c *Call) PopCwd() {
	if n := len(c.a.dirs); n > 0 {
		c.a.cwd, c.a.dirs = c.a.dirs[n-1], c.a.dirs[:n-1]
		return
	}
	c.a.cwd = ""
}

// Nested classifies argv as a command of its own that this one runs
// (find -exec), without handing the rest over as Exec does, and returns
// the entries it added; the caller may amend them before it returns.
func (c *Call) Nested(argv []Word) []Command {
	first := len(c.a.out.Commands)
	c.a.simple(argv, c.viaMe(), c.depth+1)
	return c.a.out.Commands[first:]
}

// Known reports whether the catalogue has a handler or a single class
// for the program name.
func (c *Call) Known(name string) bool {
	return c.a.cat.handler(name) != nil || c.a.cat.simple(name) != ""
}

// MetaOnly reports whether a program names files without reading them
// (ls, test, find, stat...): naming a credential file there is not a read.
func MetaOnly(name string) bool { return metaOnly.Has(name) }
