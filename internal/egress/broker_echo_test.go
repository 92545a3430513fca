package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// rawTLSUpstream answers every request with what answer makes of it,
// written as it is (so it can be malformed).
func rawTLSUpstream(t *testing.T, cert tls.Certificate, answer func(*http.Request) []byte) int {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
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
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					_, _ = c.Write(answer(req))
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// Threat model, Secrets: an upstream on the granted host that echoes the
// credential back, in any part of its answer or in a common encoding,
// does not hand the value to the sandbox.
func TestBrokeredSecretEchoedBack(t *testing.T) {
	echo := func(r *http.Request) string { return r.Header.Get("Authorization") }
	raw := func(status, headers, body string) func(*http.Request) []byte {
		return func(r *http.Request) []byte {
			b := strings.ReplaceAll(body, "ECHO", echo(r))
			return fmt.Appendf(nil, "HTTP/1.1 %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s",
				strings.ReplaceAll(status, "ECHO", echo(r)), strings.ReplaceAll(headers, "ECHO", echo(r)), len(b), b)
		}
	}
	gzipped := func(r *http.Request) []byte {
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		io.WriteString(w, "echo: "+echo(r))
		w.Close()
		return append(fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", gz.Len()), gz.Bytes()...)
	}
	value := "Bearer " + secretValue
	jsonEsc, _ := json.Marshal(map[string]string{"authorization": value})
	for _, tc := range []struct {
		name    string
		answer  func(*http.Request) []byte
		handler http.HandlerFunc
	}{
		{name: "trailer", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Echo")
			io.WriteString(w, "body\n")
			w.(http.Flusher).Flush()
			w.Header().Set("X-Echo", echo(r))
		}},
		{name: "reason phrase", answer: raw("401 bad token ECHO", "", "")},
		{name: "header name", answer: func(r *http.Request) []byte {
			return raw("200 OK", "X-"+secretValue+": 1\r\n", "")(r)
		}},
		{name: "identity, then gzip", answer: gzipped},
		{name: "malformed header line quoted in the 502", answer: func(r *http.Request) []byte {
			return []byte("HTTP/1.1 200 OK\r\n" + echo(r) + "\r\nContent-Length: 0\r\n\r\n")
		}},
		{name: "JSON", answer: raw("200 OK", "Content-Type: application/json\r\n", string(jsonEsc))},
		{name: "base64", answer: func(r *http.Request) []byte {
			return raw("200 OK", "", base64.StdEncoding.EncodeToString([]byte(secretValue)))(r)
		}},
		{name: "URL-escaped", answer: func(r *http.Request) []byte {
			return raw("302 Found", "Location: https://api.secret.example.test/?t="+url.QueryEscape(value)+"\r\n", "")(r)
		}},
		{name: "hex", answer: func(r *http.Request) []byte {
			return raw("200 OK", "", hex.EncodeToString([]byte(secretValue)))(r)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := newTestCA(t)
			cert := ca.cert(t, "api.secret.example.test")
			var port int
			if tc.answer != nil {
				port = rawTLSUpstream(t, cert, tc.answer)
			} else {
				port = startUpstream(t, &cert, tc.handler).port
			}
			e := newEnv(t, newResolver("api.secret.example.test", "127.0.0.1"), Config{UpstreamRoots: ca.pool})
			e.setPolicy(t, secretPolicy(port))
			resp, c := e.connect(t, "api.secret.example.test:"+itoa(port))
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %d", resp.StatusCode)
			}
			pemBytes, _ := e.svc.CACert("sb1")
			roots := poolOf(t, pemBytes)
			tc := tls.Client(c, &tls.Config{ServerName: "api.secret.example.test", RootCAs: roots})
			tc.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: api.secret.example.test:%d\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", port, placeholder)
			got, _ := io.ReadAll(tc)
			if len(got) == 0 {
				t.Fatal("no answer at all")
			}
			text := string(got)
			// decode what the sandbox could decode
			if r, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil); err == nil {
				body, _ := io.ReadAll(r.Body)
				if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
					plain, _ := io.ReadAll(zr)
					text += string(plain)
				}
			}
			for _, form := range []string{secretValue, base64.StdEncoding.EncodeToString([]byte(secretValue)), hex.EncodeToString([]byte(secretValue))} {
				if strings.Contains(strings.ToLower(text), strings.ToLower(form)) {
					t.Errorf("the sandbox got the value (%q) in: %q", form, got)
				}
			}
		})
	}
}

func poolOf(t *testing.T, pemBytes []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemBytes) {
		t.Fatal("the sandbox CA's PEM does not parse")
	}
	return p
}
