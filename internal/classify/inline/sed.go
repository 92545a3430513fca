package inline

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/secretnames"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

// sed's long options; GNU sed takes any unambiguous prefix of one
// (--ex=... is --expression).
var sedLong = []string{"--expression", "--file", "--in-place", "--line-length", "--null-data", "--zero-terminated",
	"--quiet", "--silent", "--regexp-extended", "--separate", "--sandbox", "--unbuffered", "--posix", "--debug",
	"--follow-symlinks", "--help", "--version", "--binary"}

func sedLongOpt(name string) string {
	match := ""
	for _, l := range sedLong {
		if l == name {
			return l
		}
		if strings.HasPrefix(l, name) && len(name) > 2 {
			if match != "" {
				return "" // ambiguous: sed refuses it
			}
			match = l
		}
	}
	return match
}

// runTimeRE finds the parts of a script known only at run time.
var runTimeRE = lazyre.New(`\$\{[^}]*\}|\$\(\(…\)\)|\$\(…\)|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9#?@*!-]|…|/dev/fd/…`)

// sedHole stands for a part of the script known only at run time: in a
// regex or a number it is text; where a command or a flag is read, it
// could be any (e runs commands), so the script is unknown.
const sedHole = '\x00'

func sedTool(c *engine.Call) {
	var scripts []engine.Word
	explicit, inplace, sandbox := false, false, false
	fromFile := ""
	var pos []engine.Word
	value := func(i *int, attached string, w engine.Word) (engine.Word, bool) {
		if attached != "" {
			return engine.Word{Text: attached, Static: w.Static, Params: w.Params}, true
		}
		if *i+1 < len(c.Args) {
			*i++
			return c.Args[*i], true
		}
		return engine.Word{}, false
	}
	for i := 0; i < len(c.Args); i++ {
		w := c.Args[i]
		s := w.Text
		switch {
		case s == "--":
			pos = append(pos, c.Args[i+1:]...)
			i = len(c.Args)
		case strings.HasPrefix(s, "--"):
			name, v, hasVal := strings.Cut(s, "=")
			switch sedLongOpt(name) {
			case "--expression", "--file", "--line-length":
				val, ok := engine.Word{Text: v, Static: w.Static, Params: w.Params}, true
				if !hasVal {
					val, ok = value(&i, "", w)
				}
				switch {
				case !ok:
				case sedLongOpt(name) == "--expression":
					scripts, explicit = append(scripts, val), true
				case sedLongOpt(name) == "--file":
					fromFile, explicit = val.Text, true
				}
			case "--in-place":
				inplace = true
			case "--sandbox":
				sandbox = true
			}
		case strings.HasPrefix(s, "-") && len(s) > 1:
		bundle:
			for j := 1; j < len(s); j++ {
				switch s[j] {
				case 'i', 'I':
					inplace = true
					break bundle // the rest is the backup suffix
				case 'e', 'f', 'l':
					val, ok := value(&i, s[j+1:], w)
					if ok && s[j] == 'e' {
						scripts, explicit = append(scripts, val), true
					} else if ok && s[j] == 'f' {
						fromFile, explicit = val.Text, true
					}
					break bundle
				}
			}
		default:
			pos = append(pos, w)
		}
	}
	if !explicit && len(pos) > 0 {
		scripts = append(scripts, pos[0])
		pos = pos[1:]
	}
	if fromFile != "" {
		c.Class(engine.Unknown, "sed runs the script file "+fromFile+", which the analyser does not read")
	}
	var text []string
	static := true
	for _, w := range scripts {
		s := w.Text
		if !w.Static {
			// A value known only at run time may hold a delimiter, a
			// newline and an e command: the script is unknown, though
			// what the text shows (its w files) is still read.
			static = false
			s = runTimeRE().ReplaceAllString(s, string(sedHole))
		}
		text = append(text, s)
	}
	if !static {
		c.Class(engine.Unknown, "sed script computed at run time")
	}
	if !sandbox {
		checkSedScript(c, strings.Join(text, "\n"), static)
	}
	if inplace && len(text) == 1 && sedDeleteAllRE().MatchString(text[0]) {
		c.Class(engine.Destructive, "sed -i '"+text[0]+"' deletes every line")
	}
	if inplace {
		c.Class(engine.Write, "sed -i edits files in place")
		c.Write(pos...)
		return
	}
	if len(c.Cmd.Classes) == 0 {
		c.Class(engine.Read, "sed prints")
	}
}

// sedScript is what a sed script does beyond editing text.
type sedScript struct {
	writes, reads, runs []string
	execText            bool   // s///e or a bare e: runs text the script makes
	bad                 string // why it could not be read
}

func checkSedScript(c *engine.Call, script string, static bool) {
	r := parseSed(script)
	hole := func(s string) engine.Word {
		if strings.ContainsRune(s, sedHole) {
			return engine.Word{Text: strings.ReplaceAll(s, string(sedHole), "$…")}
		}
		return engine.Word{Text: s, Static: static}
	}
	if r.bad != "" {
		c.Class(engine.Unknown, "sed script: "+r.bad)
	}
	if r.execText {
		c.Class(engine.Unknown, "sed script runs the text it makes as a command (e)")
	}
	for _, cmd := range r.runs {
		c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "sed script runs a command (e)")
		w := hole(cmd)
		w.Static = w.Static && static
		c.Shell(w)
		c.Keep()
	}
	for _, f := range r.writes {
		if engine.HarmlessSink(f) {
			continue
		}
		c.Class(engine.Write, "sed script writes "+f+" (w)")
		c.Write(hole(f))
	}
	for _, f := range r.reads {
		if secretnames.Path(f) {
			c.Class(engine.Secret, "sed script reads "+f+" (r)")
			c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, f)
		}
	}
}

// parseSed reads a GNU sed script far enough to find the commands that
// run programs (e, s///e), write files (w, W, s///w) and read them (r, R).
func parseSed(s string) (r sedScript) {
	i, n := 0, len(s)
	ws := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	toEOL := func() string {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			t := s[i:]
			i = n
			return t
		}
		t := s[i : i+j]
		i += j + 1
		return t
	}
	// delimited reads up to the unescaped delimiter d (i is just past the
	// opening one) and moves past it.
	delimited := func(d byte) bool {
		for i < n {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case d:
				i++
				return true
			}
			i++
		}
		return false
	}
	number := func() {
		for i < n && (s[i] >= '0' && s[i] <= '9' || s[i] == sedHole) {
			i++
		}
	}
	addr := func() bool {
		switch {
		case i >= n:
			return true
		case s[i] >= '0' && s[i] <= '9' || s[i] == sedHole:
			number()
			if i < n && s[i] == '~' {
				i++
				number()
			}
		case s[i] == '$':
			i++
		case s[i] == '+' || s[i] == '~':
			i++
			number()
		case s[i] == '/' || s[i] == '\\':
			d := byte('/')
			if s[i] == '\\' {
				if i+1 >= n {
					return false
				}
				i++
				d = s[i]
			}
			i++
			if !delimited(d) {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return true
	}
	for {
		for i < n && strings.IndexByte(" \t\n;", s[i]) >= 0 {
			i++
		}
		if i >= n {
			return r
		}
		if s[i] == '#' {
			toEOL()
			continue
		}
		if !addr() {
			r.bad = "an address does not end"
			return r
		}
		ws()
		if i < n && s[i] == ',' {
			i++
			ws()
			if !addr() {
				r.bad = "an address does not end"
				return r
			}
			ws()
		}
		for i < n && (s[i] == '!' || s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= n {
			r.bad = "an address without a command"
			return r
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'q', 'Q', 'l', 'L':
			ws()
			number()
		case ':', 'b', 't', 'T', 'v':
			for i < n && s[i] != ';' && s[i] != '\n' {
				i++
			}
		case 'a', 'i', 'c':
			ws()
			if i < n && s[i] == '\\' {
				i++
				if i < n && s[i] == '\n' {
					i++
				}
			}
			for i < n && s[i] != '\n' { // text, with \ continuing a line
				if s[i] == '\\' {
					i++
				}
				i++
			}
		case 'r', 'R', 'w', 'W':
			ws()
			f := toEOL()
			if cmd == 'w' || cmd == 'W' {
				r.writes = append(r.writes, f)
			} else {
				r.reads = append(r.reads, f)
			}
		case 'e':
			ws()
			if cmdText := toEOL(); strings.TrimSpace(cmdText) != "" {
				r.runs = append(r.runs, cmdText)
			} else {
				r.execText = true
			}
		case 's', 'y':
			if i >= n || s[i] == '\n' || s[i] == '\\' {
				r.bad = "an " + string(cmd) + " command without a delimiter"
				return r
			}
			d := s[i]
			i++
			pattern := delimited(d)
			if replacement := pattern && delimited(d); !replacement {
				r.bad = "an " + string(cmd) + " command does not end"
				return r
			}
			if cmd == 'y' {
				break
			}
		flags:
			for i < n {
				switch f := s[i]; {
				case f == 'w':
					i++
					ws()
					r.writes = append(r.writes, toEOL())
					break flags
				case f == 'e':
					r.execText = true
					i++
				case strings.IndexByte("gpiImM0123456789", f) >= 0:
					i++
				case strings.IndexByte(" \t\n;}#", f) >= 0:
					break flags
				default:
					r.bad = "an s command's flags are not known"
					return r
				}
			}
		default:
			if cmd == sedHole {
				r.bad = "a command known only at run time"
			} else {
				r.bad = "unknown command " + string(cmd)
			}
			return r
		}
	}
}

var sedDeleteAllRE = lazyre.New(`^\s*(?:1\s*,\s*\$\s*)?d\s*;?\s*$`)
