package inline

import (
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

// perlTool: perl -p/-n with only plain s/// and tr/// edits (no e flag,
// no code in an interpolation or a regex) prints, or with -i edits files
// in place; any other code is unknown.
func perlTool(c *engine.Call) {
	var code, mods []string
	var why string
	loop, inplace, info, incl := false, false, false, false
	args := c.Args
	i := 0
	notCode := func(s string) {
		if why == "" {
			why = s
		}
	}
	for ; i < len(args); i++ {
		s := args[i].Text
		if s == "--" {
			i++
			break
		}
		if !strings.HasPrefix(s, "-") || s == "-" {
			break
		}
		if !args[i].Static {
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
					code = append(code, args[i].Text)
					if !args[i].Static {
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
				incl = true
				if j+1 == len(s) {
					i++
				}
				break bundle
			case 'M', 'm':
				mod := s[j+1:]
				if mod == "" && i+1 < len(args) {
					i++
					mod = args[i].Text
					if !args[i].Static {
						notCode("perl loads a module named at run time")
					}
				}
				if mod == "" {
					notCode("perl -" + string(ch) + " without a module")
				}
				mods = append(mods, mod)
				break bundle
			case 'd', 'D':
				notCode("perl -" + string(ch) + " runs a debugger or debug flags")
				break bundle
			default:
				notCode("perl -" + string(ch))
				break bundle
			}
		}
	}
	files := args[min(i, len(args)):]
	if len(mods) > 0 && incl {
		notCode("perl loads modules from an include directory it was given")
	}
	if len(mods) > 0 && why == "" {
		if len(code) == 0 {
			perlModules(c, mods)
		} else {
			code = append(perlUseLines(mods), code...)
		}
	}
	if len(code) == 0 && why == "" {
		switch {
		case info:
			c.Class(engine.Read, "perl prints its version or help")
		case len(files) > 0 && !loop && !inplace:
			c.RunFile("perl", files[0])
		case len(files) > 0:
			c.Class(engine.Unknown, "perl runs the script "+files[0].Text+" as a filter")
		default:
			c.Class(engine.Unknown, "perl reads code from its input")
		}
		return
	}
	if why != "" {
		c.Class(engine.Unknown, why)
		return
	}
	if !loop || !plainPerlEdits(strings.Join(code, "\n")) {
		perlCode(c, strings.Join(code, "\n"), loop && !inplace)
		if inplace {
			c.Class(engine.Write, "perl -i edits files in place")
			c.Write(files...)
		}
		return
	}
	if inplace {
		c.Class(engine.Write, "perl -i edits files in place")
		c.Write(files...)
		return
	}
	c.Class(engine.Read, "perl -p prints edited text")
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

// perlCode reads code other than plain edits; a -n or -p loop of it that
// only computes prints what it reads (Read).
func perlCode(c *engine.Call, code string, printLoop bool) {
	if perlEditRE().MatchString(code) {
		c.Class(engine.Unknown, "perl runs the replacement of s///e as code")
		return
	}
	classes, why := slices.Clone(c.Cmd.Classes), c.Cmd.Why
	c.InlineCode("perl", code)
	if m := perlNetUseRE().FindStringSubmatch(code); m != nil && !slices.Contains(c.Cmd.Classes, engine.Network) {
		if !slices.Contains(classes, engine.Run) && len(c.Cmd.Classes) == len(classes)+1 && slices.Contains(c.Cmd.Classes, engine.Run) {
			c.Cmd.Classes, c.Cmd.Why = classes, why // it does more than compute
		}
		c.Class(engine.Network, "perl code loads the network module "+m[1])
	}
	if printLoop && len(c.Cmd.Classes) == 1 && c.Cmd.Classes[0] == engine.Run {
		c.Cmd.Classes = []engine.Class{engine.Read}
	}
}

var perlEditRE = lazyre.New(`^\s*(s|tr|y)[^\w\s]`)

// perlUseLines turns -M and -m options into the use lines perl runs for
// them (-MFoo=a,b is use Foo split(/,/,q{a,b}); -M-Foo is no Foo), so the
// code analysis reads a module loaded on the command line as it reads
// one loaded in the code.
func perlUseLines(mods []string) []string {
	out := make([]string, 0, len(mods))
	for _, m := range mods {
		kw := "use "
		if rest, ok := strings.CutPrefix(m, "-"); ok {
			kw, m = "no ", rest
		}
		name, imports, _ := strings.Cut(m, "=")
		out = append(out, kw+name+" ("+imports+");")
	}
	return out
}

// perlModules classifies modules loaded for a script (perl -MFoo x.pl):
// a network module reaches the network; the script is judged apart.
func perlModules(c *engine.Call, mods []string) {
	if m := perlNetUseRE().FindStringSubmatch(strings.Join(perlUseLines(mods), "\n")); m != nil {
		c.Class(engine.Network, "perl loads the network module "+m[1])
	}
}

// perlNetUseRE: perl modules that open connections (sockets, HTTP, FTP,
// SMTP, DNS clients), loaded by use or require.
var perlNetUseRE = lazyre.New(`\b(?:use|require)\s+((?:Net::|IO::Socket|IO::Async|LWP|HTTP::|WWW::|Mojo::UserAgent|Mojo::IOLoop|AnyEvent::(?:HTTP|Socket|Handle)|URI::Fetch|Socket\b|Furl\b)[\w:]*)`)
