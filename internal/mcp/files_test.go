package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// read_file numbers lines, reads line ranges and says how to read on;
// a binary file is named, never shown; a directory points to
// list_files; bad ranges are errors.
func TestReadFile(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	var text strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&text, "line %d\n", i)
	}
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/big.txt", "content": text.String()})
	r := e.ok("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/big.txt"})
	if !strings.HasPrefix(r.text, "     1\tline 1\n     2\tline 2\n") || !strings.HasSuffix(r.text, "  2000\tline 2000\n[lines 1-2000 of 2500 shown; read more with start_line=2001]\n") ||
		num(t, r.st, "total_lines") != 2500 || num(t, r.st, "end_line") != 2000 {
		t.Errorf("default range: %.80q ... %v", r.text, r.st)
	}
	r = e.ok("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/big.txt", "start_line": 2499, "end_line": 9999})
	if r.text != "  2499\tline 2499\n  2500\tline 2500\n" || num(t, r.st, "start_line") != 2499 || num(t, r.st, "end_line") != 2500 {
		t.Errorf("last lines: %q %v", r.text, r.st)
	}
	// A last line without a newline gets one.
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/a.txt", "content": "one\ntwo"})
	if r := e.ok("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/a.txt"}); r.text != "     1\tone\n     2\ttwo\n" {
		t.Errorf("no final newline: %q", r.text)
	}
	// Past the end is an error saying how long the file is (it once was
	// an empty answer, as from an empty file); an empty file is empty.
	e.fails("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/a.txt", "start_line": 5}, "start_line 5 is past the end of /workspace/a.txt (2 lines)")
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/empty", "content": ""})
	if r := e.ok("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/empty"}); r.text != "" || num(t, r.st, "bytes") != 0 {
		t.Errorf("empty file: %q %v", r.text, r.st)
	}
	// At most 256 KiB shown: long lines stop the range early.
	long := strings.Repeat(strings.Repeat("x", 1000)+"\n", 400)
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/long.txt", "content": long})
	r = e.ok("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/long.txt"})
	if end := num(t, r.st, "end_line"); len(r.text) > 256<<10+200 || end >= 400 || !strings.Contains(r.text, fmt.Sprintf("read more with start_line=%d", end+1)) {
		t.Errorf("256 KiB bound: %d bytes, %v", len(r.text), r.st)
	}
	// Binary: NUL bytes, or bytes that are not UTF-8.
	for name, content := range map[string]string{"/workspace/nul.bin": "ELF\x00\x01\x02", "/workspace/latin1.txt": "caf\xe9 cr\xe8me br\xfbl\xe9e\n"} {
		e.ok("write_file", map[string]any{"sandbox_id": sb, "path": name, "content": "x"})
		if err := e.agent.WriteFile(context.Background(), sb, name, strings.NewReader(content), 0o644, false); err != nil {
			t.Fatal(err)
		}
		r = e.ok("read_file", map[string]any{"sandbox_id": sb, "path": name})
		if r.st["binary"] != true || !strings.Contains(r.text, "is a binary file ("+fmt.Sprint(len(content))+" bytes") || strings.Contains(r.text, content) {
			t.Errorf("%s: %q %v", name, r.text, r.st)
		}
	}
	// A multi-byte character cut at 8 KiB is still text.
	cut := strings.Repeat("a", 8<<10-1) + "é\n"
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/utf8.txt", "content": cut})
	if r := e.ok("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/utf8.txt"}); r.st["binary"] == true {
		t.Errorf("UTF-8 text cut at the sniffed length is binary: %v", r.st)
	}
	e.fails("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace"}, "/workspace is a directory: use list_files")
	e.fails("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/nope"}, "not_found")
	e.fails("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/a.txt", "start_line": 5, "end_line": 2}, "start_line <= end_line")
	e.fails("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/a.txt", "start_line": -1}, "start_line <= end_line")
	e.fails("read_file", map[string]any{"sandbox_id": sb, "path": ""}, `argument "path" must not be empty`)
	e.fails("read_file", map[string]any{"sandbox_id": sb}, `missing properties: ["path"]`)
	// Over 16 MiB: read a part with exec.
	if err := e.agent.WriteFile(context.Background(), sb, "/workspace/huge", bytes.NewReader(make([]byte, 16<<20+1)), 0o644, false); err != nil {
		t.Fatal(err)
	}
	e.fails("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/huge"}, "read a part with exec")
	e.fails("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/huge", "old": "a", "new": "b"}, "too big to edit here")
}

// write_file needs content (empty is allowed, absent or null is not),
// takes an octal mode, makes parents.
func TestWriteFile(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	r := e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/d/e/run.sh", "content": "#!/bin/sh\necho ran\n", "mode": "0755"})
	if r.text != "wrote 19 bytes to /workspace/d/e/run.sh" || num(t, r.st, "bytes") != 19 {
		t.Errorf("write: %q %v", r.text, r.st)
	}
	if x := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "./d/e/run.sh; stat -c %a d/e/run.sh"}); !strings.Contains(x.text, "ran\n755\n") {
		t.Errorf("mode: %q", x.text)
	}
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/d/e/run.sh", "content": ""})
	if x := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "wc -c < d/e/run.sh; stat -c %a d/e/run.sh"}); !strings.Contains(x.text, "0\n644\n") {
		t.Errorf("emptied: %q", x.text)
	}
	e.fails("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/x"}, `missing properties: ["content"]`)
	e.fails("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/x", "content": nil}, `validating "arguments"`)
	e.fails("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/x", "content": "a", "mode": "rwx"}, `mode "rwx": want octal permissions`)
	e.fails("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/x", "content": "a", "mode": "17777"}, `mode "17777"`)
	e.fails("write_file", map[string]any{"sandbox_id": sb, "path": "relative", "content": "a"}, "path must be an absolute path")
	e.fails("write_file", map[string]any{"sandbox_id": "", "path": "/workspace/x", "content": "a"}, `argument "sandbox_id" must not be empty`)
}

// edit_file replaces text that occurs once, or every occurrence with
// replace_all; otherwise the error names the lines, or the line that
// differs only in whitespace or case. The file keeps its mode.
func TestEditFile(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/m.go", "content": "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n", "mode": "0600"})
	r := e.ok("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/m.go", "old": "func a() {\n\treturn 1", "new": "func a() {\n\treturn 2"})
	if r.text != "replaced 1 occurrence(s) in /workspace/m.go" || num(t, r.st, "replacements") != 1 {
		t.Errorf("edit: %q %v", r.text, r.st)
	}
	e.fails("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/m.go", "old": "return", "new": "yield"}, "old text occurs 2 times in /workspace/m.go (lines 2, 6)")
	e.fails("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/m.go", "old": "FUNC  B() {", "new": "x"}, `line 5 differs only in whitespace or case: "func b() {"`)
	e.fails("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/m.go", "old": "func c()", "new": "x"}, "old text not found in /workspace/m.go; check it with read_file")
	e.fails("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/m.go", "old": "\n\n\n", "new": "x"}, "old text not found in /workspace/m.go")
	e.fails("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/m.go", "old": "", "new": "x"}, `argument "old" must not be empty`)
	e.fails("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/m.go", "old": "a"}, `missing properties: ["new"]`)
	e.fails("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/none", "old": "a", "new": "b"}, "not_found")
	r = e.ok("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/m.go", "old": "return", "new": "yield", "replace_all": true})
	if num(t, r.st, "replacements") != 2 {
		t.Errorf("replace_all: %v", r.st)
	}
	var b bytes.Buffer
	if _, err := e.agent.ReadFile(context.Background(), sb, "/workspace/m.go", &b); err != nil || b.String() != "func a() {\n\tyield 2\n}\n\nfunc b() {\n\tyield 1\n}\n" {
		t.Errorf("after the edits: %q %v", b.String(), err)
	}
	if st, err := e.agent.StatFile(context.Background(), sb, "/workspace/m.go"); err != nil || st.Mode&0o777 != 0o600 {
		t.Errorf("mode after edit: %+v %v", st, err)
	}
	// The error lists at most 10 lines.
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/many", "content": strings.Repeat("x\n", 30)})
	r = e.fails("edit_file", map[string]any{"sandbox_id": sb, "path": "/workspace/many", "old": "x", "new": "y"}, "occurs 30 times")
	if !strings.Contains(r.text, "(lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)") {
		t.Errorf("lines named: %q", r.text)
	}
}

// list_files lists /workspace by default; search greps (with a glob) or
// finds files by glob, pages 200 results, and never hands the pattern
// to a shell.
func TestListFilesAndSearch(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/a.go", "content": "package a\n// TODO one\n"})
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/src/b.txt", "content": "TODO two\n" + strings.Repeat("y", 400) + " TODO\n"})
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/.git/HEAD", "content": "TODO in git\n"})
	r := e.ok("list_files", map[string]any{"sandbox_id": sb})
	if r.st["path"] != "/workspace" || !strings.Contains(r.text, "dir\tsrc\t") || !strings.Contains(r.text, "dir\t.git\t") {
		t.Errorf("list_files: %q %v", r.text, r.st)
	}
	r = e.ok("list_files", map[string]any{"sandbox_id": sb, "path": "/workspace/src"})
	if entries, _ := r.st["entries"].([]any); len(entries) != 2 || !strings.Contains(r.text, "file\ta.go\t22\n") {
		t.Errorf("list_files src: %q %v", r.text, r.st)
	}
	e.fails("list_files", map[string]any{"sandbox_id": sb, "path": "/workspace/none"}, "not_found")
	e.fails("list_files", map[string]any{"sandbox_id": ""}, `argument "sandbox_id" must not be empty`)

	// The fake backend's commands see the host's file system, where the
	// sandbox's /workspace is a directory of the test's: search (grep and
	// find run in the sandbox) is given that path.
	ws := strings.TrimSpace(strings.TrimPrefix(e.ok("exec", map[string]any{"sandbox_id": sb, "command": "pwd"}).text, "exit code 0\nstdout:\n"))
	r = e.ok("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "TODO"})
	if num(t, r.st, "results") != 3 || strings.Contains(r.text, ".git") || !strings.Contains(r.text, ws+"/src/a.go:2:// TODO one") || !strings.Contains(r.text, "yyy...") {
		t.Errorf("search: %q %v", r.text, r.st)
	}
	if r := e.ok("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "TODO", "glob": "*.go"}); num(t, r.st, "results") != 1 {
		t.Errorf("search with glob: %q", r.text)
	}
	if r := e.ok("search", map[string]any{"sandbox_id": sb, "path": ws, "glob": "*.txt"}); r.text != ws+"/src/b.txt" || r.st["more"] != false {
		t.Errorf("find by glob: %q", r.text)
	}
	if r := e.ok("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "nothing-like-this"}); r.text != "no matches" || num(t, r.st, "results") != 0 {
		t.Errorf("no matches: %q %v", r.text, r.st)
	}
	// A pattern a shell would run is only a pattern.
	if r := e.ok("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "$(touch /workspace/pwned)'; touch /workspace/pwned; '"}); r.text != "no matches" {
		t.Errorf("shell pattern: %q", r.text)
	}
	if _, err := e.agent.StatFile(context.Background(), sb, "/workspace/pwned"); err == nil {
		t.Error("the search pattern ran as a shell command")
	}
	e.fails("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "("}, "grep failed (exit code 2); check the pattern and path")
	e.fails("search", map[string]any{"sandbox_id": sb, "glob": "*", "path": ws + "/none"}, "find failed")
	e.fails("search", map[string]any{"sandbox_id": sb}, "give pattern, glob or both")
	e.fails("search", map[string]any{"sandbox_id": sb, "pattern": "x", "path": "src"}, "path must be absolute")
	e.fails("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "x", "offset": -1}, "offset must not be negative")
	e.fails("search", map[string]any{"sandbox_id": ""}, `argument "sandbox_id" must not be empty`)

	// 450 results: 200 a page.
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/many.txt", "content": strings.Repeat("hit\n", 450)})
	r = e.ok("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "^hit$"})
	if num(t, r.st, "results") != 450 || r.st["more"] != true || num(t, r.st, "next_offset") != 200 || !strings.HasSuffix(r.text, "[200 of 450 results shown; more with offset=200]") {
		t.Errorf("page 1: %v %q", r.st, r.text[len(r.text)-60:])
	}
	r = e.ok("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "^hit$", "offset": 400})
	if r.st["more"] != false || strings.Count(r.text, "\n") != 49 || !strings.HasPrefix(r.text, ws+"/many.txt:401:hit") {
		t.Errorf("last page: %v %q", r.st, r.text[:40])
	}
}

// A sandbox's files are resources: text up to 256 KiB, a binary file
// as a blob, bigger files refused with the way to read them.
func TestFileResource(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/dir with space/n.txt", "content": "hello\n"})
	uri := "airlock://sandboxes/" + sb + "/files/workspace/dir%20with%20space/n.txt"
	res, err := e.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: uri})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "hello\n" || res.Contents[0].MIMEType != "text/plain" {
		t.Fatalf("text resource: %+v %v", res, err)
	}
	if err := e.agent.WriteFile(context.Background(), sb, "/workspace/b.bin", strings.NewReader("\x00\x01\x02"), 0o644, false); err != nil {
		t.Fatal(err)
	}
	res, err = e.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "airlock://sandboxes/" + sb + "/files/workspace/b.bin"})
	if err != nil || string(res.Contents[0].Blob) != "\x00\x01\x02" || res.Contents[0].MIMEType != "application/octet-stream" {
		t.Fatalf("blob resource: %+v %v", res, err)
	}
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/big", "content": strings.Repeat("z", 256<<10+1)})
	for uri, want := range map[string]string{
		"airlock://sandboxes/" + sb + "/files/workspace/big":  "a resource is at most 262144",
		"airlock://sandboxes/" + sb + "/files/workspace/none": "not_found",
		"airlock://sandboxes/" + sb + "/files/bad%zz":         "not found",
		"airlock://sandboxes//files/x":                        "not found",
	} {
		if _, err := e.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(strings.ToLower(err.Error()), want) {
			t.Errorf("%s: %v, want %q", uri, err, want)
		}
	}
}

// A line longer than what read_file shows (minified code) is shown cut,
// saying so, and the answer moves on: it once answered "lines 1-0 shown;
// read more with start_line=1", the same call again, for ever.
func TestReadFileLongLine(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	long := strings.Repeat("é", 200<<10) // 400 KiB on one line
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/min.js", "content": long + "\nsecond\n"})
	r := e.ok("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/min.js"})
	if num(t, r.st, "start_line") != 1 || num(t, r.st, "end_line") != 1 || len(r.text) > 256<<10+300 || !strings.HasPrefix(r.text, "     1\téé") ||
		!strings.Contains(r.text, "line 1 is 409600 bytes: its first 262144 shown") || !strings.Contains(r.text, "read more with start_line=2") || !utf8.ValidString(r.text) {
		t.Errorf("long line: %d bytes, %q ... %q %v", len(r.text), r.text[:20], r.text[len(r.text)-200:], r.st)
	}
	r = e.ok("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/min.js", "start_line": 2})
	if r.text != "     2\tsecond\n" {
		t.Errorf("after it: %q", r.text)
	}
}

// search reads grep's first 4 MiB of output: past that it says so,
// rather than count and page what it read as all there is (and show a
// last result cut in the middle).
func TestSearchOverItsBound(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	ws := strings.TrimSpace(strings.TrimPrefix(e.ok("exec", map[string]any{"sandbox_id": sb, "command": "pwd"}).text, "exit code 0\nstdout:\n"))
	// Just over 4 MiB of results (each line names the file).
	n := 4<<20/(len(ws)+len("/many.txt:10000:hit\n")) + 1000
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/many.txt", "content": strings.Repeat("hit\n", n)})
	r := e.ok("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "^hit$"})
	if r.st["truncated"] != true || !strings.Contains(r.text, "grep's output past 4 MiB was not read") || num(t, r.st, "results") >= n {
		t.Fatalf("over the bound: %v %q", r.st, r.text[len(r.text)-200:])
	}
	// The last page's offset: a count that is a whole number of pages
	// has its last page one page back (the workspace path's length, and
	// so the count, differs from run to run).
	last := (num(t, r.st, "results") - 1) / 200 * 200
	p := e.ok("search", map[string]any{"sandbox_id": sb, "path": ws, "pattern": "^hit$", "offset": last})
	lines := strings.Split(p.text, "\n")
	if len(lines) < 3 {
		t.Fatalf("the last page at offset %d: %q", last, p.text)
	}
	if l := lines[len(lines)-3]; !strings.HasSuffix(l, ":hit") {
		t.Errorf("last result read: %q", l)
	}
}
