package h1

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// tcpPair is a connected pair of loopback TCP connections.
func tcpPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); s.Close() })
	return d.(*net.TCPConn), s.(*net.TCPConn)
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>9)
	}
	return b
}

// TestSplicingWriterExact: a spliceBody moves exactly its length, the
// bytes its bufio.Reader already held first, and leaves what follows it
// (the next response) unread on the upstream.
func TestSplicingWriterExact(t *testing.T) {
	upSrv, upConn := tcpPair(t)
	clConn, clPeer := tcpPair(t)
	const n = 200<<10 + 17
	data := pattern(n)
	next := []byte("HTTP/1.1 204 No Content\r\n\r\n")
	go func() { upSrv.Write(data); upSrv.Write(next) }()
	lim := &HeadLimiter{r: upConn, left: -1}
	br := bufio.NewReaderSize(lim, 64<<10)
	if _, err := br.Peek(1000); err != nil { // bytes of the body already buffered
		t.Fatal(err)
	}
	sb := &spliceBody{br: br, conn: upConn, left: n}
	cw := &countingWriter{w: clConn}
	got := make(chan []byte)
	go func() {
		clPeer.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(clPeer)
		got <- b
	}()
	upConn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a body read past its end fails, not hangs
	lr := &io.LimitedReader{R: sb, N: n}
	m, err := splicingWriter{cw}.ReadFrom(lr)
	clConn.CloseWrite()
	if err != nil || m != n || cw.n != n || lr.N != 0 || sb.left != 0 {
		t.Fatalf("moved %d (counted %d), left %d/%d, %v; want %d", m, cw.n, lr.N, sb.left, err, n)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("the client got %d bytes, not the body's %d as sent", len(b), n)
	}
	rest := make([]byte, len(next))
	if _, err := io.ReadFull(br, rest); err != nil || !bytes.Equal(rest, next) {
		t.Fatalf("after the body: %q %v, want the next response", rest, err)
	}
}

// TestSpliceableOnlyWhenNothingToInspect: the socket-to-socket path is
// taken only for a large Content-Length body between TCP sockets with
// nothing to scrub.
func TestSpliceableOnlyWhenNothingToInspect(t *testing.T) {
	up, _ := tcpPair(t)
	cl, _ := tcpPair(t)
	br, lim := UpstreamReader(up)
	resp := func(cl int64, te ...string) *http.Response {
		return &http.Response{ContentLength: cl, TransferEncoding: te, Body: io.NopCloser(nil)}
	}
	for _, tc := range []struct {
		name string
		ex   Exchange
		resp *http.Response
		want bool
	}{
		{"large", Exchange{Client: cl, UpBr: br, UpLim: lim}, resp(minSpliceBody), true},
		{"small", Exchange{Client: cl, UpBr: br, UpLim: lim}, resp(minSpliceBody - 1), false},
		{"unknown length", Exchange{Client: cl, UpBr: br, UpLim: lim}, resp(-1), false},
		{"chunked", Exchange{Client: cl, UpBr: br, UpLim: lim}, resp(minSpliceBody, "chunked"), false},
		{"no body", Exchange{Client: cl, UpBr: br, UpLim: lim}, &http.Response{ContentLength: minSpliceBody, Body: http.NoBody}, false},
		{"scrubbed", Exchange{Client: cl, UpBr: br, UpLim: lim, Scrub: func(*http.Response) {}}, resp(minSpliceBody), false},
		{"client not a TCP socket", Exchange{Client: struct{ io.Writer }{cl}, UpBr: br, UpLim: lim}, resp(minSpliceBody), false},
		{"upstream not a TCP socket", Exchange{Client: cl, UpBr: br, UpLim: &HeadLimiter{r: struct{ io.Reader }{up}, left: -1}}, resp(minSpliceBody), false},
	} {
		if _, got := tc.ex.spliceable(tc.resp); got != tc.want {
			t.Errorf("%s: spliceable %v, want %v", tc.name, got, tc.want)
		}
	}
}
