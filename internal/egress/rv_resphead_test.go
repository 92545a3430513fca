package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Review (rv-daemon): the proxy read an upstream's response head with
// http.ReadResponse straight off the connection, which bounds neither a
// line nor the number of header lines: an upstream the sandbox reaches
// (any server of its own under public_web, plain HTTP) that sends an
// endless status line makes the daemon, outside every cgroup, hold it all
// in memory, and the error quoting it became one egress.response event of
// that size, a kind the audit budget never refuses.
func TestReviewUpstreamResponseHeadIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				io.WriteString(c, "HTTP/1.1 ")
				chunk := []byte(strings.Repeat("A", 64<<10))
				for range 16 * 16 { // 16 MiB, no end of line
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	e := newEnv(t, newResolver("big.example.test", "127.0.0.1"), Config{})
	e.setPolicy(t, Policy{Rules: []Rule{{ID: "big", Action: Allow, Hosts: []string{"big.example.test"}, Ports: []int{port}}, loopbackRule(port)}})
	resp, err := e.client(nil).Get("http://big.example.test:" + itoa(port) + "/")
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("status %d, want 502", resp.StatusCode)
		}
	}
	evs := e.rec.find(t, KindResponse, 1)
	if n := len(evs[0].Error); n > 64<<10 {
		t.Errorf("the response event's error is %d bytes: the upstream's endless status line, quoted whole", n)
	}
	if !strings.Contains(evs[0].Error, "response head is over") {
		t.Errorf("the head was not cut at its bound: %.200s", evs[0].Error)
	}
}
