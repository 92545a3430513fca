package engine

import (
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/classify/secretnames"
	"mvdan.cc/sh/v3/syntax"
)

// Class is one kind of effect a command may have.
type Class string

// The classes, from the seed's table, plus Write (a local, non-destructive
// change such as mkdir, git commit or a redirect into a file), Run (the
// workspace's own code: python script.py, ./run.sh, inline code that only
// computes), Persist (a change of what runs later: crontab, registry and
// hook configuration, shell startup files, installed packages' files) and
// Unknown (the effect cannot be known from the text: an unknown program,
// code that starts processes or decodes payloads, a command name computed
// at run time).
const (
	Read        Class = "read"
	Verify      Class = "verify"
	Build       Class = "build"
	Run         Class = "run"
	Write       Class = "write"
	Dependency  Class = "dependency"
	Persist     Class = "persist"
	Network     Class = "network"
	Destructive Class = "destructive"
	Secret      Class = "secret"
	Unknown     Class = "unknown"
)

// Classes lists every class in a fixed order.
var Classes = []Class{Read, Verify, Build, Run, Write, Dependency, Persist, Network, Destructive, Secret, Unknown}

// Describe says in a few words what a class means.
func (c Class) Describe() string {
	switch c {
	case Read:
		return "read-only inspection"
	case Verify:
		return "local verification (tests, linters, type checks)"
	case Build:
		return "build or generate"
	case Run:
		return "runs the workspace's own code"
	case Write:
		return "local change to files"
	case Persist:
		return "changes what runs later (configuration, hooks, scripts, installed code)"
	case Dependency:
		return "dependency change"
	case Network:
		return "network command"
	case Destructive:
		return "destructive"
	case Secret:
		return "secret access"
	case Unknown:
		return "effect unknown"
	}
	return string(c)
}

// Valid reports whether c is one of Classes.
func (c Class) Valid() bool { return slices.Contains(Classes, c) }

// Command is one simple command found in a command line, after every
// wrapper (env, sudo, timeout, xargs...) and shell (-c) around it was seen
// through.
type Command struct {
	// Argv is the command as far as it is known from the text: parts only
	// known at run time are kept as written ($X, $(...)).
	Argv []string `json:"argv"`
	// Via lists the wrappers and shells it was found inside, outermost first.
	Via     []string `json:"via,omitempty"`
	Classes []Class  `json:"classes"`
	// Why says, in one line, what gave the classes.
	Why     string   `json:"why"`
	Writes  []string `json:"writes,omitempty"`  // paths it would write or remove
	Hosts   []string `json:"hosts,omitempty"`   // network destinations named
	Secrets []string `json:"secrets,omitempty"` // credential files and variables it touches
	// Dir is the directory it runs in when a cd before it moved there
	// (as far as the text tells); "": the line's working directory.
	Dir string `json:"dir,omitempty"`
	// Tags are facts a policy rule can match besides the classes
	// (TagCatastrophic, TagForcePush...).
	Tags []string `json:"tags,omitempty"`
}

// Analysis is what a command line would do, as far as its text tells.
type Analysis struct {
	Line     string    `json:"line"`
	Cwd      string    `json:"cwd"`
	Commands []Command `json:"commands"`
	Classes  []Class   `json:"classes"` // the union, in Classes order
	Writes   []string  `json:"writes,omitempty"`
	Hosts    []string  `json:"hosts,omitempty"`
	Secrets  []string  `json:"secrets,omitempty"`
	// Error is set when the line could not be parsed; the line is then
	// classified Unknown.
	Error string `json:"error,omitempty"`
	// cat is the catalogue it was made with, and home the sandbox
	// user's home, for WithGranted.
	cat  *Catalog
	home string
}

// Has reports whether the analysis found class c.
func (a *Analysis) Has(c Class) bool { return slices.Contains(a.Classes, c) }

// Home is the default sandbox user's home directory; ~ and $HOME resolve
// to it unless an analysis is given another (AnalyzeIn: the E2B door's
// /home/user).
const Home = "/home/sandbox"

// DefaultCwd is where commands run when no directory is given.
const DefaultCwd = "/workspace"

// maxDepth bounds nested shells, eval and wrappers; deeper is Unknown.
const maxDepth = 12

// maxLine bounds the text analysed; longer lines are Unknown.
const maxLine = 64 << 10

var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// Analyze classifies a shell command line run in cwd ("" means
// DefaultCwd) with what cat knows of programs.
func Analyze(line, cwd string, cat *Catalog) *Analysis { return AnalyzeIn(line, cwd, "", cat) }

// newAnalyzer starts the analysis of line in cwd for a sandbox whose
// user's home is home ("": Home).
func newAnalyzer(line, cwd, home string, cat *Catalog) *analyzer {
	if home == "" {
		home = Home
	}
	return &analyzer{out: &Analysis{Line: line, Cwd: cwd, cat: cat, home: home}, cwd: cwd, cat: cat, home: home}
}

// AnalyzeIn is Analyze in a sandbox whose user's home is home ("":
// Home): ~ and $HOME are it, and what is judged of the home (its
// startup files, its credentials, its removal) is judged of it.
func AnalyzeIn(line, cwd, home string, cat *Catalog) *Analysis {
	if cwd == "" {
		cwd = DefaultCwd
	}
	a := newAnalyzer(line, cwd, home, cat)
	if len(line) > maxLine {
		a.out.Error = "command line too long to analyse"
		a.unknown(nil, "the command line is longer than the analyser reads")
	} else if err := a.script(line, nil, 0); err != nil {
		a.out.Error = err.Error()
		a.out.Commands = nil
		a.unknown(nil, "the command line does not parse: "+err.Error())
	}
	a.finish()
	return a.out
}

// AnalyzeArgv classifies an argv as the sandbox would run it (no
// shell around it, unless argv itself is one) with what cat knows of
// programs.
func AnalyzeArgv(argv []string, cwd string, cat *Catalog) *Analysis {
	return AnalyzeArgvIn(argv, cwd, "", cat)
}

// AnalyzeArgvIn is AnalyzeArgv in a sandbox whose user's home is home
// ("": Home), as AnalyzeIn.
func AnalyzeArgvIn(argv []string, cwd, home string, cat *Catalog) *Analysis {
	if cwd == "" {
		cwd = DefaultCwd
	}
	a := newAnalyzer(JoinArgv(argv), cwd, home, cat)
	if len(argv) == 0 {
		a.unknown(nil, "empty command")
	} else {
		args := make([]Word, len(argv))
		for i, s := range argv {
			args[i] = Word{Text: s, Static: true}
		}
		a.simple(args, nil, 0)
	}
	a.finish()
	return a.out
}

// JoinArgv quotes argv as one shell line, for display and for matching.
func JoinArgv(argv []string) string {
	var b strings.Builder
	for i, s := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quote(s))
	}
	return b.String()
}

func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%^", r))
	}) < 0 {
		return s
	}
	if q, err := syntax.Quote(s, syntax.LangBash); err == nil {
		return q
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type analyzer struct {
	out  *Analysis
	cat  *Catalog // what is known of programs
	cwd  string   // best knowledge of the current directory ("" when computed)
	home string   // the sandbox user's home: ~ and $HOME
	// funcs are the functions the line defines: calling one runs its body,
	// which is classified where it is defined.
	funcs map[string]bool
	// globSteps counts the name matches tried to judge globs (bounded by
	// maxGlobSteps).
	globSteps int
	// bodies are the heredocs and here-strings of the line, by command.
	bodies []stdinText
	// vars are the variables the line set to text known here (see setVar).
	vars map[string]string
	// inlineBytes counts the inline interpreter code read (bounded by
	// maxInlineBytes).
	inlineBytes int
	// dirs is the pushd stack of directories above cwd.
	dirs []string
	// pipeIn is what the stage piped into the current command lists
	// (see ListsSecrets); pipeOut what the current stage lists.
	pipeIn, pipeOut string
}

// hasGlob reports an unescaped *, ? or [ in a literal.
func hasGlob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// secretWord reports whether an argument names a credential file, as
// written or, unquoted, by the names its wildcards expand to; deep: a
// glob too deep to judge.
func (a *analyzer) secretWord(w Word) (name string, secret, deep bool) {
	if secretnames.Path(w.Text) {
		return w.Text, true, false
	}
	if !w.glob {
		return "", false, false
	}
	for _, pat := range secretnames.ExtglobAlternatives(w.Text, 16) {
		switch r, n := secretnames.JudgeGlob(pat, &a.globSteps); r {
		case secretnames.GlobSecret:
			return n, true, false
		case secretnames.GlobTooDeep:
			deep = true
		}
	}
	return "", false, deep
}

// netDevice: bash opens /dev/tcp/HOST/PORT and /dev/udp/HOST/PORT as
// connections; the host is returned.
func netDevice(p string) (string, bool) {
	for _, pre := range []string{"/dev/tcp/", "/dev/udp/"} {
		if rest, ok := strings.CutPrefix(p, pre); ok {
			h, _, _ := strings.Cut(rest, "/")
			return h, true
		}
	}
	return "", false
}

// Word is one argument: its text as far as known, whether all of it is
// known, and the variables it reads.
type Word struct {
	// Text is the argument as the shell would pass it, parts known only
	// at run time kept as written ($X, $(…)).
	Text string
	// Static: all of Text is known from the line.
	Static bool
	// Params are the variables it expands.
	Params []string
	// glob: it holds a wildcard the shell expands (unquoted).
	glob bool
}

func (a *analyzer) script(src string, via []string, depth int) error {
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	if err != nil {
		return err
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil {
			if a.funcs == nil {
				a.funcs = map[string]bool{}
			}
			a.funcs[fd.Name.Value] = true
		}
		return true
	})
	a.stmts(f.Stmts, via, depth)
	return nil
}

func (a *analyzer) stmts(list []*syntax.Stmt, via []string, depth int) {
	for _, s := range list {
		a.stmt(s, via, depth)
	}
}

func (a *analyzer) stmt(s *syntax.Stmt, via []string, depth int) {
	if s == nil {
		return
	}
	first := len(a.out.Commands)
	if s.Cmd != nil {
		a.command(s.Cmd, via, depth)
	}
	for _, r := range s.Redirs {
		a.redirect(r, first, via, depth)
	}
}

func (a *analyzer) command(c syntax.Command, via []string, depth int) {
	switch c := c.(type) {
	case *syntax.CallExpr:
		a.call(c, via, depth)
	case *syntax.BinaryCmd:
		if c.Op != syntax.Pipe && c.Op != syntax.PipeAll {
			a.stmt(c.X, via, depth)
			a.stmt(c.Y, via, depth)
			break
		}
		in := a.pipeIn
		a.pipeOut = ""
		a.stmt(c.X, via, depth)
		a.pipeIn, a.pipeOut = a.pipeOut, ""
		a.stmt(c.Y, via, depth)
		a.pipeIn = in // pipeOut stays: the last stage's list is the pipe's
		a.pipedPayload(c, via, depth)
	case *syntax.Subshell:
		a.subshell(c.Stmts, via, depth)
	case *syntax.Block:
		a.stmts(c.Stmts, via, depth)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			a.stmts(ic.Cond, via, depth)
			a.stmts(ic.Then, via, depth)
		}
	case *syntax.WhileClause:
		a.stmts(c.Cond, via, depth)
		a.stmts(c.Do, via, depth)
	case *syntax.ForClause:
		a.substs(c.Loop, via, depth)
		a.stmts(c.Do, via, depth)
	case *syntax.CaseClause:
		a.substs(c.Word, via, depth)
		for _, it := range c.Items {
			a.stmts(it.Stmts, via, depth)
		}
	case *syntax.FuncDecl:
		// A function's body runs when it is called; whatever it does
		// counts now, since the name may shadow any command.
		a.stmt(c.Body, via, depth)
	case *syntax.DeclClause:
		a.substs(c, via, depth)
		a.decl(c, via, depth)
	case *syntax.TimeClause:
		a.stmt(c.Stmt, via, depth)
	case *syntax.CoprocClause:
		a.stmt(c.Stmt, via, depth)
	case *syntax.TestClause, *syntax.ArithmCmd, *syntax.LetClause:
		a.substs(c, via, depth)
		a.add(Command{Argv: []string{testName(c)}, Via: via, Classes: []Class{Read}, Why: "shell test or arithmetic"})
	case *syntax.TestDecl:
		a.stmt(c.Body, via, depth)
	default:
		a.unknown(via, "shell construct the analyser does not know")
	}
}

// subshell classifies commands a child shell runs (( ), $( ), <( )):
// a cd there leaves the line's directory as it was.
func (a *analyzer) subshell(list []*syntax.Stmt, via []string, depth int) {
	cwd, dirs := a.cwd, slices.Clone(a.dirs)
	a.stmts(list, via, depth)
	a.cwd, a.dirs = cwd, dirs
}

func testName(c syntax.Command) string {
	switch c.(type) {
	case *syntax.TestClause:
		return "[["
	case *syntax.LetClause:
		return "let"
	}
	return "(("
}

// substs classifies the commands inside every command or process
// substitution under n (they run whatever the outer command is).
func (a *analyzer) substs(n syntax.Node, via []string, depth int) {
	if n == nil {
		return
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			a.subshell(n.Stmts, via, depth+1)
			return false
		case *syntax.ProcSubst:
			a.subshell(n.Stmts, via, depth+1)
			return false
		}
		return true
	})
}

func (a *analyzer) decl(c *syntax.DeclClause, via []string, depth int) {
	name := c.Variant.Value
	cmd := Command{Argv: []string{name}, Via: via, Classes: []Class{Read}, Why: "shell builtin"}
	printing := len(c.Args) == 0
	named := false
	for _, as := range c.Args {
		if as.Naked && as.Name == nil && as.Value != nil {
			w := a.word(as.Value)
			if w.Static && (w.Text == "-p" || w.Text == "-x") && (name == "declare" || name == "typeset" || name == "export") {
				printing = true
			}
			// export "NAME=value" (quoted), or a name computed at run time
			if n, v, ok := strings.Cut(w.Text, "="); ok && !strings.HasPrefix(w.Text, "-") {
				named = true
				a.assignNamed(n, Word{Text: v, Static: w.Static, Params: w.Params}, via, depth)
			} else if !w.Static && !strings.HasPrefix(w.Text, "-") {
				a.add(Command{Argv: []string{name, w.Text}, Via: via, Classes: []Class{Unknown}, Why: name + " sets a variable whose name is known only at run time"})
			}
		}
		if as.Name != nil {
			named = true
		}
		if as.Name != nil {
			cmd.Argv = append(cmd.Argv, as.Name.Value+"=…")
			if as.Value != nil && EnvWatched(as.Name.Value) {
				a.assign(as.Name.Value, a.assignValue(as), via, depth)
			}
		}
	}
	if printing && !named && name != "local" && name != "readonly" {
		cmd.Classes = []Class{Secret}
		cmd.Why = name + " without names prints the environment"
		cmd.Secrets = []string{"environment"}
	}
	a.add(cmd)
}

func (a *analyzer) call(c *syntax.CallExpr, via []string, depth int) {
	for _, as := range c.Assigns {
		a.substs(as, via, depth)
		if as.Name != nil && as.Array == nil && EnvWatched(as.Name.Value) {
			a.assign(as.Name.Value, a.assignValue(as), via, depth)
		}
	}
	var args []Word
	for _, w := range c.Args {
		a.substs(w, via, depth)
		if syntax.SplitBraces(w) {
			words, more := braceWords(w, 64)
			for _, bw := range words {
				args = append(args, a.word(bw))
			}
			if more {
				args = append(args, Word{Text: "{…}"})
			}
			continue
		}
		args = append(args, a.word(w))
	}
	if len(args) == 0 {
		cmd := Command{Via: via, Classes: []Class{Read}, Why: "variable assignment"}
		for _, as := range c.Assigns {
			a.setVar(as)
			if as.Name != nil {
				cmd.Argv = append(cmd.Argv, as.Name.Value+"=…")
			}
		}
		a.add(cmd)
		return
	}
	a.simple(args, via, depth)
}

// assignValue is the value an assignment gives its variable (X+=v is
// X=${X}v: the old value is not in the text).
func (a *analyzer) assignValue(as *syntax.Assign) Word {
	w := Word{Static: true}
	if as.Value != nil {
		w = a.word(as.Value)
	}
	if as.Append && as.Name != nil {
		w.Text = "${" + as.Name.Value + "}" + w.Text
		w.Static = false
		w.Params = append(w.Params, as.Name.Value)
	}
	return w
}

// word resolves a word to its text, as the shell would see it before
// expansions; anything expanded at run time makes it non-static.
func (a *analyzer) word(w *syntax.Word) Word {
	out := Word{Static: true}
	var b strings.Builder
	a.parts(w.Parts, &b, &out, false)
	out.Text = b.String()
	return out
}

func (a *analyzer) parts(parts []syntax.WordPart, b *strings.Builder, out *Word, quoted bool) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if !quoted && !out.glob && hasGlob(p.Value) {
				out.glob = true
			}
			b.WriteString(unescape(p.Value, quoted))
		case *syntax.SglQuoted:
			if p.Dollar {
				s, ok := ansiC(p.Value)
				if !ok {
					out.Static = false
				}
				b.WriteString(s)
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			a.parts(p.Parts, b, out, true)
		case *syntax.ParamExp:
			out.Static = false
			if p.Param != nil {
				out.Params = append(out.Params, p.Param.Value)
				if v, ok := a.vars[p.Param.Value]; ok && plainParam(p) {
					b.WriteString(v) // set earlier on the line
				} else if p.Short {
					b.WriteString("$" + p.Param.Value)
				} else {
					b.WriteString("${" + p.Param.Value + "}")
				}
			} else {
				b.WriteString("${…}")
			}
		case *syntax.CmdSubst:
			out.Static = false
			if s, ok := a.staticOutput(p.Stmts); ok {
				b.WriteString(strings.TrimRight(s, "\n")) // the payload it decodes
			} else {
				b.WriteString("$(…)")
			}
		case *syntax.ArithmExp:
			out.Static = false
			b.WriteString("$((…))")
		case *syntax.ProcSubst:
			out.Static = false
			b.WriteString("/dev/fd/…")
		case *syntax.ExtGlob:
			out.Static = false
			out.glob = true
			b.WriteString(p.Op.String() + p.Pattern.Value + ")")
		default:
			out.Static = false
			b.WriteString("…")
		}
	}
}

// unescape removes the backslashes the shell would remove from a literal.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		if quoted && !strings.ContainsRune("\"\\$`\n", rune(n)) {
			b.WriteByte(c)
			continue
		}
		i++
		if n != '\n' {
			b.WriteByte(n)
		}
	}
	return b.String()
}

// ansiC decodes a $'...' string; ok is false for escapes it does not
// decode (the result then only approximates the text).
func ansiC(s string) (string, bool) {
	var b strings.Builder
	ok := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(s[i])
		case 'x':
			v, n := hexVal(s[i+1:], 2)
			if n == 0 {
				b.WriteString(`\x`)
				continue
			}
			b.WriteByte(byte(v))
			i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, n := 0, 0
			for n < 3 && i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '7' {
				v = v*8 + int(s[i+n]-'0')
				n++
			}
			b.WriteByte(byte(v))
			i += n - 1
		case 'u', 'U':
			max := 4
			if s[i] == 'U' {
				max = 8
			}
			v, n := hexVal(s[i+1:], max)
			if n == 0 {
				ok = false
				continue
			}
			b.WriteRune(rune(v))
			i += n
		default:
			ok = false
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String(), ok
}

func hexVal(s string, max int) (int, int) {
	v, n := 0, 0
	for n < max && n < len(s) {
		c := s[n]
		switch {
		case c >= '0' && c <= '9':
			v = v*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v*16 + int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v*16 + int(c-'A'+10)
		default:
			return v, n
		}
		n++
	}
	return v, n
}

func (a *analyzer) redirect(r *syntax.Redirect, first int, via []string, depth int) {
	if r.Word != nil {
		a.substs(r.Word, via, depth)
	}
	if r.Hdoc != nil {
		a.substs(r.Hdoc, via, depth)
	}
	a.redirInput(r, first, via, depth)
	var target Word
	if r.Word != nil {
		target = a.word(r.Word)
	}
	// The redirect belongs to the statement's first command (a compound
	// statement gets its own entry).
	attach := func(f func(c *Command)) {
		if first < len(a.out.Commands) {
			f(&a.out.Commands[first])
			return
		}
		c := Command{Argv: []string{}, Via: via, Why: "redirection"}
		f(&c)
		a.add(c)
	}
	if h, ok := netDevice(target.Text); ok {
		attach(func(c *Command) {
			c.Classes = AddClass(c.Classes, Network)
			c.Hosts = AppendUniq(c.Hosts, h)
			c.Why = JoinWhy(c.Why, "connects to "+target.Text)
		})
		return
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrInOut, syntax.RdrAllClob, syntax.AppAllClob, syntax.AppClob:
		if HarmlessSink(target.Text) && target.Static {
			return
		}
		p := a.resolve(target)
		attach(func(c *Command) {
			a.truncates(c, r.Op, p)
			c.Writes = AppendUniq(c.Writes, p)
			c.Classes = AddClass(c.Classes, Write)
			if strings.HasPrefix(p, "/dev/") && !HarmlessSink(p) {
				c.Classes = AddClass(c.Classes, Destructive)
				c.Why = JoinWhy(c.Why, "writes to the device "+p)
			} else {
				c.Why = JoinWhy(c.Why, "output redirected to "+p)
			}
			if secretnames.Path(target.Text) {
				c.Classes = AddClass(c.Classes, Secret)
				c.Secrets = AppendUniq(c.Secrets, target.Text)
			}
		})
	case syntax.RdrIn:
		if name, secret, deep := a.secretWord(target); secret {
			attach(func(c *Command) {
				c.Classes = AddClass(c.Classes, Secret)
				c.Secrets = AppendUniq(c.Secrets, name)
				c.Why = JoinWhy(c.Why, "reads "+name)
			})
		} else if deep {
			attach(func(c *Command) {
				c.Classes = AddClass(c.Classes, Unknown)
				c.Why = JoinWhy(c.Why, "a glob too deep or too many to judge")
			})
		}
	case syntax.DplOut, syntax.DplIn:
		// >&2, 2>&1, <&0: between descriptors; a file name after >& is a
		// write like >.
		if r.Op == syntax.DplOut && target.Text != "" && !isFD(target.Text) {
			p := a.resolve(target)
			attach(func(c *Command) {
				c.Writes = AppendUniq(c.Writes, p)
				c.Classes = AddClass(c.Classes, Write)
				c.Why = JoinWhy(c.Why, "output redirected to "+p)
			})
		}
	}
}

func isFD(s string) bool {
	if s == "-" {
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// Scratch reports whether an absolute sandbox path is scratch space that
// any command may write whatever the write scope: /tmp, /var/tmp, the
// home directory, and the sinks /dev/null, /dev/stdout, /dev/fd/N.
func Scratch(abs string) bool {
	return underTmp(abs) || abs == Home || strings.HasPrefix(abs, Home+"/") || HarmlessSink(abs)
}

// scratch is Scratch in the analysed sandbox, whose home is scratch too.
func (a *analyzer) scratch(abs string) bool { return Scratch(abs) || underHome(abs, a.home) }

// underHome reports whether p is home or below it.
func underHome(p, home string) bool { return p == home || strings.HasPrefix(p, home+"/") }

// inHome names a path written from the home (~/.ssh/id_rsa, $HOME/...)
// by the sandbox's own (/home/user/.ssh/id_rsa in an E2B door's
// sandbox); any other is returned as written.
func (a *analyzer) inHome(p string) string {
	for _, pre := range []string{"~", "$HOME", "${HOME}"} {
		if rest, ok := strings.CutPrefix(p, pre); ok && (rest == "" || rest[0] == '/') && !strings.ContainsAny(rest, "$`") {
			return path.Clean(a.home + rest)
		}
	}
	return p
}

// asDefaultHome is p with the sandbox's home home spelled as the
// default one, for the checks written against Home (persistence, startup
// files): /home/user/.bashrc is judged as /home/sandbox/.bashrc is.
func asDefaultHome(p, home string) string {
	if home == "" || home == Home || !underHome(p, home) {
		return p
	}
	return Home + p[len(home):]
}

// HarmlessSink reports whether writing p loses nothing: /dev/null, the
// standard streams, the terminal, /dev/fd/N.
func HarmlessSink(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/")
}

// resolve makes a path absolute against what is known of the cwd. A
// path with run-time parts is returned as written.
func (a *analyzer) resolve(w Word) string {
	p := w.Text
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = a.home + p[1:]
	case strings.HasPrefix(p, "$HOME/") || p == "$HOME":
		p = a.home + p[5:]
	case strings.HasPrefix(p, "${HOME}/") || p == "${HOME}":
		p = a.home + p[7:]
	}
	if strings.ContainsAny(p, "$`") || strings.Contains(p, "…") {
		return p
	}
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	if a.cwd == "" {
		return p
	}
	return path.Join(a.cwd, p)
}

func (a *analyzer) add(c Command) {
	if c.Argv == nil {
		c.Argv = []string{}
	}
	if a.cwd != "" && a.cwd != a.out.Cwd && c.Dir == "" {
		c.Dir = a.cwd
	}
	a.out.Commands = append(a.out.Commands, c)
}

func (a *analyzer) unknown(via []string, why string) {
	a.add(Command{Via: via, Classes: []Class{Unknown}, Why: why})
}

func (a *analyzer) finish() {
	out := a.out
	if len(out.Commands) == 0 && len(a.funcs) > 0 && out.Error == "" {
		// a line of functions calling functions (a fork bomb) runs
		// something, though no command shows
		a.unknown(nil, "defines and calls functions that run no command the analyser sees")
	}
	var set [16]bool
	for i := range out.Commands {
		a.contentRunsLater(i)
		c := &out.Commands[i]
		a.tagCommand(c)
		for _, w := range c.Writes {
			if !persistPath(w, a.home) || slices.Contains(c.Classes, Persist) {
				continue
			}
			c.Classes = append(c.Classes, Persist)
			switch {
			case gitControlPath(w):
				c.Why = JoinWhy(c.Why, "writes "+w+", which decides what a later git command runs")
			case startupFile(w, a.home):
				c.Why = JoinWhy(c.Why, "writes "+w+", which a shell or interpreter runs when it starts")
			default:
				c.Why = JoinWhy(c.Why, "writes "+w+", which decides what later commands fetch or run")
			}
		}
		c.Classes = SortClasses(c.Classes)
		for _, cl := range c.Classes {
			set[slices.Index(Classes, cl)] = true
		}
		for _, w := range c.Writes {
			out.Writes = AppendUniq(out.Writes, w)
		}
		for _, h := range c.Hosts {
			out.Hosts = AppendUniq(out.Hosts, h)
		}
		for _, s := range c.Secrets {
			out.Secrets = AppendUniq(out.Secrets, s)
		}
	}
	out.Classes = []Class{}
	for i, c := range Classes {
		if set[i] {
			out.Classes = append(out.Classes, c)
		}
	}
	if out.Commands == nil {
		out.Commands = []Command{}
	}
}

// SortClasses returns the classes of cs once each, in Classes order.
func SortClasses(cs []Class) []Class {
	out := make([]Class, 0, len(cs))
	for _, c := range Classes {
		if slices.Contains(cs, c) {
			out = append(out, c)
		}
	}
	return out
}

// AddClass returns cs with c added once.
func AddClass(cs []Class, c Class) []Class {
	if slices.Contains(cs, c) {
		return cs
	}
	return append(cs, c)
}

// AppendUniq returns list with s added once ("" is not added).
func AppendUniq(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// JoinWhy joins two reasons with "; " (either may be "").
func JoinWhy(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// WithGranted returns the analysis as it stands for a sandbox that was
// granted the secrets given to its commands as the variables vars: a
// reference to one of them ("$NAME") is not secret access there. A
// command that touches anything else secret (a credential file, an
// environment dump, another variable) keeps its secret class. An analysis
// not made by the analyser (decoded, a literal) is read again with no
// knowledge of programs.
func (a *Analysis) WithGranted(vars []string) *Analysis {
	if len(vars) == 0 || len(a.Secrets) == 0 {
		return a
	}
	cat := a.cat
	if cat == nil {
		cat = noPrograms
	}
	out := newAnalyzer(a.Line, "", a.home, cat)
	out.out.Cwd, out.out.Error = a.Cwd, a.Error
	for _, c := range a.Commands {
		c.Classes = slices.Clone(c.Classes)
		var kept []string
		for _, s := range c.Secrets {
			if name, ok := strings.CutPrefix(s, "$"); ok && slices.Contains(vars, name) {
				continue
			}
			kept = append(kept, s)
		}
		if len(kept) == 0 && len(c.Secrets) > 0 {
			c.Classes = slices.DeleteFunc(c.Classes, func(cl Class) bool { return cl == Secret })
			if len(c.Classes) == 0 {
				c.Classes = []Class{Read}
			}
		}
		c.Secrets = kept
		out.out.Commands = append(out.out.Commands, c)
	}
	out.finish()
	return out.out
}

// FileAnalysis wraps one file operation (the daemon's file API) as
// an analysis, so the same policy decides it: a credential file is secret
// access, a write is checked against the scope.
func FileAnalysis(cmd Command, cat *Catalog) *Analysis { return FileAnalysisIn(cmd, "", cat) }

// FileAnalysisIn is FileAnalysis in a sandbox whose user's home is home
// ("": Home): a write to its startup files is persistence.
func FileAnalysisIn(cmd Command, home string, cat *Catalog) *Analysis {
	for _, p := range cmd.Argv[1:] {
		if secretnames.Path(p) {
			cmd.Classes = AddClass(cmd.Classes, Secret)
			cmd.Secrets = AppendUniq(cmd.Secrets, p)
			cmd.Why = JoinWhy(cmd.Why, "touches "+p)
		}
	}
	a := newAnalyzer(JoinArgv(cmd.Argv), "", home, cat)
	a.out.Cwd = DefaultCwd
	a.add(cmd)
	a.finish()
	return a.out
}
