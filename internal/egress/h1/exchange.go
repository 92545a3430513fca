package h1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// RuleUpstream is the rule id of a request whose upstream failed.
const RuleUpstream = "upstream"

// WriteRefusal answers a refused request. rule is an id (no spaces or
// line breaks). msg, which may hold what the sandbox sent, is in the body
// as it is, and in the status line and an X-Airlock-Reason field as
// printable ASCII only: clients (npm, go, pip) show the status line and
// nothing else, and an agent told only "Forbidden" cannot say why.
func WriteRefusal(w io.Writer, code int, rule, msg string) {
	body := "airlock egress: " + msg + " (rule " + rule + ")\n"
	line := fieldSafe(http.StatusText(code) + " by airlock egress: " + msg + " (rule " + rule + ")")
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Airlock-Rule: %s\r\nX-Airlock-Reason: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, line, fieldSafe(rule), fieldSafe(msg), len(body), body)
}

// maxReasonLine bounds the reason in a status line or field.
const maxReasonLine = 300

// fieldSafe is s with every byte outside printable ASCII replaced by '?'
// and cut to maxReasonLine bytes: nothing in it can end a line or start a
// field.
func fieldSafe(s string) string {
	b := []byte(s)
	if len(b) > maxReasonLine {
		b = append(b[:maxReasonLine-3], "..."...)
	}
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// HostHeader is t as a Host field value: the port only when it is not
// defPort.
func HostHeader(t netpolicy.Target, defPort int) string {
	if t.Port == defPort {
		if strings.Contains(t.Host, ":") {
			return "[" + t.Host + "]"
		}
		return t.Host
	}
	return t.String()
}

// hopByHop are the fields a proxy must not forward (RFC 9110 7.6.1), and
// Proxy-Authorization, which is for us.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// Exchange forwards one parsed request upstream and its response back.
// Set the fields above the blank line and call Run once; the fields below
// it are the outcome.
type Exchange struct {
	Req    *http.Request
	Client io.Writer
	Up     io.Writer
	UpBr   *bufio.Reader
	UpLim  *HeadLimiter // bounds what a response head may read of the upstream (see UpstreamReader)
	// Scrub, when set, rewrites the response before it goes back, and
	// ScrubText an error message that may quote the upstream.
	Scrub     func(*http.Response)
	ScrubText func(string) string

	Status     int   // the upstream's status
	UpN, DownN int64 // bytes sent up and down
	Err        error // what went wrong, if anything
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Run sends Req upstream (hop-by-hop fields removed, an expected 100
// Continue answered here, as the request is sent whole) and the response
// back (interim answers dropped, a protocol switch refused, after Scrub),
// answering 502 itself while nothing went back. It reports whether both
// connections may carry another request.
func (ex *Exchange) Run() bool {
	req := ex.Req
	removeHopByHop(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // Write would add Go's own
	}
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// Answer for the upstream so the client sends its body now: we
		// forward requests whole.
		req.Header.Del("Expect")
		if _, err := io.WriteString(ex.Client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			ex.Err = err
			return false
		}
	}
	upw := &countingWriter{w: ex.Up}
	bw := bufio.NewWriterSize(upw, 32<<10)
	if err := req.Write(bw); err != nil {
		ex.Err = fmt.Errorf("send request: %w", err)
		ex.fail()
		return false
	}
	if err := bw.Flush(); err != nil {
		ex.Err = fmt.Errorf("send request: %w", err)
		ex.fail()
		return false
	}
	ex.UpN = upw.n
	var resp *http.Response
	ex.UpLim.arm() // the interim answers' heads count too
	for {
		var err error
		resp, err = http.ReadResponse(ex.UpBr, req)
		if err != nil {
			ex.Err = fmt.Errorf("read response: %w", err)
			ex.fail()
			return false
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close() // interim answers (100, 103) are not forwarded
	}
	ex.UpLim.disarm()
	body := resp.Body
	defer func() { body.Close() }()
	ex.Status = resp.StatusCode
	if resp.StatusCode == http.StatusSwitchingProtocols {
		ex.Err = errors.New("upstream switched protocols, which the proxy does not relay")
		ex.fail()
		return false
	}
	removeHopByHop(resp.Header)
	if ex.Scrub != nil {
		ex.Scrub(resp)
	}
	cw := &countingWriter{w: ex.Client}
	bw = bufio.NewWriterSize(cw, 32<<10)
	if sb, ok := ex.spliceable(resp); ok {
		resp.Body, body = sb, sb
		bw = bufio.NewWriterSize(splicingWriter{cw}, 32<<10)
	}
	err := resp.Write(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	ex.DownN = cw.n
	if err != nil {
		ex.Err = fmt.Errorf("send response: %w", err)
		return false
	}
	return !req.Close && !resp.Close
}

// maxResponseHead bounds an upstream's response head (its status line
// and header fields, and any interim answers before them). Without it
// http.ReadResponse bounds neither a line nor the number of lines: an
// upstream of the sandbox's choosing could make the daemon hold an
// endless head in memory, and the error quoting it would be one event of
// that size.
const maxResponseHead = 1 << 20

var errResponseHeadTooLarge = fmt.Errorf("the upstream's response head is over %d bytes", maxResponseHead)

// HeadLimiter is the upstream connection under a bufio.Reader: while
// armed, reads past maxResponseHead fail.
type HeadLimiter struct {
	r    io.Reader
	left int64 // < 0: not armed
}

// UpstreamReader is how an Exchange reads an upstream connection r: the
// reader to set as UpBr and its limiter as UpLim.
func UpstreamReader(r io.Reader) (*bufio.Reader, *HeadLimiter) {
	l := &HeadLimiter{r: r, left: -1}
	return bufio.NewReader(l), l
}

func (l *HeadLimiter) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.r.Read(p)
	}
	if l.left == 0 {
		return 0, errResponseHeadTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *HeadLimiter) arm() {
	if l != nil {
		l.left = maxResponseHead
	}
}

func (l *HeadLimiter) disarm() {
	if l != nil {
		l.left = -1
	}
}

// maxErrorText bounds an upstream error in the record (it may quote what
// the upstream sent).
const maxErrorText = 1024

// ClipError is an error message cut to maxErrorText bytes, for the record.
func ClipError(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText] + "... (cut)"
	}
	return s
}

// fail answers 502 when nothing has gone back yet.
func (ex *Exchange) fail() {
	msg := ex.Err.Error()
	if ex.ScrubText != nil {
		msg = ex.ScrubText(msg)
	}
	WriteRefusal(ex.Client, http.StatusBadGateway, RuleUpstream, msg)
}
