package bundle

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// Limits that keep a report readable (and its size bounded) when the run was
// not: what they cut is still in the bundle's own entries.
const (
	maxDiffLines     = 20000    // patch lines shown in all
	maxFileDiffLines = 5000     // patch lines shown for one file
	collapseLines    = 1500     // a file's diff longer than this starts collapsed
	maxOutputShown   = 64 << 10 // bytes of each stdout and stderr shown
	shortHex         = 12       // hex digits of a commit or hash shown
)

// Report renders report.html: one self-contained page (inline CSS, no
// script, nothing fetched, a Content-Security-Policy that forbids both) that
// shows the reviewer the diff first, then answers the reviewer's questions
// from the record, each with a verdict and its evidence, then lists the
// commands, their outputs and the test runs.
//
// Everything from the record is data: html/template escapes it, and control
// characters, invalid UTF-8 and invisible format characters (bidi overrides,
// zero-width spaces) are shown as escapes such as \x1b or \u202e rather
// than reaching the page. The same Contents always gives the same bytes.
func Report(c *Contents) ([]byte, error) {
	if c == nil {
		return nil, errors.New("report: no contents")
	}
	v := buildView(c)
	var b bytes.Buffer
	if err := reportTmpl().Execute(&b, v); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return b.Bytes(), nil
}

// seg is a run of record text: plain, or an escape (\x1b, \u202e...)
// standing for characters that must not reach the page as they are.
type seg struct {
	S string
	E bool
}

// visible splits s into plain runs and escapes; multiline keeps newlines
// (tabs are always kept).
func visible(s string, multiline bool) []seg {
	var out []seg
	add := func(t string, esc bool) {
		if n := len(out); n > 0 && out[n-1].E == esc {
			out[n-1].S += t
			return
		}
		out = append(out, seg{S: t, E: esc})
	}
	start := 0 // of the plain run not yet added
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		e := termsafe.Rune(r, n, s[i], true, multiline)
		if e == "" {
			i += n
			continue
		}
		if start < i {
			add(s[start:i], false)
		}
		add(e, true)
		i += n
		start = i
	}
	if start < len(s) {
		add(s[start:], false)
	}
	return out
}

// visibleText is visible's result as one string, for places that cannot hold
// markup (the title, attributes).
func visibleText(s string) string {
	var b strings.Builder
	for _, g := range visible(s, false) {
		b.WriteString(g.S)
	}
	return b.String()
}

// The view: everything the template shows, already worded.

type reportView struct {
	Title     string
	Task      string
	Fields    []field
	Diff      diffView
	Questions []question
	Commands  table
	Outputs   []outputView
	Tests     table
}

type field struct {
	K, V        string
	Title       string
	Mono, Block bool
}

type table struct {
	Head  []string
	Rows  []row
	Empty string // shown instead of an empty table
}

type row struct {
	Class string
	Cells []cell
}

type cell struct {
	S      string
	Class  string // mono, num
	Block  bool   // keeps newlines
	Anchor string // links to an id in the page
}

type question struct {
	ID, Title      string
	Verdict, Level string // Level: ok, warn, bad, info
	Alerts         []string
	Says           []string
	Items          []string
	Table          *table
	Note           string
}

type outputView struct {
	Anchor  string
	Title   string
	Open    bool
	Streams []streamView
}

type streamView struct {
	Name, Text, Cut string
}

func buildView(c *Contents) *reportView {
	m := c.Manifest
	v := &reportView{Title: m.Task, Task: m.Task}
	if v.Title == "" {
		v.Title = m.Sandbox
	}
	v.Fields = headerFields(c)
	pre, patch := parsePatch(c.Patch)
	files := changedFiles(c, patch)
	v.Diff = diffSection(c, pre, files)
	v.Questions = []question{
		testsQuestion(c),
		scopeQuestion(c, files),
		depsQuestion(c, files),
		generatedQuestion(files),
		networkQuestion(c),
		approvalsQuestion(c),
		artifactsQuestion(c),
	}
	v.Fields = append([]field{{K: "Verdict", V: verdictLine(v.Questions)}}, v.Fields...)
	v.Commands, v.Outputs = commandsSection(c)
	v.Tests = testsSection(c)
	return v
}

// questionNames are the questions as the verdict names them.
var questionNames = map[string]string{"q-tests": "tests", "q-scope": "scope", "q-deps": "dependencies",
	"q-generated": "generated files", "q-network": "network", "q-approvals": "approvals", "q-artifacts": "artifacts"}

// verdictLine is the report's answer in one line, first in the header
// (issue 19: a reviewer had to read every section to know whether any
// needed a look): the questions that did, worst first, each with its
// verdict.
func verdictLine(qs []question) string {
	var bad, warn []string
	for _, q := range qs {
		name := questionNames[q.ID] + " (" + q.Verdict + ")"
		switch q.Level {
		case "bad":
			bad = append(bad, name)
		case "warn":
			warn = append(warn, name)
		}
	}
	switch {
	case len(bad) > 0:
		return "Needs a look: " + strings.Join(append(bad, warn...), ", ") + "."
	case len(warn) > 0:
		return "Check: " + strings.Join(warn, ", ") + "; nothing else was flagged."
	}
	return "Nothing was flagged: tests passed, and every question below is answered without a warning."
}

func headerFields(c *Contents) []field {
	m := c.Manifest
	var f []field
	add := func(k, v string, mono bool) { f = append(f, field{K: k, V: v, Mono: mono}) }
	repo := orDash(m.Repo)
	if m.Commit != "" {
		repo += " @ " + short(m.Commit)
	}
	f = append(f, field{K: "Repository", V: repo, Title: visibleText(m.Commit), Mono: true})
	if m.Ref != "" {
		add("Ref", m.Ref, true)
	}
	add("Sandbox", orDash(m.Sandbox), true)
	if m.Prompt != "" {
		f = append(f, field{K: "Prompt", V: m.Prompt, Block: true})
	}
	if len(m.Scope) > 0 {
		add("Scope", strings.Join(m.Scope, ", "), true)
	} else {
		add("Scope", "none set", false)
	}
	if m.Test != "" {
		add("Test command", m.Test, true)
	}
	tmpl := orDash(m.Template)
	if m.TemplateVersion != "" {
		tmpl += " (version " + m.TemplateVersion + ")"
	}
	add("Template", tmpl, true)
	add("Policy version", orDash(m.Policy), true)
	add("Backend", orDash(m.Backend), true)
	add("Created", fmtTime(m.Created), false)
	add("Finished", fmtTime(m.Finished), false)
	add("Took", fmtDur(m.Created, m.Finished), false)
	if g := m.WorkspaceGone; g != nil {
		add("Workspace", "gone: "+g.Note, false)
	}
	chain := "not recorded in this page"
	if m.Chain.Hash != "" {
		chain = fmt.Sprintf("event %d, hash %s", m.Chain.Seq, short(m.Chain.Hash))
		if m.Chain.PublicKey != "" {
			chain += ", daemon key " + short(m.Chain.PublicKey)
		}
	}
	f = append(f, field{K: "Audit chain head", V: chain, Title: visibleText(m.Chain.Hash), Mono: true})
	return f
}

// fileInfo is one changed file, from the record's file list and the patch.
type fileInfo struct {
	Path, Status string
	OutOfScope   bool
	Generated    string // why it looks generated, or ""
	Adds, Dels   int
	Anchor       string // its diff's id, "" when the patch has no text for it
	diff         *patchFile
}

func changedFiles(c *Contents, patch []*patchFile) []*fileInfo {
	out := map[string]bool{}
	for _, p := range c.OutOfScope {
		out[p] = true
	}
	var files []*fileInfo
	byPath := map[string]*fileInfo{}
	for _, f := range c.Files {
		fi := &fileInfo{Path: f.Path, Status: f.Status, OutOfScope: out[f.Path] || (!f.InScope && len(c.Manifest.Scope) > 0)}
		files = append(files, fi)
		byPath[f.Path] = fi
	}
	for i, p := range patch {
		fi := byPath[p.Path]
		if fi == nil && p.OldPath != "" {
			fi = byPath[p.OldPath]
		}
		if fi == nil {
			fi = &fileInfo{Path: p.Path, Status: p.status(), OutOfScope: out[p.Path]}
			if fi.Path == "" {
				fi.Path = p.OldPath
			}
			files = append(files, fi)
			byPath[fi.Path] = fi
		}
		if fi.diff != nil { // two diffs for one path: keep both, index the first
			fi = &fileInfo{Path: fi.Path, Status: fi.Status, OutOfScope: fi.OutOfScope}
			files = append(files, fi)
		}
		fi.diff = p
		fi.Anchor = "file-" + strconv.Itoa(i+1)
		fi.Adds, fi.Dels = p.Adds, p.Dels
	}
	for _, fi := range files {
		fi.Generated = generatedReason(fi.Path)
		if fi.Generated == "" && fi.diff != nil && fi.diff.Marker {
			fi.Generated = `"generated, do not edit" marker in the patch`
		}
	}
	return files
}

// The diff.

type diffView struct {
	Empty      bool
	Preamble   string
	Index      []*fileInfo
	Files      []diffFileView
	Adds, Dels int
	Hidden     int
}

type diffFileView struct {
	*fileInfo
	OldPath string
	Open    bool
	Lines   []diffLine
	Hidden  int
	Binary  bool
}

func diffSection(c *Contents, pre []string, files []*fileInfo) diffView {
	// With no patch text but a file list, the index still shows the files.
	d := diffView{Empty: strings.TrimSpace(c.Patch) == "" && len(files) == 0, Index: files}
	d.Preamble = strings.Join(pre, "\n")
	shown := 0
	for _, fi := range files {
		d.Adds += fi.Adds
		d.Dels += fi.Dels
		p := fi.diff
		if p == nil {
			continue
		}
		fv := diffFileView{fileInfo: fi, Binary: p.Binary}
		if p.OldPath != "" && p.OldPath != fi.Path {
			fv.OldPath = p.OldPath
		}
		n := min(len(p.Lines), maxFileDiffLines, max(maxDiffLines-shown, 0))
		fv.Lines, fv.Hidden = p.Lines[:n], len(p.Lines)-n
		shown += n
		d.Hidden += fv.Hidden
		fv.Open = fi.Generated == "" && len(p.Lines) <= collapseLines
		d.Files = append(d.Files, fv)
	}
	return d
}

// patchFile is one file's part of a patch.
type patchFile struct {
	Path, OldPath string
	hint          string // status the headers imply
	Binary        bool
	Marker        bool // a line carries a "generated, do not edit" marker
	Adds, Dels    int
	Lines         []diffLine
	hunks         int
}

type diffLine struct {
	Kind     string // add, del, ctx, hunk, meta, note
	Old, New string // line numbers
	Text     string
}

func (p *patchFile) status() string {
	if p.hint != "" {
		return p.hint
	}
	return "modified"
}

var (
	hunkRE            = lazyre.New(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)
	generatedMarkerRE = lazyre.New(`(?i)code generated\b.*\bdo not edit|@generated\b|auto-?generated\b.*\bdo not (?:edit|modify)`)
)

// parsePatch splits a unified diff (git's or plain diff -u) into files. The
// hunk headers' counts decide where a hunk ends, so a removed line that reads
// "-- a/x" is not taken for a file header. Text before the first file (a
// format-patch message) is returned apart.
func parsePatch(patch string) (pre []string, files []*patchFile) {
	lines := strings.Split(patch, "\n")
	if n := len(lines); lines[n-1] == "" {
		lines = lines[:n-1]
	}
	var (
		cur              *patchFile
		oldLeft, newLeft int
		oldNo, newNo     int
		binaryData       bool
	)
	start := func() {
		cur = &patchFile{}
		files = append(files, cur)
		binaryData = false
	}
	num := func(n int) string { return strconv.Itoa(n) }
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if oldLeft > 0 || newLeft > 0 {
			switch {
			case l == "" || l[0] == ' ': // an editor may have trimmed a blank context line's space
				cur.Lines = append(cur.Lines, diffLine{Kind: "ctx", Old: num(oldNo), New: num(newNo), Text: strings.TrimPrefix(l, " ")})
				oldNo, newNo, oldLeft, newLeft = oldNo+1, newNo+1, oldLeft-1, newLeft-1
			case l[0] == '+':
				cur.Lines = append(cur.Lines, diffLine{Kind: "add", New: num(newNo), Text: l[1:]})
				newNo, newLeft = newNo+1, newLeft-1
				cur.Adds++
			case l[0] == '-':
				cur.Lines = append(cur.Lines, diffLine{Kind: "del", Old: num(oldNo), Text: l[1:]})
				oldNo, oldLeft = oldNo+1, oldLeft-1
				cur.Dels++
			case l[0] == '\\':
				cur.Lines = append(cur.Lines, diffLine{Kind: "note", Text: l})
			default:
				oldLeft, newLeft = 0, 0 // a hunk cut short: read the line afresh
				i--
				continue
			}
			if generatedMarkerRE().MatchString(l) {
				cur.Marker = true
			}
			continue
		}
		if strings.HasPrefix(l, "diff ") {
			start()
			cur.Path, cur.OldPath = gitDiffPaths(l)
			cur.meta(l)
			continue
		}
		if binaryData {
			continue
		}
		if m := hunkRE().FindStringSubmatch(l); m != nil {
			if cur == nil {
				start()
			}
			oldNo, newNo = atoi(m[1]), atoi(m[3])
			oldLeft, newLeft = 1, 1
			if m[2] != "" {
				oldLeft = atoi(m[2])
			}
			if m[4] != "" {
				newLeft = atoi(m[4])
			}
			cur.hunks++
			cur.Lines = append(cur.Lines, diffLine{Kind: "hunk", Text: l})
			continue
		}
		switch {
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			if cur == nil || cur.hunks > 0 {
				start()
			}
			if p := headerPath(l[4:], "a/"); p != "" {
				cur.OldPath = p
			} else {
				cur.hint = "added"
			}
			if p := headerPath(lines[i+1][4:], "b/"); p != "" {
				cur.Path = p
			} else {
				cur.Path, cur.hint = cur.OldPath, "deleted"
			}
			cur.meta(l)
			cur.meta(lines[i+1])
			i++
		case cur == nil:
			pre = append(pre, l)
		case strings.HasPrefix(l, `\`):
			cur.Lines = append(cur.Lines, diffLine{Kind: "note", Text: l})
		default:
			cur.meta(l)
			switch {
			case strings.HasPrefix(l, "new file mode"):
				cur.hint = "added"
			case strings.HasPrefix(l, "deleted file mode"):
				cur.hint = "deleted"
			case strings.HasPrefix(l, "rename from "):
				cur.OldPath, cur.hint = unquotePath(l[len("rename from "):]), "renamed"
			case strings.HasPrefix(l, "rename to "):
				cur.Path, cur.hint = unquotePath(l[len("rename to "):]), "renamed"
			case strings.HasPrefix(l, "Binary files ") && strings.HasSuffix(l, " differ"):
				cur.Binary = true
			case l == "GIT binary patch":
				cur.Binary, binaryData = true, true
			}
		}
	}
	return pre, files
}

func (p *patchFile) meta(l string) {
	p.Lines = append(p.Lines, diffLine{Kind: "meta", Text: l})
}

// gitDiffPaths reads "diff --git a/x b/y"; with spaces in the names only
// the unambiguous case (both names the same) is split.
func gitDiffPaths(l string) (newPath, oldPath string) {
	s, ok := strings.CutPrefix(l, "diff --git ")
	if !ok {
		return "", ""
	}
	if strings.HasPrefix(s, `"`) { // quoted names: take the second one
		if i := strings.LastIndex(s, ` "b/`); i > 0 {
			return headerPath(s[i+1:], "b/"), headerPath(s[:i], "a/")
		}
		return "", ""
	}
	if n := (len(s) - 5) / 2; len(s) >= 7 && (len(s)-5)%2 == 0 && strings.HasPrefix(s, "a/") && s[2+n:5+n] == " b/" && s[2:2+n] == s[5+n:] {
		return s[2 : 2+n], s[2 : 2+n]
	}
	if i := strings.LastIndex(s, " b/"); i > 0 && strings.HasPrefix(s, "a/") {
		return s[i+3:], s[2:i]
	}
	return "", ""
}

// headerPath reads the name in a "--- a/x" or "+++ b/x" line: "" for
// /dev/null, without a plain diff's timestamp or git's quoting.
func headerPath(s, prefix string) string {
	if !strings.HasPrefix(s, `"`) {
		s, _, _ = strings.Cut(s, "\t")
	}
	s = unquotePath(s)
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

// unquotePath undoes git's C-style quoting of unusual names, which Go's
// string literal syntax (octal escapes included) reads.
func unquotePath(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

var lockfileNames = map[string]bool{
	"go.sum": true, "go.work.sum": true, "package-lock.json": true, "npm-shrinkwrap.json": true,
	"yarn.lock": true, "pnpm-lock.yaml": true, "bun.lock": true, "bun.lockb": true, "Cargo.lock": true,
	"poetry.lock": true, "Pipfile.lock": true, "uv.lock": true, "pdm.lock": true, "composer.lock": true,
	"Gemfile.lock": true, "mix.lock": true, "pubspec.lock": true, "flake.lock": true,
	"packages.lock.json": true, "gradle.lockfile": true, "Package.resolved": true, "Podfile.lock": true,
}

var manifestNames = map[string]bool{
	"go.mod": true, "go.work": true, "package.json": true, "pyproject.toml": true, "setup.py": true,
	"setup.cfg": true, "Pipfile": true, "Cargo.toml": true, "Gemfile": true, "composer.json": true,
	"build.gradle": true, "build.gradle.kts": true, "pom.xml": true, "mix.exs": true, "pubspec.yaml": true,
	"Podfile": true, "Package.swift": true,
}

func isManifest(p string) bool {
	b := path.Base(p)
	return manifestNames[b] || (strings.HasPrefix(b, "requirements") && strings.HasSuffix(b, ".txt"))
}

var generatedDirs = []string{"vendor", "node_modules", "dist", "build", "__generated__"}

// generatedReason says why a path looks generated, or "" when it does not.
func generatedReason(p string) string {
	base := path.Base(p)
	has := func(suffixes ...string) bool {
		return slices.ContainsFunc(suffixes, func(s string) bool { return strings.HasSuffix(base, s) })
	}
	switch {
	case lockfileNames[base]:
		return "lockfile"
	case has(".pb.go", ".pb.gw.go", "_pb2.py", "_pb2_grpc.py", "_pb2.pyi", ".pb.h", ".pb.cc", "_pb.js", "_pb.d.ts", "_grpc.pb.go"):
		return "protobuf output"
	case strings.Contains(base, "_generated.") || strings.Contains(base, ".generated.") || strings.Contains(base, ".gen."):
		return "generated by its name"
	case has(".min.js", ".min.css", ".min.mjs"):
		return "minified"
	case has(".js.map", ".css.map"):
		return "source map"
	}
	for _, e := range strings.Split(path.Dir(p), "/") {
		if slices.Contains(generatedDirs, e) {
			return "under " + e + "/"
		}
	}
	return ""
}

// The questions.

func testsQuestion(c *Contents) (q question) {
	q = question{ID: "q-tests", Title: "Did tests run and pass?"}
	if g := c.Manifest.WorkspaceGone; g != nil {
		// Whatever ran before, nothing ran on the final state.
		defer func() {
			q.Level = "bad"
			q.Says = append(q.Says, "The task's sandbox had stopped ("+g.Reason+") before the task was finished: no tests ran on its final state.")
		}()
	}
	if len(c.Tests) == 0 {
		q.Verdict, q.Level = "not run", "bad"
		q.Says = append(q.Says, "No tests were run.")
		if c.Manifest.Test != "" {
			q.Says = append(q.Says, "The task's test command is "+c.Manifest.Test+", and it never ran.")
		} else {
			q.Says = append(q.Says, "The task sets no test command.")
		}
		return q
	}
	last := c.Tests[len(c.Tests)-1]
	which := "The only test run"
	if n := len(c.Tests); n > 1 {
		which = fmt.Sprintf("The last of %d test runs", n)
	}
	how := fmt.Sprintf("%s (%s, exec %s, finished %s) ", which, last.Command, last.ExecID, fmtTime(last.Finished))
	if last.Passed {
		q.Verdict, q.Level = "passed", "ok"
		q.Says = append(q.Says, how+fmt.Sprintf("passed, exit code %d.", last.ExitCode))
	} else {
		q.Verdict, q.Level = "failed", "bad"
		q.Says = append(q.Says, how+fmt.Sprintf("failed, exit code %d.", last.ExitCode))
	}
	if s := last.Summary; s != nil {
		q.Says = append(q.Says, "Its output reports "+summaryText(s)+".")
		switch {
		case last.Passed && s.Passed+s.Failed+s.Skipped == 0:
			q.Verdict, q.Level = "passed, but no tests", "warn"
			q.Says = append(q.Says, "The command succeeded without running a single test: nothing was tested.")
		case last.Passed && s.Failed > 0:
			q.Level = "warn"
			q.Says = append(q.Says, "The command succeeded although its output reports failures.")
		case !last.Passed && s.Failed == 0:
			q.Says = append(q.Says, "No failed test was recognised in its output: it may have failed to build, crashed or timed out.")
		}
		for _, f := range s.Failures {
			q.Items = append(q.Items, "failed: "+f)
		}
		if s.FailuresCapped {
			q.Items = append(q.Items, fmt.Sprintf("and more: only the first %d failed tests are named", MaxFailureNames))
		}
	} else {
		q.Says = append(q.Says, "Its output was not recognised as any known test framework's, so only the exit code speaks for it.")
		if last.Passed {
			q.Level = "warn"
		}
	}
	if n := len(c.Tests) - 1; n > 0 {
		failed := 0
		for _, t := range c.Tests[:n] {
			if !t.Passed {
				failed++
			}
		}
		q.Says = append(q.Says, fmt.Sprintf("Earlier runs: %d failed, %d passed.", failed, n-failed))
	}
	var after, wrote int
	for _, cmd := range c.Commands {
		if cmd.ExecID != last.ExecID && cmd.Error == "" && !last.Finished.IsZero() && cmd.Started.After(last.Finished) {
			after++
			if len(projectWrites(cmd.Writes)) > 0 {
				wrote++
			}
		}
	}
	if wrote > 0 {
		q.Level = "warn"
		q.Says = append(q.Says, fmt.Sprintf("%d command(s) wrote files after the last test run: the final patch is not what was tested.", wrote))
	} else if after > 0 {
		q.Says = append(q.Says, fmt.Sprintf("%d command(s) ran after the last test run, none known to write files.", after))
	}
	return q
}

// maxWritesShown bounds the project files a command's row names.
const maxWritesShown = 20

// projectWrites are the writes inside the project (/workspace): what the
// patch can hold. The rest are caches and scratch (a Go build cache, npm's
// cache, /tmp), which once filled the column (issue 19).
func projectWrites(writes []string) []string {
	var out []string
	for _, w := range writes {
		if rel, ok := strings.CutPrefix(w, "/workspace/"); ok {
			out = append(out, rel)
		} else if !strings.HasPrefix(w, "/") {
			out = append(out, w)
		}
	}
	return out
}

// writesText is a command's writes for its row: the project's files (at
// most maxWritesShown), then one line per other place with a count.
func writesText(writes []string) string {
	proj := projectWrites(writes)
	lines := proj
	if len(proj) > maxWritesShown {
		lines = append(slices.Clone(proj[:maxWritesShown]), fmt.Sprintf("and %d more", len(proj)-maxWritesShown))
	}
	counts, order := map[string]int{}, []string{}
	for _, w := range writes {
		if !strings.HasPrefix(w, "/") || strings.HasPrefix(w, "/workspace/") {
			continue
		}
		place := outsidePlace(w)
		if counts[place] == 0 {
			order = append(order, place)
		}
		counts[place]++
	}
	for _, place := range order {
		lines = append(lines, fmt.Sprintf("%s: %d file(s) outside the project", place, counts[place]))
	}
	return strings.Join(lines, "\n")
}

// outsidePlace is the directory a write outside the project is counted
// under: its first three components (/home/sandbox/.cache), or its
// parent if shallower.
func outsidePlace(w string) string {
	parts := strings.SplitN(strings.TrimPrefix(w, "/"), "/", 4)
	if len(parts) > 3 {
		parts = parts[:3]
	} else {
		parts = parts[:len(parts)-1]
	}
	return "/" + strings.Join(parts, "/")
}

func summaryText(s *TestSummary) string {
	t := fmt.Sprintf("%s: %d passed, %d failed, %d skipped", s.Framework, s.Passed, s.Failed, s.Skipped)
	if s.Packages > 0 {
		t += fmt.Sprintf(" (%d of these are whole Go packages, not tests: go test lists a package's tests only with -v or -json)", s.Packages)
	}
	return t
}

func scopeQuestion(c *Contents, files []*fileInfo) question {
	q := question{ID: "q-scope", Title: "Were files outside the scope changed?"}
	out := slices.Clone(c.OutOfScope)
	for _, f := range files {
		if f.OutOfScope {
			out = appendNew(out, f.Path)
		}
	}
	scope := strings.Join(c.Manifest.Scope, ", ")
	switch {
	case len(out) > 0:
		q.Verdict, q.Level = "yes", "bad"
		q.Says = append(q.Says, fmt.Sprintf("%d changed file(s) lie outside the task's scope (%s):", len(out), orDash(scope)))
		q.Items = out
	case len(c.Manifest.Scope) == 0:
		q.Verdict, q.Level = "no scope set", "info"
		q.Says = append(q.Says, "The task set no scope, so no change lies outside it.")
	default:
		q.Verdict, q.Level = "no", "ok"
		q.Says = append(q.Says, fmt.Sprintf("Every changed file lies inside the scope (%s).", scope))
	}
	return q
}

func depsQuestion(c *Contents, files []*fileInfo) question {
	q := question{ID: "q-deps", Title: "Were dependencies added or changed?"}
	d := c.Dependencies
	locks := slices.Clone(d.Lockfiles)
	var manifests []string
	for _, f := range files {
		if lockfileNames[path.Base(f.Path)] {
			locks = appendNew(locks, f.Path)
		} else if isManifest(f.Path) {
			manifests = appendNew(manifests, f.Path)
		}
	}
	switch {
	case len(d.Changes) > 0:
		q.Verdict, q.Level = "yes", "warn"
		added := 0
		t := &table{Head: []string{"manager", "package", "from", "to", "change", "integrity"}}
		for _, ch := range d.Changes {
			if ch.Change == "added" {
				added++
			}
			t.Rows = append(t.Rows, row{Class: oneOf(ch.Change, "added", "removed", "changed", "rehashed"), Cells: []cell{{S: ch.Manager}, {S: ch.Name, Class: "mono"},
				{S: orDash(ch.From), Class: "mono"}, {S: orDash(ch.To), Class: "mono"}, {S: ch.Change}, integrityCell(ch)}})
			if ch.Change == "rehashed" {
				q.Alerts = append(q.Alerts, fmt.Sprintf("%s %s keeps its version but its lockfile hash changed: other content under the same version.", ch.Name, ch.To))
			}
		}
		q.Says = append(q.Says, fmt.Sprintf("%d dependency change(s), %d of them new packages.", len(d.Changes), added))
		q.Table = t
	case len(locks) > 0 || len(manifests) > 0:
		q.Verdict, q.Level = "files changed", "warn"
		q.Says = append(q.Says, "No dependency change was recorded, but the patch changes dependency files.")
	default:
		q.Verdict, q.Level = "no", "ok"
		q.Says = append(q.Says, "No dependency change was recorded and the patch changes no lockfile or dependency manifest.")
	}
	for _, l := range locks {
		q.Items = append(q.Items, "lockfile: "+l)
	}
	for _, m := range manifests {
		q.Items = append(q.Items, "manifest: "+m)
	}
	var ran []string
	for _, cmd := range c.Commands {
		if cmd.Policy != nil && slices.Contains(cmd.Policy.Classes, "dependency") && cmd.Error == "" {
			ran = append(ran, shellJoin(cmd.Argv))
		}
	}
	if len(ran) > 0 {
		q.Says = append(q.Says, "Commands the policy classed as changing dependencies ran: "+strings.Join(ran, "; ")+".")
	}
	scriptsAndWrites(&q, d)
	return q
}

// integrityCell is ch's lockfile hash, or what its absence means: a new
// version without one is downloaded unchecked.
func integrityCell(ch DependencyChange) cell {
	switch {
	case ch.Integrity != "":
		return cell{S: ch.Integrity, Class: "mono"}
	case ch.Change == "removed":
		return cell{S: "—"}
	}
	return cell{S: "none in the lockfile"}
}

// scriptsAndWrites adds to the dependencies question the install scripts
// that ran or were blocked, and dependency code's writes into .git or
// outside the project (issue 19: 18 .git/hooks files went unflagged).
func scriptsAndWrites(q *question, d Dependencies) {
	for _, s := range d.InstallScripts {
		switch {
		case s.Override:
			q.Alerts = append(q.Alerts, fmt.Sprintf("%s ran its install script although the policy blocks them: %s turned them back on (exec %s).", s.Package, s.Command, s.ExecID))
			q.Level = worse(q.Level, "warn")
		case s.Ran:
			q.Items = append(q.Items, "install script ran: "+s.Package+" ("+s.Command+")")
			q.Level = worse(q.Level, "warn")
		default:
			q.Items = append(q.Items, "install script blocked: "+s.Package+" ("+s.Command+")")
		}
	}
	if n := len(d.FlaggedWrites); n > 0 {
		var paths []string
		for _, w := range d.FlaggedWrites {
			paths = appendNew(paths, w.Path)
		}
		q.Alerts = append(q.Alerts, fmt.Sprintf("Dependency commands wrote %d file(s) into the repository's .git or outside the project: %s.", len(paths), strings.Join(paths, ", ")))
		q.Level, q.Verdict = "bad", "dependency code wrote outside the project"
	}
}

// worse is the worse of two levels.
func worse(a, b string) string {
	rank := map[string]int{"": 0, "info": 0, "ok": 1, "warn": 2, "bad": 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func generatedQuestion(files []*fileInfo) question {
	q := question{ID: "q-generated", Title: "Were generated files rewritten?",
		Note: "Judged from paths (lockfiles, *.pb.go, *_generated.*, *.gen.*, *.min.js, vendor/, node_modules/, dist/, build/) " +
			"and from \"Code generated ... DO NOT EDIT\" or @generated markers the patch happens to show. " +
			"A generated file with an ordinary name whose marker lies outside the changed lines is missed."}
	t := &table{Head: []string{"file", "status", "why it looks generated"}}
	for _, f := range files {
		if f.Generated != "" {
			t.Rows = append(t.Rows, row{Cells: []cell{{S: f.Path, Class: "mono", Anchor: f.Anchor}, {S: f.Status}, {S: f.Generated}}})
		}
	}
	if len(t.Rows) == 0 {
		q.Verdict, q.Level = "no", "ok"
		q.Says = append(q.Says, "No changed file looks generated.")
		return q
	}
	q.Verdict, q.Level = "yes", "warn"
	q.Says = append(q.Says, fmt.Sprintf("%d changed file(s) look generated; check they were regenerated, not edited by hand:", len(t.Rows)))
	q.Table = t
	return q
}

func networkQuestion(c *Contents) question {
	q := question{ID: "q-network", Title: "Was the network contacted, and where?"}
	if c.Network == nil {
		q.Verdict, q.Level = "not recorded", "warn"
		q.Says = append(q.Says, "Network egress was not recorded for this run, so this bundle cannot say whether the network was contacted.")
		return q
	}
	if len(c.Network) == 0 {
		q.Verdict, q.Level = "no", "ok"
		q.Says = append(q.Says, "No network request was made.")
		return q
	}
	type key struct {
		host     string
		port     int
		decision string
	}
	type agg struct {
		n       int64
		out, in int64
		methods []string
		rules   []string
	}
	groups := map[key]*agg{}
	var denied, total int64
	for _, r := range c.Network {
		total += r.N()
		k := key{r.Host, r.Port, r.Decision}
		g := groups[k]
		if g == nil {
			g = &agg{}
			groups[k] = g
		}
		g.n += r.N()
		g.out += r.BytesOut
		g.in += r.BytesIn
		g.methods = appendNew(g.methods, r.Method)
		g.rules = appendNew(g.rules, r.Rule)
		if r.Decision != "allow" && r.Decision != "allowed" {
			denied += r.N()
		}
	}
	keys := make([]key, 0, len(groups))
	hosts := map[string]bool{}
	for k := range groups {
		keys = append(keys, k)
		hosts[k.host] = true
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.host != b.host {
			return strings.Compare(a.host, b.host)
		}
		if a.port != b.port {
			return a.port - b.port
		}
		return strings.Compare(a.decision, b.decision)
	})
	q.Verdict, q.Level = "yes", "warn"
	q.Says = append(q.Says, fmt.Sprintf("%d request(s) to %d host(s); %d not allowed.", total, len(hosts), denied))
	t := &table{Head: []string{"host", "port", "decision", "requests", "methods", "rules", "bytes out", "bytes in"}}
	for _, k := range keys {
		g := groups[k]
		slices.Sort(g.methods)
		slices.Sort(g.rules)
		cls := ""
		if k.decision != "allow" && k.decision != "allowed" {
			cls = "refused"
		}
		t.Rows = append(t.Rows, row{Class: cls, Cells: []cell{{S: k.host, Class: "mono"}, {S: strconv.Itoa(k.port), Class: "num"},
			{S: k.decision}, {S: strconv.FormatInt(g.n, 10), Class: "num"}, {S: strings.Join(g.methods, ", ")},
			{S: strings.Join(g.rules, ", "), Class: "mono"}, {S: strconv.FormatInt(g.out, 10), Class: "num"}, {S: strconv.FormatInt(g.in, 10), Class: "num"}}})
	}
	q.Table = t
	return q
}

func approvalsQuestion(c *Contents) question {
	q := question{ID: "q-approvals", Title: "Which approvals were given, and by whom?"}
	for _, cmd := range c.Commands {
		if cmd.Policy != nil && cmd.Policy.BreakGlass != "" {
			q.Alerts = append(q.Alerts, fmt.Sprintf("BREAK-GLASS: %s (exec %s) ran by operator override %s, outside what the policy allows.",
				shellJoin(cmd.Argv), cmd.ExecID, cmd.Policy.BreakGlass))
		}
	}
	given := 0
	var by []string
	t := &table{Head: []string{"id", "command", "classes", "state", "requested by", "requested", "decided by", "decided", "reason", "grant"}}
	for _, a := range c.Approvals {
		if a.State == "approved" {
			given++
			by = appendNew(by, a.DecidedBy)
		}
		decided := "—"
		if a.Decided != nil {
			decided = fmtTime(*a.Decided)
		}
		cmd := a.Command
		if a.Effect != "" {
			cmd += "\neffect: " + a.Effect
		}
		t.Rows = append(t.Rows, row{Class: oneOf(a.State, "approved", "denied", "expired", "pending"), Cells: []cell{{S: a.ID, Class: "mono"}, {S: cmd, Class: "mono", Block: true},
			{S: strings.Join(a.Classes, ", ")}, {S: a.State}, {S: a.RequestedBy}, {S: fmtTime(a.Created)},
			{S: orDash(a.DecidedBy)}, {S: decided}, {S: a.Reason}, {S: a.Grant, Class: "mono"}}})
	}
	switch {
	case len(c.Approvals) == 0:
		q.Verdict, q.Level = "none", "ok"
		q.Says = append(q.Says, "No approval was requested.")
	default:
		q.Verdict, q.Level = fmt.Sprintf("%d given", given), "info"
		s := fmt.Sprintf("%d approval(s) requested, %d given", len(c.Approvals), given)
		if len(by) > 0 {
			s += " (by " + strings.Join(by, ", ") + ")"
		}
		q.Says = append(q.Says, s+".")
		q.Table = t
	}
	if len(q.Alerts) > 0 {
		q.Verdict, q.Level = "break-glass used", "bad"
	}
	return q
}

func artifactsQuestion(c *Contents) question {
	q := question{ID: "q-artifacts", Title: "Are there large or sensitive artifacts?"}
	if len(c.Artifacts) == 0 {
		q.Verdict, q.Level = "no", "ok"
		q.Says = append(q.Says, "The run left no artifacts.")
		return q
	}
	t := &table{Head: []string{"artifact", "type", "size", "why", "in the bundle"}}
	included, secrets := 0, false
	for _, a := range c.Artifacts {
		if a.Included {
			included++
		}
		var why []string
		if a.Large {
			why = append(why, "large")
		}
		if len(a.Findings) > 0 {
			secrets = true
			why = append(why, "secrets found: "+strings.Join(a.Findings, ", "))
		}
		switch a.Type {
		case "executable", "archive", "symlink":
			why = append(why, a.Type)
		}
		if len(why) == 0 {
			continue
		}
		in := "no"
		if a.Included {
			in = "yes"
		}
		cls := "warn"
		if len(a.Findings) > 0 {
			cls = "secret"
		}
		t.Rows = append(t.Rows, row{Class: cls, Cells: []cell{{S: a.Path, Class: "mono"}, {S: a.Type}, {S: fmtSize(a.Size), Class: "num"},
			{S: strings.Join(why, "; ")}, {S: in}}})
	}
	q.Says = append(q.Says, fmt.Sprintf("%d artifact(s), %d copied into the bundle.", len(c.Artifacts), included))
	switch {
	case secrets:
		q.Verdict, q.Level = "yes", "bad"
	case len(t.Rows) > 0:
		q.Verdict, q.Level = "yes", "warn"
	default:
		q.Verdict, q.Level = "no", "ok"
		q.Says = append(q.Says, "None is large, holds a secret, or is an executable, archive or symlink.")
		return q
	}
	q.Says = append(q.Says, "Secret values are never copied: only the kind of secret found is listed.")
	q.Table = t
	return q
}

// The record.

func commandsSection(c *Contents) (table, []outputView) {
	t := table{Head: []string{"#", "exec", "command", "cwd", "started", "took", "result", "policy", "output", "wrote"},
		Empty: "No command was run."}
	var outs []outputView
	seen := map[string]bool{}
	for i, cmd := range c.Commands {
		cls := ""
		if cmdFailed(cmd) {
			cls = "failed"
		}
		if cmd.Policy != nil && cmd.Policy.BreakGlass != "" {
			cls = "breakglass"
		}
		output := fmt.Sprintf("stdout %s\nstderr %s", fmtSize(int64(cmd.StdoutBytes)), fmtSize(int64(cmd.StderrBytes)))
		anchor := ""
		if o, ok := c.Outputs[cmd.ExecID]; ok && !seen[cmd.ExecID] {
			seen[cmd.ExecID] = true
			anchor = "out-" + strconv.Itoa(i+1)
			outs = append(outs, outputSection(anchor, fmt.Sprintf("#%d %s: %s (%s)", i+1, cmd.ExecID, shellJoin(cmd.Argv), resultText(cmd)), cmd.ExecID, o, cmdFailed(cmd)))
		}
		t.Rows = append(t.Rows, row{Class: cls, Cells: []cell{{S: strconv.Itoa(i + 1), Class: "num"}, {S: cmd.ExecID, Class: "mono"},
			{S: shellJoin(cmd.Argv), Class: "mono"}, {S: cmd.Cwd, Class: "mono"}, {S: fmtTime(cmd.Started), Class: "nw"},
			{S: fmtDur(cmd.Started, cmd.Ended), Class: "num"}, {S: resultText(cmd)}, {S: policyText(cmd.Policy), Block: true},
			{S: output, Class: "nw", Block: true, Anchor: anchor}, {S: writesText(cmd.Writes), Class: "mono", Block: true}}})
	}
	var rest []string
	for id := range c.Outputs {
		if !seen[id] {
			rest = append(rest, id)
		}
	}
	slices.Sort(rest)
	for i, id := range rest {
		outs = append(outs, outputSection("out-x"+strconv.Itoa(i+1), "exec "+id+" (no command recorded)", id, c.Outputs[id], false))
	}
	return t, outs
}

func outputSection(anchor, title, id string, o [2][]byte, open bool) outputView {
	v := outputView{Anchor: anchor, Title: title, Open: open}
	for i, name := range []string{"stdout", "stderr"} {
		b := o[i]
		s := streamView{Name: name}
		if len(b) == 0 {
			s.Cut = "(empty)"
		} else if len(b) > maxOutputShown {
			n := maxOutputShown
			for n > 0 && !utf8.RuneStart(b[n]) {
				n--
			}
			s.Text = string(b[:n])
			s.Cut = fmt.Sprintf("… %d more bytes not shown: outputs/%s.%s in the bundle has them all.", len(b)-n, id, name)
		} else {
			s.Text = string(b)
		}
		v.Streams = append(v.Streams, s)
	}
	return v
}

func cmdFailed(c Command) bool {
	return c.Error != "" || c.Limit != "" || c.Signal != "" || (c.ExitCode != nil && *c.ExitCode != 0)
}

func resultText(c Command) string {
	var r []string
	if c.Error != "" {
		r = append(r, "not run: "+c.Error)
	}
	if c.Limit != "" {
		r = append(r, c.Limit+" limit reached")
	}
	if c.Signal != "" {
		r = append(r, "killed by "+c.Signal)
	}
	if c.ExitCode != nil {
		r = append(r, "exit "+strconv.Itoa(*c.ExitCode))
	}
	if len(r) == 0 {
		if c.Ended.IsZero() {
			return "no result recorded"
		}
		return "ended, exit code unknown"
	}
	return strings.Join(r, "; ")
}

func policyText(p *PolicySummary) string {
	if p == nil {
		return "—"
	}
	s := []string{p.Action}
	if len(p.Classes) > 0 {
		s = append(s, "classes: "+strings.Join(p.Classes, ", "))
	}
	if len(p.Rules) > 0 {
		s = append(s, "rules: "+strings.Join(p.Rules, ", "))
	}
	if len(p.Grant) > 0 {
		s = append(s, "grant: "+strings.Join(p.Grant, ", "))
	}
	if p.BreakGlass != "" {
		s = append(s, "BREAK-GLASS: "+p.BreakGlass)
	}
	return strings.Join(s, "\n")
}

func testsSection(c *Contents) table {
	t := table{Head: []string{"exec", "command", "started", "took", "exit", "result", "reported", "failures"}, Empty: "No tests were run."}
	for _, r := range c.Tests {
		res, cls := "failed", "failed"
		if r.Passed {
			res, cls = "passed", "passed"
		}
		rep, fails := "output not recognised", ""
		if r.Summary != nil {
			rep = summaryText(r.Summary)
			fails = strings.Join(r.Summary.Failures, "\n")
			if r.Summary.FailuresCapped {
				fails += "\n…"
			}
		}
		t.Rows = append(t.Rows, row{Class: cls, Cells: []cell{{S: r.ExecID, Class: "mono"}, {S: r.Command, Class: "mono"},
			{S: fmtTime(r.Started)}, {S: fmtDur(r.Started, r.Finished), Class: "num"}, {S: strconv.Itoa(r.ExitCode), Class: "num"},
			{S: res}, {S: rep}, {S: fails, Class: "mono", Block: true}}})
	}
	return t
}

// Formatting.

// oneOf returns s if it is one of the known values, else "": record data
// picks a CSS class only from a fixed set.
func oneOf(s string, known ...string) string {
	if slices.Contains(known, s) {
		return s
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func short(s string) string {
	if len(s) <= shortHex {
		return s
	}
	return s[:shortHex] + "…"
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func fmtDur(a, b time.Time) string {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return "—"
	}
	return b.Sub(a).Round(time.Millisecond).String()
}

func fmtSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// shellJoin shows argv as a shell would need it typed, so the reviewer sees
// where each argument starts and ends.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// reportTmpl is parsed on first use: every airlock process (the agent
// inside each sandbox too) would otherwise pay for it at start.
var reportTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"v":  func(s string) []seg { return visible(s, false) },
		"vb": func(s string) []seg { return visible(s, true) },
		"vt": visibleText,
	}).Parse(reportHTML))
})

// The page. Record data only ever reaches it through {{template "t"}} (or
// vt, in the title and attributes), which html/template escapes.
//
// It is a file of its own so that it reads (and diffs) as HTML.
//
//go:embed report.html.tmpl
var reportHTML string
