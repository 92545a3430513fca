package api

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveGuarded runs h behind BodyGuard on a loopback listener, configured
// as airlock serve's listeners are (ReadHeaderTimeout, no ReadTimeout).
func serveGuarded(t *testing.T, h http.Handler, idle time.Duration, minRate int64, grace time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: BodyGuard(h, idle, minRate, grace), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// closedWithin reports whether the server closes c within d (reading and
// dropping whatever answer it sends first).
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	// EOF: closed by the server; so is a reset, which a close with bytes
	// of ours still unread sends (a trickle's next byte can race it). A
	// timeout is an error.
	return err == nil || errors.Is(err, syscall.ECONNRESET)
}

var readAll = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
})

// A client that sends headers and part of a body, then nothing, held a
// connection slot for ever. The idle bound closes it.
func TestStalledBodyClosesTheConnection(t *testing.T) {
	const idle = 300 * time.Millisecond
	addr := serveGuarded(t, readAll, idle, 1, time.Hour)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, _ = io.WriteString(c, "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\nhalf")
	if !closedWithin(c, 5*time.Second) {
		t.Fatalf("a stalled body still holds the connection after %s", time.Since(start))
	}
	if el := time.Since(start); el < idle {
		t.Errorf("closed after %s, before the idle bound %s", el, idle)
	}
}

// A handler that answers without reading the body (a refused key) left
// the server reading the rest of it for ever.
func TestUnreadStalledBodyClosesTheConnection(t *testing.T) {
	addr := serveGuarded(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}), 300*time.Millisecond, 1, time.Hour)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\nhalf")
	if !closedWithin(c, 5*time.Second) {
		t.Fatal("an unread stalled body still holds the connection")
	}
}

// A byte now and then, each within the idle bound, is cut by the rate.
func TestTrickledBodyClosesTheConnection(t *testing.T) {
	addr := serveGuarded(t, readAll, time.Second, 1000, 500*time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n")
	closed := make(chan bool, 1)
	go func() { closed <- closedWithin(c, 10*time.Second) }()
	for i := 0; i < 40; i++ {
		select {
		case ok := <-closed:
			if !ok {
				t.Fatal("a trickled body still holds the connection")
			}
			return
		case <-time.After(200 * time.Millisecond):
			_, _ = c.Write([]byte("x"))
		}
	}
	t.Fatal("a trickled body was read for 8 s at 5 bytes/s")
}

// What legitimately takes long is not cut: a body that keeps coming, and
// an answer streamed long after the body was read (an exec's).
func TestSteadyBodyAndLongAnswerAreNotCut(t *testing.T) {
	const idle = 200 * time.Millisecond
	addr := serveGuarded(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(200)
		for range 4 {
			_, _ = w.Write([]byte("tick\n"))
			w.(http.Flusher).Flush()
			time.Sleep(idle)
		}
		_, _ = io.WriteString(w, strings.Repeat("b", int(n)))
	}), idle, 10, 100*time.Millisecond)
	pr, pw := io.Pipe()
	go func() {
		// a chunk every idle/5: on a loaded machine a sleep of idle/2
		// overran the idle limit now and then
		for range 25 {
			_, _ = pw.Write([]byte(strings.Repeat("a", 40)))
			time.Sleep(idle / 5)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("PUT", "http://"+addr+"/x", pr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(bufio.NewReader(resp.Body))
	if err != nil || resp.StatusCode != 200 || !strings.HasSuffix(string(body), strings.Repeat("b", 1000)) {
		t.Fatalf("steady upload, long answer: %d %v %q", resp.StatusCode, err, body)
	}
}
