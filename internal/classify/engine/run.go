package engine

import (
	"path"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/secretnames"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"mvdan.cc/sh/v3/syntax"
)

// Running the workspace's own code (python script.py, ./run.sh, node
// build.js) is the Run class: inside the sandbox it does what pytest or
// make, which run the same code, do. Code from elsewhere (/tmp, a path
// computed at run time) stays Unknown: it is what an attacker plants.

// InWorkspace reports whether an absolute path is under the workspace.
func InWorkspace(p string) bool {
	return p == DefaultCwd || strings.HasPrefix(p, DefaultCwd+"/")
}

// plainVia are the wrappers a program run through is still plainly run:
// a program a git setting, a build flag or an editor variable starts
// (git -c core.pager=./x) is hidden from whoever reads the line, so it
// stays Unknown.
var plainVia = SetOf(`sh bash zsh dash ksh env timeout nohup nice ionice time stdbuf xargs find
command exec builtin uv poetry pipenv pdm hatch rye npx pnpm yarn bunx bun sudo watch setsid
source . eval`)

// RunFile classifies tool running the program or script file f.
func (c *Call) RunFile(tool string, f Word) {
	p := c.a.resolve(f)
	if strings.Contains(f.Text, "{}") {
		c.Class(Unknown, tool+" runs each file found ("+f.Text+"), wherever it is")
		return
	}
	if slices.ContainsFunc(c.via, func(v string) bool { return !plainVia.Has(v) }) {
		c.Class(Unknown, "runs "+f.Text+" through "+strings.Join(c.via, " "))
		return
	}
	if f.Static && path.IsAbs(p) && !InWorkspace(p) && c.a.builtHere(p) {
		c.Class(Run, "runs "+f.Text+", which a build earlier on the line made")
		return
	}
	if !f.Static || !path.IsAbs(p) || !InWorkspace(p) {
		c.Class(Unknown, tool+" runs "+f.Text+", code from outside the workspace")
		return
	}
	if tool == "" {
		c.Class(Run, "runs the workspace's program "+f.Text)
		return
	}
	c.Class(Run, tool+" runs the workspace's code "+f.Text)
}

// Inline code (python -c, node -e, ruby -e, perl -e, a heredoc on an
// interpreter's input) is read for what it reaches: processes, sockets
// and HTTP clients, the environment, dynamic code and decoded payloads.
// Code that shows none of them only computes: Run.
var (
	codeProcRE = lazyre.New(`\bos\.(system|popen|exec[lv]p?e?|spawn[lv]?p?e?|fork)\b|\.(system|popen|Popen|spawn\w*|exec[lv]p?e?|check_output|check_call|getoutput|getstatusoutput)\s*\(|` +
		`\bimport\s+[^;\n]*\b(system|popen|exec[lv]\w*|spawn\w*)\b|\bsubprocess\b|\bpty\.spawn|\bchild_process\b|\bexecSync\b|\bspawnSync\b|` +
		"`|%x[({\\[]|\\bsystem\\s*\\(|\\bsystem\\s+[\"']|\\bexec\\s+[\"']|\\bIO\\.popen|\\bOpen3\\b|\\bqx[({/]|\\bshell_exec\\b|\\bpassthru\\b|\\bproc_open\\b|\\bpopen\\b|\\bKernel\\.")
	codeNetRE = lazyre.New(`\bsocket\b|\burllib\b|\brequests\b|\bhttp\.client\b|\bhttpx\b|\baiohttp\b|\bfetch\s*\(|\brequire\s*\(\s*['"](node:)?(https?|net|dgram|dns|tls|http2)['"]|` +
		`\bnet/http\b|\bNet::HTTP\b|\bIO::Socket\b|\bLWP\b|\bHTTP::Tiny\b|\bopen-uri\b|\bcurl_|\bfsockopen\b|\bXMLHttpRequest\b|\bWebSocket\b|\bftplib\b|\bsmtplib\b|\bparamiko\b|\bURI\s*\(|\bTCPSocket\b|\bfile_get_contents\s*\(\s*['"]https?:`)
	codeDynRE = lazyre.New(`\beval\b|\bgetattr\b|__builtins__|\bglobals\s*\(|\bsys\.modules\b|\bsetattr\b|\bReflect\b|\bconstructor\b|\bexec\s*\(|\b__import__\b|\bimportlib\b|\bb64decode\b|\bBuffer\.from\b|\bpack\s*\(|\bcompile\s*\(|\bpickle\b|\bmarshal\b|\bctypes\b|` +
		`\bimport\s*\(|\bnew\s+Function\b|\bvm\.run|\binstance_eval\b|\bsend\s*\(|\bconstantize\b|\bdo\s+["'$]|\bload\s+["'$]|\brequire\s*\(\s*[^'")\s]|\bunpack\b|\bfromhex\b|\batob\s*\(|\bunhexlify\b`)
	codeEnvAllRE = lazyre.New(`\bos\.environ\b(?:\s*[^\s\[.]|\s*$|\.(?:items|keys|values|copy)\b)|\bprocess\.env\b(?:\s*[^\s.\[]|\s*$)|\bENV\.(?:to_h|each|keys|to_a|inspect|map)\b|%ENV\b|\bgetenv\s*\(\s*\)|\$_ENV\b|\bENVIRON\b`)
	codeEnvOneRE = lazyre.New(`(?:environ(?:\.get)?\s*[\[(]\s*|getenv\s*\(\s*|process\.env\.|process\.env\[\s*|ENV\[\s*|ENV\.fetch\(\s*|\$ENV\{\s*)['"]?([A-Za-z_][A-Za-z0-9_]*)`)
	codeDelRE    = lazyre.New(`\brmtree\b|\bos\.(remove|unlink|rmdir)\b|\bunlinkSync\b|\brmSync\b|\brmdirSync\b|\bunlink\s*\(|\bFileUtils\.rm|\bFile\.delete\b|\bremove_tree\b`)
	codeStrRE    = lazyre.New(`"([^"\\\n]{1,512})"|'([^'\\\n]{1,512})'`)
)

// maxInlineBytes bounds the inline code read in one command line (the
// patterns cost microseconds per snippet; a 64 KiB line of snippets
// stays within milliseconds).
const maxInlineBytes = 8 << 10

// InlineCode classifies code an interpreter runs from its command line or
// its input.
func (c *Call) InlineCode(tool, code string) {
	if c.a.inlineBytes += len(code); c.a.inlineBytes > maxInlineBytes {
		c.Class(Unknown, tool+" runs more inline code than the analyser reads in one line")
		return
	}
	reached := false
	if codeProcRE().MatchString(code) {
		c.Class(Unknown, tool+" code starts processes")
		reached = true
	}
	if codeNetRE().MatchString(code) {
		c.Class(Network, tool+" code opens network connections")
		reached = true
	}
	if codeDynRE().MatchString(code) {
		c.Class(Unknown, tool+" code runs code it builds or decodes at run time")
		reached = true
	}
	if codeDelRE().MatchString(code) {
		c.Class(Destructive, tool+" code deletes files")
		reached = true
	}
	if codeEnvAllRE().MatchString(code) {
		c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, "the environment")
		c.Class(Secret, tool+" code reads the whole environment")
		reached = true
	}
	for _, m := range codeEnvOneRE().FindAllStringSubmatch(code, 16) {
		if secretnames.Var(m[1]) || strings.HasSuffix(strings.ToUpper(m[1]), "DATABASE_URL") {
			c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, "$"+m[1])
			c.Class(Secret, tool+" code reads $"+m[1])
			reached = true
		}
	}
	for _, m := range codeStrRE().FindAllStringSubmatch(code, 64) {
		s := m[1] + m[2]
		if p := resolveIn(c.a.out.Cwd, c.a.home, s); !strings.ContainsAny(s, " \t") && persistPath(p, c.a.home) {
			c.Class(Persist, tool+" code names "+s+", which decides what later commands run")
			reached = true
		}
		if secretnames.Path(s) || secretnames.Path(strings.TrimPrefix(s, "/")) {
			c.Cmd.Secrets = AppendUniq(c.Cmd.Secrets, s)
			c.Class(Secret, tool+" code names "+s)
			reached = true
		}
	}
	if !reached {
		c.Class(Run, tool+" runs inline code that only computes")
	}
}

// input is text given to the statement's first command on its input (a
// heredoc, a here-string). An interpreter that reads its code from there
// runs it: the text is classified as that code.
func (a *analyzer) input(first int, body Word, via []string, depth int) {
	if first >= len(a.out.Commands) {
		return
	}
	a.bodies = append(a.bodies, stdinText{first, body.Text})
	cmd := &a.out.Commands[first]
	if len(cmd.Argv) == 0 || !strings.Contains(cmd.Why, "from its input") || !body.Static {
		return
	}
	c := &Call{a: a, Name: path.Base(cmd.Argv[0]), via: cmd.Via, depth: depth}
	c.Cmd = *cmd
	c.Cmd.Classes, c.Cmd.Why = nil, ""
	switch {
	case c.Name == "at" || c.Name == "batch":
		if depth+1 <= maxDepth {
			_ = a.script(body.Text, append(slices.Clip(via), c.Name), depth+1)
		}
		return
	case shells.Has(c.Name):
		c.Class(Run, c.Name+" runs the script on its input (its commands follow)")
		*cmd = c.Cmd
		if depth+1 <= maxDepth {
			if err := a.script(body.Text, append(slices.Clip(via), c.Name), depth+1); err != nil {
				a.unknown(via, c.Name+" runs script text that does not parse")
			}
		}
		return
	case pythonRE().MatchString(c.Name) || c.Name == "node" || c.Name == "ruby" || c.Name == "perl" || c.Name == "php":
		c.InlineCode(c.Name, body.Text)
	default:
		return
	}
	*cmd = c.Cmd
}

// stdinText is the text a heredoc or here-string gives a command
// (Commands index).
type stdinText struct {
	cmd  int
	text string
}

var shells = SetOf("sh bash zsh dash ksh mksh ash busybox")

var interpreters = SetOf("node ruby perl php")

// builtHere reports whether a build command earlier on the line wrote p
// (go build -o /tmp/app . && /tmp/app runs the workspace's code).
func (a *analyzer) builtHere(p string) bool {
	for _, c := range a.out.Commands {
		if slices.Contains(c.Classes, Build) && slices.Contains(c.Writes, p) {
			return true
		}
	}
	return false
}

// redirInput hands a heredoc's or a here-string's text to input.
func (a *analyzer) redirInput(r *syntax.Redirect, first int, via []string, depth int) {
	if (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) && r.Hdoc != nil {
		a.input(first, a.word(r.Hdoc), via, depth)
	} else if r.Op == syntax.WordHdoc && r.Word != nil {
		a.input(first, a.word(r.Word), via, depth)
	}
}
