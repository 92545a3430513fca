package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

// What read_file returns at most: a model's context is the budget, not
// memory. Bigger files are read by line range.
const (
	maxRead      = 256 << 10
	defaultLines = 2000
)

type readIn struct {
	SandboxID string `json:"sandbox_id"`
	Path      string `json:"path" jsonschema:"absolute path"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"from 1"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"default start_line+1999"`
}

type readOut struct {
	Path       string `json:"path"`
	Bytes      int64  `json:"bytes"`
	Binary     bool   `json:"binary,omitempty"`
	StartLine  int    `json:"start_line,omitempty"`
	EndLine    int    `json:"end_line,omitempty"`
	TotalLines int    `json:"total_lines,omitempty"`
}

func (s *Server) readFile(ctx context.Context, _ *mcpsdk.CallToolRequest, in readIn) (*mcpsdk.CallToolResult, readOut, error) {
	if err := errors.Join(need("sandbox_id", in.SandboxID), need("path", in.Path)); err != nil {
		return nil, readOut{}, err
	}
	if in.StartLine < 0 || in.EndLine < 0 || in.EndLine > 0 && in.EndLine < in.StartLine {
		return nil, readOut{}, errors.New("start_line and end_line: 1 <= start_line <= end_line")
	}
	st, err := s.Client.StatFile(ctx, in.SandboxID, in.Path)
	if err != nil {
		return nil, readOut{}, err
	}
	if st.Type == "dir" {
		return nil, readOut{}, fmt.Errorf("%s is a directory: use list_files", in.Path)
	}
	// Whole files up to 16 MiB are fetched to number their lines; past
	// that a line range is read with exec (sed -n).
	if st.Size > 16<<20 {
		return nil, readOut{}, fmt.Errorf("%s is %d bytes: read a part with exec (e.g. sed -n '100,200p' FILE)", in.Path, st.Size)
	}
	var b bytes.Buffer
	if _, err := s.Client.ReadFile(ctx, in.SandboxID, in.Path, &b); err != nil {
		return nil, readOut{}, err
	}
	data := b.Bytes()
	out := readOut{Path: in.Path, Bytes: int64(len(data))}
	if isBinary(data) {
		out.Binary = true
		return textResult(fmt.Sprintf("%s is a binary file (%d bytes, %s); not shown as text. Inspect it with exec (e.g. xxd FILE | head).",
			in.Path, len(data), http.DetectContentType(data))), out, nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	out.TotalLines = len(lines)
	if in.StartLine > len(lines) && len(lines) > 0 {
		// An empty answer would read as an empty file.
		return nil, readOut{}, fmt.Errorf("start_line %d is past the end of %s (%d lines)", in.StartLine, in.Path, len(lines))
	}
	start := max(in.StartLine, 1)
	end := in.EndLine
	if end == 0 {
		end = start + defaultLines - 1
	}
	text, end := numberLines(lines, start, min(end, len(lines)))
	if start <= end {
		out.StartLine, out.EndLine = start, end
	}
	if end < len(lines) {
		text += fmt.Sprintf("[lines %d-%d of %d shown; read more with start_line=%d]\n", start, end, len(lines), end+1)
	}
	return textResult(text), out, nil
}

// numberLines shows lines start to end (from 1) numbered, up to maxRead
// bytes of them, and returns the last line shown. A first line over
// maxRead by itself is shown cut, with a note, so that the answer moves
// on: a "read more with start_line" naming the same line would loop.
func numberLines(lines []string, start, end int) (string, int) {
	var t strings.Builder
	for i := start; i <= end; i++ {
		l := lines[i-1]
		if t.Len()+len(l) <= maxRead {
			fmt.Fprintf(&t, "%6d\t%s", i, l)
			continue
		}
		if i > start {
			return t.String(), i - 1
		}
		n := maxRead
		for n > 0 && !utf8.RuneStart(l[n]) {
			n--
		}
		fmt.Fprintf(&t, "%6d\t%s\n[line %d is %d bytes: its first %d shown; read the rest with exec]\n", i, l[:n], i, len(strings.TrimSuffix(l, "\n")), n)
		return t.String(), i
	}
	if end >= start && !strings.HasSuffix(lines[end-1], "\n") {
		t.WriteByte('\n')
	}
	return t.String(), end
}

// isBinary: NUL bytes, or text that is not UTF-8, in the first 8 KiB (a
// cut multi-byte character at its end excepted).
func isBinary(b []byte) bool {
	head := b[:min(len(b), 8<<10)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 && len(head)-i >= utf8.UTFMax {
			return true
		}
		i += n
	}
	return false
}

type writeIn struct {
	SandboxID string `json:"sandbox_id"`
	Path      string `json:"path" jsonschema:"absolute path"`
	Content   string `json:"content"`
	Mode      string `json:"mode,omitempty" jsonschema:"octal, default 0644"`
}

type writeOut struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

func (s *Server) writeFile(ctx context.Context, _ *mcpsdk.CallToolRequest, in writeIn) (*mcpsdk.CallToolResult, writeOut, error) {
	if err := errors.Join(need("sandbox_id", in.SandboxID), need("path", in.Path)); err != nil {
		return nil, writeOut{}, err
	}
	mode := uint64(0o644)
	if in.Mode != "" {
		m, err := strconv.ParseUint(in.Mode, 8, 32)
		if err != nil || m > 0o7777 {
			return nil, writeOut{}, fmt.Errorf("mode %q: want octal permissions such as 0644", in.Mode)
		}
		mode = m
	}
	if err := s.Client.WriteFile(ctx, in.SandboxID, in.Path, strings.NewReader(in.Content), uint32(mode), true); err != nil {
		return nil, writeOut{}, err
	}
	return textResult(fmt.Sprintf("wrote %d bytes to %s", len(in.Content), in.Path)), writeOut{in.Path, len(in.Content)}, nil
}

type editIn struct {
	SandboxID  string `json:"sandbox_id"`
	Path       string `json:"path" jsonschema:"absolute path"`
	Old        string `json:"old" jsonschema:"exact text to replace"`
	New        string `json:"new"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

type editOut struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
}

func (s *Server) editFile(ctx context.Context, _ *mcpsdk.CallToolRequest, in editIn) (*mcpsdk.CallToolResult, editOut, error) {
	if err := errors.Join(need("sandbox_id", in.SandboxID), need("path", in.Path), need("old", in.Old)); err != nil {
		return nil, editOut{}, err
	}
	st, err := s.Client.StatFile(ctx, in.SandboxID, in.Path)
	if err != nil {
		return nil, editOut{}, err
	}
	if st.Size > 16<<20 {
		return nil, editOut{}, fmt.Errorf("%s is %d bytes: too big to edit here", in.Path, st.Size)
	}
	var b bytes.Buffer
	if _, err := s.Client.ReadFile(ctx, in.SandboxID, in.Path, &b); err != nil {
		return nil, editOut{}, err
	}
	text := b.String()
	n := strings.Count(text, in.Old)
	switch {
	case n == 0:
		return nil, editOut{}, fmt.Errorf("old text not found in %s%s", in.Path, nearMiss(text, in.Old))
	case n > 1 && !in.ReplaceAll:
		return nil, editOut{}, fmt.Errorf("old text occurs %d times in %s (lines %s): give more context to make it unique, or replace_all", n, in.Path, lineNumbers(text, in.Old, 10))
	}
	if !in.ReplaceAll {
		n = 1
	}
	text = strings.Replace(text, in.Old, in.New, n)
	if err := s.Client.WriteFile(ctx, in.SandboxID, in.Path, strings.NewReader(text), st.Mode&0o7777, false); err != nil {
		return nil, editOut{}, err
	}
	return textResult(fmt.Sprintf("replaced %d occurrence(s) in %s", n, in.Path)), editOut{in.Path, n}, nil
}

// nearMiss names the line most like old's first line, when old differs
// from the file only in whitespace or case there: the usual near miss.
func nearMiss(text, old string) string {
	first := strings.TrimSpace(strings.SplitN(old, "\n", 2)[0])
	if first == "" {
		return ""
	}
	norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
	want := norm(first)
	for i, l := range strings.Split(text, "\n") {
		if norm(l) == want {
			return fmt.Sprintf("; line %d differs only in whitespace or case: %q", i+1, l)
		}
	}
	return "; check it with read_file"
}

func lineNumbers(text, old string, most int) string {
	var out []string
	off := 0
	for len(out) < most {
		i := strings.Index(text[off:], old)
		if i < 0 {
			break
		}
		out = append(out, strconv.Itoa(strings.Count(text[:off+i], "\n")+1))
		off += i + max(1, len(old))
	}
	return strings.Join(out, ", ")
}

type listFilesIn struct {
	SandboxID string `json:"sandbox_id"`
	Path      string `json:"path,omitempty" jsonschema:"default /workspace"`
	Tar       bool   `json:"tar,omitempty" jsonschema:"its tree as a tar instead"`
}

type fileEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

type listFilesOut struct {
	Path    string      `json:"path"`
	Entries []fileEntry `json:"entries"`
}

func (s *Server) listFiles(ctx context.Context, _ *mcpsdk.CallToolRequest, in listFilesIn) (*mcpsdk.CallToolResult, any, error) {
	if err := need("sandbox_id", in.SandboxID); err != nil {
		return nil, nil, err
	}
	if in.Path == "" {
		in.Path = "/workspace"
	}
	if in.Tar {
		return s.downloadTree(ctx, in.SandboxID, in.Path)
	}
	list, err := s.Client.ListFiles(ctx, in.SandboxID, in.Path)
	if err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	out := listFilesOut{Path: in.Path, Entries: []fileEntry{}}
	for _, f := range list {
		fmt.Fprintf(&b, "%s\t%s\t%d\n", f.Type, f.Name, f.Size)
		out.Entries = append(out.Entries, fileEntry{f.Name, f.Type, f.Size})
	}
	return textResult(b.String()), out, nil
}

type searchIn struct {
	SandboxID string `json:"sandbox_id"`
	Pattern   string `json:"pattern,omitempty"`
	Glob      string `json:"glob,omitempty" jsonschema:"e.g. *.go; alone: find files"`
	Path      string `json:"path,omitempty" jsonschema:"default /workspace"`
	Offset    int    `json:"offset,omitempty"`
}

type searchOut struct {
	Results    int  `json:"results"`
	NextOffset int  `json:"next_offset,omitempty"`
	More       bool `json:"more"`
	Truncated  bool `json:"truncated,omitempty"` // more results than were read
}

// A search shows 200 results a page, of the first 4 MiB grep or find
// wrote.
const (
	searchPage  = 200
	searchBytes = 4 << 20
)

// search runs grep or find in the sandbox, through exec (so through the
// policy and the record), with argv, never a shell line: the pattern is
// the agent's and is never parsed by a shell.
func (s *Server) search(ctx context.Context, _ *mcpsdk.CallToolRequest, in searchIn) (*mcpsdk.CallToolResult, searchOut, error) {
	if err := need("sandbox_id", in.SandboxID); err != nil {
		return nil, searchOut{}, err
	}
	if in.Pattern == "" && in.Glob == "" {
		return nil, searchOut{}, errors.New("give pattern, glob or both")
	}
	if in.Offset < 0 {
		return nil, searchOut{}, errors.New("offset must not be negative")
	}
	if in.Path == "" {
		in.Path = "/workspace"
	}
	if !strings.HasPrefix(in.Path, "/") {
		return nil, searchOut{}, errors.New("path must be absolute")
	}
	argv := []string{"find", in.Path, "-name", ".git", "-prune", "-o", "-type", "f", "-name", in.Glob, "-print"}
	if in.Pattern != "" {
		argv = []string{"grep", "-rnIE", "--exclude-dir=.git", "-e", in.Pattern}
		if in.Glob != "" {
			argv = append(argv, "--include="+in.Glob)
		}
		argv = append(argv, "--", in.Path)
	}
	out := newHeadTail(searchBytes, 0)
	st, err := s.Client.Exec(ctx, in.SandboxID, sdk.ExecRequest{Argv: argv, Timeout: s.execTimeout(), NoApprovalWait: true}, out, nil)
	if err != nil {
		return nil, searchOut{}, err
	}
	if st.Code > 1 && argv[0] == "grep" || st.Code != 0 && argv[0] == "find" {
		return nil, searchOut{}, fmt.Errorf("%s failed (exit code %d); check the pattern and path", argv[0], st.Code)
	}
	lines, truncated := searchLines(out)
	res := searchOut{Results: len(lines), Truncated: truncated}
	shown := lines[min(in.Offset, len(lines)):]
	if len(shown) > searchPage {
		shown, res.More, res.NextOffset = shown[:searchPage], true, in.Offset+searchPage
	}
	for i, l := range shown {
		if len(l) > 300 {
			shown[i] = l[:300] + "..."
		}
	}
	text := strings.Join(shown, "\n")
	if res.More {
		text += fmt.Sprintf("\n[%d of %d results shown; more with offset=%d]", len(shown), len(lines), res.NextOffset)
	} else if len(lines) == 0 {
		text = "no matches"
	}
	if truncated {
		text += fmt.Sprintf("\n[grep's output past %d MiB was not read: these %d results are not all; narrow the pattern, glob or path]", searchBytes>>20, len(lines))
	}
	return textResult(text), res, nil
}

// searchLines are the results read, one a line; truncated when the
// command wrote more than was kept (the last, cut line then dropped).
func searchLines(out *headTail) ([]string, bool) {
	text := validText(out.first)
	truncated := out.total > int64(len(out.first))
	if truncated {
		text = text[:strings.LastIndexByte(text, '\n')+1]
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	return lines, truncated
}

func jsonResult(v any) (*mcpsdk.CallToolResult, any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	return nil, json.RawMessage(b), nil
}
