package h1

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// minSpliceBody is the smallest response body moved between sockets
// without entering the daemon's memory: below it, the copy through the
// buffers costs less than setting up a splice.
const minSpliceBody = 64 << 10

// spliceBody is a response body whose bytes need no inspection once its
// head has been decided: what the upstream's bufio.Reader already holds,
// then the rest straight from the upstream's socket, n bytes in all.
// splicingWriter.ReadFrom moves the rest with splice(2); Read is the
// plain path for any other copy.
type spliceBody struct {
	br   *bufio.Reader
	conn *net.TCPConn // under br (through a disarmed HeadLimiter)
	left int64
}

// spliceable returns resp's body as a spliceBody when the response can
// go back without its bytes passing through the daemon: a Content-Length
// body (no chunked framing to parse) of at least minSpliceBody, nothing
// to scrub, a TCP upstream and a client socket that splices from one.
// The upstream's http.Response body is then never read: the caller must
// not close it (that would read on past the body).
func (ex *Exchange) spliceable(resp *http.Response) (*spliceBody, bool) {
	if ex.Scrub != nil || resp.ContentLength < minSpliceBody || resp.Body == http.NoBody || len(resp.TransferEncoding) > 0 {
		return nil, false
	}
	if _, ok := ex.Client.(*net.TCPConn); !ok || ex.UpLim == nil {
		return nil, false
	}
	conn, ok := ex.UpLim.r.(*net.TCPConn)
	if !ok {
		return nil, false
	}
	return &spliceBody{br: ex.UpBr, conn: conn, left: resp.ContentLength}, true
}

func (b *spliceBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *spliceBody) Close() error { return nil }

// splicingWriter is the client's countingWriter for a response with a
// spliceBody.
type splicingWriter struct{ *countingWriter }

// ReadFrom is how http.Response.Write's copy of the body reaches the
// client (through the bufio.Writer, once it has sent the head): a
// spliceBody (under the io.LimitedReader of its Content-Length) goes
// socket to socket after the bytes already buffered; anything else is
// copied.
func (w splicingWriter) ReadFrom(r io.Reader) (int64, error) {
	c := w.countingWriter
	lr, ok := r.(*io.LimitedReader)
	var b *spliceBody
	if ok {
		b, ok = lr.R.(*spliceBody)
	}
	rf, rfOK := c.w.(io.ReaderFrom)
	if !ok || !rfOK {
		return io.Copy(struct{ io.Writer }{c}, r)
	}
	var total int64
	if k := min(int64(b.br.Buffered()), lr.N, b.left); k > 0 {
		buf, _ := b.br.Peek(int(k))
		n, err := c.Write(buf)
		b.br.Discard(n)
		b.left, lr.N, total = b.left-int64(n), lr.N-int64(n), int64(n)
		if err != nil {
			return total, err
		}
	}
	n, err := rf.ReadFrom(&io.LimitedReader{R: b.conn, N: min(lr.N, b.left)})
	c.n += n
	b.left, lr.N, total = b.left-n, lr.N-n, total+n
	return total, err
}
