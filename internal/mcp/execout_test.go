package mcp_test

import (
	"strings"
	"testing"
)

// tail shows the last bytes cut forward to a line's start, and keeps a
// whole line that starts exactly there (it once dropped it, showing 24
// of the 30 bytes asked for when they were three whole lines).
func TestExecOutputTailStartsAtALine(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	id := e.ok("exec", map[string]any{"sandbox_id": sb, "command": "seq 1 20000; echo VERDICT: 3 failed"}).st["exec_id"]
	total := 108894 + len("VERDICT: 3 failed\n")
	for _, c := range []struct {
		tail int
		want string
	}{
		{30, "]\n19999\n20000\nVERDICT: 3 failed\n"}, // three whole lines
		{33, "]\n19999\n20000\nVERDICT: 3 failed\n"}, // in 19998's line: cut to 19999
		{5, "]\niled\n"}, // within the last line: what fits
	} {
		r := e.ok("exec_output", map[string]any{"sandbox_id": sb, "exec_id": id, "tail": c.tail})
		if !strings.HasSuffix(r.text, c.want) || num(t, r.st, "next_offset") != total || num(t, r.st, "offset") != total-len(c.want)+2 {
			t.Errorf("tail %d: %q %v", c.tail, r.text, r.st)
		}
	}
}
