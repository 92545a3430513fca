package broker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"

	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// RuleReflected is the rule id of a response refused (or cut) because it
// showed a brokered value.
const RuleReflected = "secret-reflected"

// Scrubber keeps a brokered value from going back to the sandbox in a
// response: a response whose head or body shows a value in any form the
// reflector knows is refused (502) instead of relayed. A body is checked
// whole before any of it goes back when it fits in ScanWhole; a longer one
// is checked as it streams, and the connection is cut at the first value
// found, before the window that holds it goes back. A gzip or zlib body
// (whatever its Content-Encoding says) is inflated and checked too.
//
// Call Request on a request before it goes upstream and Response on its
// response before it goes back; Text on any error message that may quote
// the upstream. A Scrubber is for one request at a time.
type Scrubber struct {
	rf   *reflector
	host string
	// refusal, once set, is why the response was refused or cut.
	refusal string
}

// The bounds of a check (see the package invariants).
const (
	ScanWhole      = 1 << 20  // bodies up to this are checked whole, then relayed
	scanCompressed = 8 << 20  // a compressed body is read whole up to this
	scanInflated   = 32 << 20 // and checked up to this size inflated
)

// inflateSlots bounds the compressed bodies being inflated and checked at
// once, daemon-wide: each takes up to three layers of scanInflated bytes
// (a few hundred bytes of nested gzip are enough to ask for them) and a
// core while it runs. Half the CPUs, 2 to 8.
var inflateSlots = make(chan struct{}, min(max(runtime.NumCPU()/2, 2), 8))

// InflateSlots is how many compressed bodies are inflated and checked at
// once, daemon-wide, at most.
func InflateSlots() int { return cap(inflateSlots) }

// errReflected cuts a streamed body that showed a value.
var errReflected = errors.New("the response showed a brokered secret; the rest is not relayed")

// NewScrubber returns the Scrubber for a response from host to a request
// that may carry secrets, or nil when none of them has a value to look
// for (nothing to scrub).
func NewScrubber(secrets []*netpolicy.CompiledSecret, host string) *Scrubber {
	rf := newReflector(secrets)
	if rf == nil {
		return nil
	}
	return &Scrubber{rf: rf, host: host}
}

// Request asks for a response that can be checked. A compressed body
// could hide a value that the upstream echoes: ask for it plain. A range
// of an echo could hand the value over a few bytes at a time, each too
// short to recognise: ask for whole answers.
func (sc *Scrubber) Request(h http.Header) {
	h.Set("Accept-Encoding", "identity")
	h.Del("Range")
	h.Del("If-Range")
}

// Refusal is why the last response was refused or cut ("" if it was
// not). For a streamed body it is set once the reading stops there.
func (sc *Scrubber) Refusal() string { return sc.refusal }

// Text hides an error message that quotes a value.
func (sc *Scrubber) Text(msg string) string {
	if _, _, ok := sc.rf.find([]byte(msg)); ok {
		return "the upstream's answer showed a brokered secret (not quoted)"
	}
	return msg
}

// Response checks resp before it goes back and, when it shows a value
// (or cannot be checked), replaces it with a 502 refusal; a long body is
// wrapped so that reading it stops before a window showing a value.
func (sc *Scrubber) Response(resp *http.Response) {
	// The upstream's reason phrase and trailers are not relayed: the
	// standard phrase goes back, and no trailers.
	resp.Status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	resp.Trailer = nil
	if id, form, ok := sc.rf.find(headText(resp)); ok {
		sc.refuse(resp, id, form, "head")
		return
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	if !identityOnly(resp.Header.Values("Content-Encoding")) {
		// The upstream compressed anyway although asked not to: refuse
		// rather than guess at its encoding.
		sc.refusal = "a compressed response (Content-Encoding) from a host with a brokered secret is not relayed"
		replaceWith502(resp, sc.refusal)
		return
	}
	buf, eof, err := readUpTo(resp.Body, ScanWhole)
	if err == nil && !eof && compressed(buf) {
		var more []byte
		more, eof, err = readUpTo(resp.Body, scanCompressed-len(buf))
		buf = append(buf, more...)
		if err == nil && !eof {
			sc.refusal = fmt.Sprintf("a compressed body over %d bytes from a host with a brokered secret cannot be checked", scanCompressed)
			replaceWith502(resp, sc.refusal)
			return
		}
	}
	if err != nil {
		sc.refusal = "the response body could not be read: " + sc.Text(err.Error())
		replaceWith502(resp, sc.refusal)
		return
	}
	if compressed(buf) {
		// Inflating takes up to three layers of scanInflated: at most
		// inflateSlots of them at once in the daemon, whatever the
		// number of connections and sandboxes asking.
		inflateSlots <- struct{}{}
		defer func() { <-inflateSlots }()
	}
	if id, form, ok := sc.checkBody(buf, 0); ok {
		sc.refuse(resp, id, form, "body")
		return
	} else if form != "" {
		sc.refusal = form
		replaceWith502(resp, form)
		return
	}
	orig := resp.Body
	resp.Header.Del("Content-Length")
	resp.TransferEncoding = nil
	if eof {
		resp.Body = readCloser{bytes.NewReader(buf), orig}
		resp.ContentLength = int64(len(buf))
		return
	}
	keep := min(len(buf), sc.rf.span)
	resp.Body = &reflectReader{sc: sc, r: orig, out: buf[:len(buf)-keep], carry: bytes.Clone(buf[len(buf)-keep:])}
	resp.ContentLength = -1
	if resp.ProtoAtLeast(1, 1) {
		resp.TransferEncoding = []string{"chunked"}
	} else {
		resp.Close = true
	}
}

// checkBody looks for a value in a whole body and, when it is compressed,
// in what it inflates to (up to three layers). A body that cannot be
// checked gives ok false and the reason in form.
func (sc *Scrubber) checkBody(b []byte, depth int) (id, form string, ok bool) {
	if id, form, ok := sc.rf.findAll(b); ok {
		return id, form, true
	}
	if !compressed(b) {
		return "", "", false
	}
	if depth == 3 {
		return "", "a body compressed more than three times cannot be checked", false
	}
	plain, err := inflate(b, scanInflated)
	if errors.Is(err, errTooLarge) {
		return "", fmt.Sprintf("a compressed body inflating to over %d bytes cannot be checked", scanInflated), false
	}
	// A corrupt stream is checked as far as it inflates: a client cannot
	// read further either.
	id, form, ok = sc.checkBody(plain, depth+1)
	if ok {
		form = "gzip/zlib, " + form
	}
	return id, form, ok
}

func (sc *Scrubber) refuse(resp *http.Response, id, form, where string) {
	sc.refusal = fmt.Sprintf("the response from %s showed brokered secret %s in its %s (%s); it is not relayed", sc.host, id, where, form)
	replaceWith502(resp, sc.refusal)
}

func replaceWith502(resp *http.Response, msg string) {
	if resp.Body != nil {
		resp.Body.Close()
	}
	body := "airlock egress: " + msg + " (rule " + RuleReflected + ")\n"
	resp.Body = io.NopCloser(strings.NewReader(body))
	resp.StatusCode, resp.Status = http.StatusBadGateway, "502 Bad Gateway"
	resp.Header = http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Airlock-Rule": {RuleReflected}}
	resp.ContentLength = int64(len(body))
	resp.TransferEncoding = nil
	resp.Close = true
}

// headText is the response head as the sandbox would see it.
func headText(resp *http.Response) []byte {
	var b bytes.Buffer
	b.WriteString(resp.Status)
	for name, vals := range resp.Header {
		for _, v := range vals {
			fmt.Fprintf(&b, "\n%s: %s", name, v)
		}
	}
	return b.Bytes()
}

// identityOnly: every Content-Encoding listed (header lines and their
// comma-separated values) is identity.
func identityOnly(vals []string) bool {
	for _, v := range vals {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" && !strings.EqualFold(e, "identity") {
				return false
			}
		}
	}
	return true
}

// readUpTo reads r until EOF or n bytes; eof says whether r ended.
func readUpTo(r io.Reader, n int) (b []byte, eof bool, err error) {
	b, err = io.ReadAll(io.LimitReader(r, int64(n)+1))
	if err != nil {
		return nil, false, err
	}
	if len(b) > n {
		// one byte too many: r goes on; give the byte back as data
		return b, false, nil
	}
	return b, true, nil
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// reflectReader relays a long body, checking each window of it (with the
// last span bytes of the one before) before it goes back.
type reflectReader struct {
	sc    *Scrubber
	r     io.ReadCloser
	carry []byte // checked, held back as the next window's overlap
	out   []byte // checked, not yet returned
	eof   bool
	rerr  error
}

func (s *reflectReader) Close() error { return s.r.Close() }

func (s *reflectReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.eof {
			if len(s.carry) > 0 {
				s.out, s.carry = s.carry, nil
				continue
			}
			return 0, s.rerr
		}
		buf := make([]byte, 32<<10)
		n, err := s.r.Read(buf)
		win := append(s.carry, buf[:n]...)
		if id, form, ok := s.sc.rf.find(win); ok {
			s.sc.refusal = fmt.Sprintf("the response from %s showed brokered secret %s in its body (%s); the connection was cut there", s.sc.host, id, form)
			s.carry, s.eof, s.rerr = nil, true, errReflected
			return 0, errReflected
		}
		if err != nil {
			s.out, s.carry, s.eof, s.rerr = win, nil, true, err
			continue
		}
		keep := min(len(win), s.sc.rf.span)
		s.out, s.carry = win[:len(win)-keep], bytes.Clone(win[len(win)-keep:])
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}
