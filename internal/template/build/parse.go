// Package build is `airlock template build`: a template made from a
// small Dockerfile-like file (airlock.template) on top of a stored image
// template. Each step's result is a content-addressed layer of the
// template store (the format imports use, made by Store.UnpackLayer),
// stacked on the base's layers; each step is cached by the digest of its
// inputs, so a rebuild in which nothing changed reuses every layer.
//
// The file:
//
//	# a comment
//	FROM NAME                 a stored image template (first, exactly once)
//	egress: npm, go           presets RUN steps may reach (none: no network)
//	RUN CMD...                /bin/sh -c CMD, or RUN ["argv", "..."]
//	COPY SRC... DEST          files of the context directory only
//	ENV K=V [K2=V2...]        or ENV K V
//	WORKDIR DIR               default cwd of later steps and of sandboxes
//	USER NAME                 recorded (commands run as the sandbox user)
//
// An `egress:` section may also list its presets on the lines below it,
// indented, one "- NAME" a line. Every error names the file's line.
package build

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/template"
)

// Step is one instruction of the file.
type Step struct {
	Line int      `json:"line"`
	Op   string   `json:"op"`   // RUN, COPY, ENV, WORKDIR, USER
	Args []string `json:"args"` // RUN: argv; COPY: sources then dest; ENV: K=V...; WORKDIR, USER: one
}

// File is a parsed airlock.template.
type File struct {
	From   string
	Egress []string // preset names
	Steps  []Step
}

// maxFile bounds the file (it is read whole).
const maxFile = 1 << 20

// Parse reads a build file; name is what its errors call it. Every error
// wraps errdefs.ErrInvalid and names the line.
func Parse(name string, data []byte) (*File, error) {
	if len(data) > maxFile {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "%s: over %d bytes", name, maxFile)
	}
	p := &parser{name: name, f: &File{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxFile)
	var cont string
	start := 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if cont == "" {
			start = n
		}
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line, cont = cont+line, ""
		if err := p.line(start, line); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "%s: %v", name, err)
	}
	if cont != "" {
		return nil, p.errf(start, "the file ends inside a continued line")
	}
	if p.f.From == "" {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "%s: no FROM", name)
	}
	return p.f, nil
}

type parser struct {
	name       string
	f          *File
	inEgress   bool // the lines below an `egress:` alone
	egressSeen bool
	workdir    string // as far as the file has set it
}

func (p *parser) errf(line int, format string, a ...any) error {
	return errdefs.Wrap(errdefs.ErrInvalid, "%s:%d: %s", p.name, line, fmt.Sprintf(format, a...))
}

func (p *parser) line(n int, raw string) error {
	s := strings.TrimSpace(raw)
	if s == "" || strings.HasPrefix(s, "#") {
		return nil
	}
	if p.inEgress {
		if item, ok := strings.CutPrefix(s, "- "); ok && raw != s {
			return p.presets(n, item)
		}
		p.inEgress = false
	}
	if rest, ok := strings.CutPrefix(s, "egress:"); ok {
		if p.egressSeen {
			return p.errf(n, "a second egress: section")
		}
		p.egressSeen = true
		if strings.TrimSpace(rest) == "" {
			p.inEgress = true
			return nil
		}
		return p.presets(n, rest)
	}
	op, rest, _ := strings.Cut(s, " ")
	op, rest = strings.ToUpper(op), strings.TrimSpace(rest)
	if op != "FROM" && p.f.From == "" {
		return p.errf(n, "%s before FROM", op)
	}
	switch op {
	case "FROM":
		return p.from(n, rest)
	case "RUN":
		return p.run(n, rest)
	case "COPY":
		return p.copy(n, rest)
	case "ENV":
		return p.env(n, rest)
	case "WORKDIR":
		return p.workDir(n, rest)
	case "USER":
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return p.errf(n, "USER takes one name")
		}
		return p.add(n, op, rest)
	}
	return p.errf(n, "unknown instruction %q (known: FROM, RUN, COPY, ENV, WORKDIR, USER, egress:)", op)
}

func (p *parser) add(n int, op string, args ...string) error {
	p.f.Steps = append(p.f.Steps, Step{Line: n, Op: op, Args: args})
	return nil
}

func (p *parser) presets(n int, list string) error {
	for _, name := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if err := (&netpolicy.Policy{Presets: []string{name}}).Check(); err != nil {
			return p.errf(n, "egress: unknown preset %q (known: npm, go, pypi, debian, crates)", name)
		}
		p.f.Egress = append(p.f.Egress, name)
	}
	return nil
}

func (p *parser) from(n int, rest string) error {
	if p.f.From != "" {
		return p.errf(n, "a second FROM (a build has one base)")
	}
	if err := template.ValidName(rest); err != nil {
		return p.errf(n, "FROM %q: not a template name", rest)
	}
	p.f.From = rest
	return nil
}

func (p *parser) run(n int, rest string) error {
	if rest == "" {
		return p.errf(n, "RUN needs a command")
	}
	if strings.HasPrefix(rest, "[") {
		var argv []string
		if err := json.Unmarshal([]byte(rest), &argv); err != nil || len(argv) == 0 || argv[0] == "" {
			return p.errf(n, "RUN [...]: a JSON array of at least one string")
		}
		return p.add(n, "RUN", argv...)
	}
	return p.add(n, "RUN", "/bin/sh", "-c", rest)
}

// copy checks COPY's sources lexically (the build checks symlinks when
// it reads them): relative, and never above the context directory.
func (p *parser) copy(n int, rest string) error {
	args := strings.Fields(rest)
	if len(args) < 2 {
		return p.errf(n, "COPY takes SRC... DEST")
	}
	srcs, dest := args[:len(args)-1], args[len(args)-1]
	for i, s := range srcs {
		if path.IsAbs(s) {
			return p.errf(n, "COPY %s: sources are paths in the context directory, not absolute", s)
		}
		c := path.Clean(s)
		if c == ".." || strings.HasPrefix(c, "../") {
			return p.errf(n, "COPY %s: leads out of the context directory", s)
		}
		srcs[i] = c
	}
	into := strings.HasSuffix(dest, "/") || len(srcs) > 1
	if !path.IsAbs(dest) {
		dest = path.Join(p.cwd(), dest)
	}
	dest = path.Clean(dest)
	if into && dest != "/" {
		dest += "/" // a directory the sources go into
	}
	return p.add(n, "COPY", append(srcs, dest)...)
}

func (p *parser) cwd() string {
	if p.workdir == "" {
		return "/workspace"
	}
	return p.workdir
}

func (p *parser) env(n int, rest string) error {
	if rest == "" {
		return p.errf(n, "ENV takes K=V or K V")
	}
	var kvs []string
	if k, v, ok := strings.Cut(rest, " "); ok && !strings.Contains(k, "=") {
		kvs = []string{k + "=" + strings.TrimSpace(v)}
	} else {
		kvs = strings.Fields(rest)
	}
	for _, kv := range kvs {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, "\x00") || strings.ContainsRune(kv, 0) {
			return p.errf(n, "ENV %q: use K=V", kv)
		}
	}
	return p.add(n, "ENV", kvs...)
}

func (p *parser) workDir(n int, rest string) error {
	if rest == "" || strings.ContainsAny(rest, " \t\x00") {
		return p.errf(n, "WORKDIR takes one path")
	}
	d := rest
	if !path.IsAbs(d) {
		d = path.Join(p.cwd(), d)
	}
	p.workdir = path.Clean(d)
	return p.add(n, "WORKDIR", p.workdir)
}
