package mcp

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// What an exec result shows of each stream: a test run's verdict is at
// its end and the command's first complaint near its start, so both ends
// are kept and the middle is dropped (readable with exec_output).
const (
	headBytes = 4 << 10
	tailBytes = 12 << 10
)

// headTail is an io.Writer that keeps the first head bytes and the last
// tail bytes written to it, counting the rest. It never fails a write: a
// command's output is never cut short by what the model is shown.
type headTail struct {
	head, tail int
	first      []byte
	ring       []byte // the last bytes past first, at most tail of them
	total      int64
	lines      int64 // newlines written in all
	last       []byte
}

func newHeadTail(head, tail int) *headTail { return &headTail{head: head, tail: tail} }

func (h *headTail) Write(p []byte) (int, error) {
	h.total += int64(len(p))
	h.lines += int64(bytes.Count(p, []byte{'\n'}))
	q := p
	if room := h.head - len(h.first); room > 0 {
		n := min(room, len(q))
		h.first = append(h.first, q[:n]...)
		q = q[n:]
	}
	if len(q) > 0 {
		h.ring = append(h.ring, q...)
		if over := len(h.ring) - h.tail; over > 0 {
			h.ring = append(h.ring[:0], h.ring[over:]...)
		}
	}
	h.noteLastLine(p)
	return len(p), nil
}

// noteLastLine keeps the last non-empty line seen, for progress messages.
func (h *headTail) noteLastLine(p []byte) {
	t := bytes.TrimRight(p, "\r\n")
	if len(t) == 0 {
		return
	}
	if i := bytes.LastIndexAny(t, "\r\n"); i >= 0 {
		t = t[i+1:]
	}
	if len(t) > 200 {
		t = t[len(t)-200:]
	}
	h.last = append(h.last[:0], t...)
}

// LastLine is the last non-empty line written (at most 200 bytes of it).
func (h *headTail) LastLine() string { return strings.ToValidUTF8(string(h.last), "\uFFFD") }

// cut is what a headTail shows: the text, and what was left out of it.
type cut struct {
	Text          string
	OmittedBytes  int64
	OmittedLines  int64
	OmittedOffset int64 // where the left-out part starts in the whole output
}

// Cut returns the output as shown: whole when it fits, else its head and
// tail cut back to line boundaries (a line longer than either part is cut
// where it must be), with a marker saying how much was left out.
func (h *headTail) Cut() cut {
	if h.total <= int64(h.head+h.tail) && int64(len(h.first)+len(h.ring)) == h.total {
		return cut{Text: validText(append(append([]byte(nil), h.first...), h.ring...))}
	}
	head := h.first
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	}
	tail := h.ring
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	omitted := h.total - int64(len(head)) - int64(len(tail))
	lines := h.lines - int64(bytes.Count(head, []byte{'\n'})) - int64(bytes.Count(tail, []byte{'\n'}))
	var b strings.Builder
	b.WriteString(validText(head))
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[... %d bytes (%d lines) left out at offset %d; read them with exec_output ...]\n", omitted, lines, len(head))
	b.WriteString(validText(tail))
	return cut{Text: b.String(), OmittedBytes: omitted, OmittedLines: lines, OmittedOffset: int64(len(head))}
}

// validText is b as text a client can carry: invalid UTF-8 (a binary
// blob, or a multi-byte character cut at a boundary) becomes U+FFFD.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// page returns up to limit bytes of b from offset, cut back to the last
// line boundary (unless one line is longer than limit), and the offset
// after it (len(b): the end).
func page(b []byte, offset, limit int) ([]byte, int) {
	if offset >= len(b) {
		return nil, len(b)
	}
	end := min(len(b), offset+limit)
	if end < len(b) {
		if i := bytes.LastIndexByte(b[offset:end], '\n'); i >= 0 {
			end = offset + i + 1
		}
	}
	return b[offset:end], end
}
