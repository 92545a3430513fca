package engine

import (
	"encoding/base64"
	"encoding/hex"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Hidden paths and payloads. A payload is literal text decoded on the
// line itself (echo B64 | base64 -d, xxd -r -p, printf '\x..', rev) and
// piped into a shell or used as an argument ($(...)); a path may sit in
// a variable set earlier on the line. The analyser computes what the
// shell would, so the approver sees the real command, and classifies it.

// maxDecoded bounds a decoded payload.
const maxDecoded = 16 << 10

// flattenPipe lists the stages of a pipeline in order.
func flattenPipe(s *syntax.Stmt, out *[]*syntax.Stmt) {
	if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.Pipe && len(s.Redirs) == 0 && b.X != nil && b.Y != nil {
		flattenPipe(b.X, out)
		flattenPipe(b.Y, out)
		return
	}
	*out = append(*out, s)
}

// staticOutput is what a pipeline prints when it is a literal echo or
// printf through decoders only; ok is false otherwise.
func (a *analyzer) staticOutput(stmts []*syntax.Stmt) (string, bool) {
	if len(stmts) == 1 && stmts[0] != nil {
		var flat []*syntax.Stmt
		flattenPipe(stmts[0], &flat)
		stmts = flat
	}
	var args [][]Word
	for _, st := range stmts {
		c, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(st.Redirs) > 0 || len(c.Assigns) > 0 || len(c.Args) == 0 {
			return "", false
		}
		var ws []Word
		for _, w := range c.Args {
			x := a.word(w)
			if !x.Static {
				return "", false
			}
			ws = append(ws, x)
		}
		args = append(args, ws)
	}
	if len(args) == 0 {
		return "", false
	}
	out, ok := literalOutput(args[0])
	for _, ws := range args[1:] {
		if !ok {
			return "", false
		}
		out, ok = decodeWith(Strs(ws), out)
	}
	return out, ok && len(out) <= maxDecoded
}

// literalOutput is what echo or printf prints with these arguments.
func literalOutput(ws []Word) (string, bool) {
	argv := Strs(ws)
	switch argv[0] {
	case "echo":
		rest, esc := argv[1:], false
		for len(rest) > 0 && (rest[0] == "-n" || rest[0] == "-e" || rest[0] == "-E") {
			esc = esc || rest[0] == "-e"
			rest = rest[1:]
		}
		s := strings.Join(rest, " ") + "\n"
		if esc {
			if d, ok := ansiC(s); ok {
				s = d
			}
		}
		return s, true
	case "printf":
		if len(argv) < 2 {
			return "", false
		}
		f := argv[1]
		if strings.Contains(f, "%") {
			if f != "%s" && f != "%s\n" && f != "%b" || len(argv) < 3 {
				return "", false
			}
			f = strings.Join(argv[2:], "")
		}
		return ansiC(f)
	}
	return "", false
}

// decodeWith applies one decoding stage of a pipeline to its input.
func decodeWith(argv []string, in string) (string, bool) {
	flags := strings.Join(argv[1:], " ")
	switch argv[0] {
	case "base64", "base32":
		if argv[0] == "base32" || !(HasFlag(argv[1:], "-d", "-D") || strings.Contains(flags, "--decode")) {
			return "", false
		}
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(in), ""))
		if err != nil {
			b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(strings.Join(strings.Fields(in), ""), "="))
		}
		return string(b), err == nil
	case "xxd":
		if !HasFlag(argv[1:], "-r") || !HasFlag(argv[1:], "-p") {
			return "", false
		}
		b, err := hex.DecodeString(strings.Join(strings.Fields(in), ""))
		return string(b), err == nil
	case "rev":
		if len(argv) > 1 {
			return "", false
		}
		lines := strings.Split(strings.TrimSuffix(in, "\n"), "\n")
		for i, l := range lines {
			r := []rune(l)
			for x, y := 0, len(r)-1; x < y; x, y = x+1, y-1 {
				r[x], r[y] = r[y], r[x]
			}
			lines[i] = string(r)
		}
		return strings.Join(lines, "\n") + "\n", true
	case "cat":
		return in, len(argv) == 1
	}
	return "", false
}

// pipedPayload: a pipeline whose stages but the last print a computed
// payload, and whose last stage is a shell or an interpreter reading its
// code from its input: the payload is classified as the code it runs
// (see input).
func (a *analyzer) pipedPayload(c *syntax.BinaryCmd, via []string, depth int) {
	if c.Op != syntax.Pipe || c.X == nil || c.Y == nil || len(a.out.Commands) == 0 {
		return
	}
	var stages []*syntax.Stmt
	flattenPipe(c.X, &stages)
	flattenPipe(c.Y, &stages)
	lastCall, ok := stages[len(stages)-1].Cmd.(*syntax.CallExpr)
	if !ok || len(lastCall.Args) == 0 {
		return
	}
	if lit := lastCall.Args[0].Lit(); !shells.Has(path.Base(lit)) && !interpreters.Has(path.Base(lit)) && !pythonRE().MatchString(path.Base(lit)) {
		return // only a shell or an interpreter runs what it reads
	}
	last := len(a.out.Commands) - 1
	if argv := a.out.Commands[last].Argv; len(argv) == 0 || argv[0] != a.word(lastCall.Args[0]).Text {
		return
	}
	if out, ok := a.staticOutput(stages[:len(stages)-1]); ok {
		a.input(last, Word{Text: out, Static: true}, via, depth)
	}
}

// setVar notes a variable assigned text known from the line (a path
// with ~ or $HOME at its start resolved), so that $F later names it;
// any other assignment forgets it.
func (a *analyzer) setVar(as *syntax.Assign) {
	if as.Name == nil || as.Array != nil || as.Index != nil {
		return
	}
	name := as.Name.Value
	v := a.assignValue(as).Text
	for _, pre := range []string{"~/", "$HOME/", "${HOME}/"} {
		if rest, ok := strings.CutPrefix(v, pre); ok {
			v = a.home + "/" + rest
		}
	}
	if a.vars == nil {
		a.vars = map[string]string{}
	}
	if strings.ContainsAny(v, "$`") || strings.Contains(v, "…") || len(v) > 4096 || as.Append {
		delete(a.vars, name)
		return
	}
	a.vars[name] = v
}

// plainParam: $X or ${X}, without an operator that changes the value.
func plainParam(p *syntax.ParamExp) bool {
	return !p.Excl && !p.Length && !p.Width && p.Index == nil && p.Slice == nil && p.Repl == nil && p.Names == 0 && p.Exp == nil
}
