package egress

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// echoTransforms are ways an upstream on a brokered host might quote the
// Authorization header it got: each turns it into a response body.
var echoTransforms = []struct {
	name string
	body func(echo string) []byte
}{
	{"base64 at offset 1", func(e string) []byte { return []byte(base64.StdEncoding.EncodeToString([]byte(e))) }},
	{"base64 at offset 2", func(e string) []byte {
		return []byte(base64.StdEncoding.EncodeToString([]byte("Xy" + e[len("Bearer "):])))
	}},
	{"base64url in JSON", func(e string) []byte {
		return []byte(`{"seen":"` + base64.RawURLEncoding.EncodeToString([]byte("Authorization: "+e)) + `"}`)
	}},
	{"reversed", func(e string) []byte { b := []byte(e); slices.Reverse(b); return b }},
	{"spaced", func(e string) []byte { return []byte(strings.Join(strings.Split(e, ""), " ")) }},
	{"upper-cased", func(e string) []byte { return []byte(strings.ToUpper(e)) }},
	{"gzip without Content-Encoding", func(e string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		io.WriteString(w, "you sent: "+e)
		w.Close()
		return b.Bytes()
	}},
	{"HTML entities", func(e string) []byte {
		var b strings.Builder
		for i, c := range e {
			if i%2 == 0 {
				fmt.Fprintf(&b, "&#%d;", c)
			} else {
				fmt.Fprintf(&b, "&#x%X;", c)
			}
		}
		return []byte("<p>" + b.String() + "</p>")
	}},
	{"backslash-u escapes", func(e string) []byte {
		var b strings.Builder
		for _, c := range e {
			fmt.Fprintf(&b, `\u%04x`, c)
		}
		return []byte(`{"auth":"` + b.String() + `"}`)
	}},
	{"UTF-16LE", func(e string) []byte { return utf16Bytes(e, false) }},
	{"UTF-16BE", func(e string) []byte { return utf16Bytes(e, true) }},
	{"base32", func(e string) []byte { return []byte(base32.StdEncoding.EncodeToString([]byte(e))) }},
	{"wrapped hex", func(e string) []byte {
		h := hex.EncodeToString([]byte("header dump: " + e))
		var b strings.Builder
		for len(h) > 30 {
			b.WriteString(h[:30] + "\n")
			h = h[30:]
		}
		return []byte(b.String() + h + "\n")
	}},
}

func utf16Bytes(s string, big bool) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		if big {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return b
}

// Threat model, Secrets: an upstream on the granted host that echoes the
// credential in an everyday transform does not hand the value to the
// sandbox: the answer is refused with 502 and the refusal recorded.
func TestBrokeredSecretEchoedTransformed(t *testing.T) {
	for _, form := range echoTransforms {
		t.Run(form.name, func(t *testing.T) {
			b := newBrokerEnvWith(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Write(form.body(r.Header.Get("Authorization")))
			})
			resp, body := b.get(t, b.sandboxCA, "https://api.secret.example.test:"+itoa(b.up.port)+"/", "Bearer "+placeholder)
			if sent := form.body("Bearer " + secretValue); strings.Contains(strings.ToLower(body), strings.ToLower(string(sent))) {
				t.Fatalf("the sandbox got the echo %q", body)
			}
			if resp.StatusCode != 502 || resp.Header.Get("X-Airlock-Rule") != RuleReflected {
				t.Errorf("got %d %s, want a 502 refusal", resp.StatusCode, body)
			}
			ev := b.rec.find(t, KindResponse, 1)[0]
			if ev.Decision != "deny" || ev.Rule != RuleReflected {
				t.Errorf("response event %+v", ev)
			}
		})
	}
}

// A long body that quotes the value past the part checked whole: the
// stream is cut before the window with the value goes back.
func TestBrokeredSecretEchoedLate(t *testing.T) {
	b := newBrokerEnvWith(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("padding "), (3*scanWhole)/8))
		io.WriteString(w, strings.ToUpper(r.Header.Get("Authorization")))
		w.Write(bytes.Repeat([]byte("tail "), 1000))
	})
	resp, c := b.connect(t, "api.secret.example.test:"+itoa(b.up.port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "api.secret.example.test", RootCAs: b.sandboxCA})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: api.secret.example.test:%d\r\nAuthorization: Bearer %s\r\n\r\n", b.up.port, placeholder)
	got, _ := io.ReadAll(tc)
	if len(got) < scanWhole {
		t.Errorf("only %d bytes came back: the clean start should", len(got))
	}
	if bytes.Contains(bytes.ToLower(got), []byte(secretValue)) || bytes.Contains(got, []byte("tail")) {
		t.Errorf("the stream went on past the value")
	}
	ev := b.rec.find(t, KindResponse, 1)[0]
	if ev.Decision != "deny" || ev.Rule != RuleReflected {
		t.Errorf("response event %+v", ev)
	}
}

// Threat model, Secrets: the value goes only in the headers the secret
// names (Authorization by default); a placeholder the sandbox puts in a
// cookie, another header, the URL or the body reaches the upstream as the
// placeholder, so the sandbox cannot make the host store or echo it.
func TestPlaceholderOnlyInNamedHeaders(t *testing.T) {
	bodies := make(chan string, 1)
	b := newBrokerEnvWith(t, func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		bodies <- string(got)
		io.WriteString(w, "ok")
	})
	body := "token=" + placeholder
	req, _ := http.NewRequest("POST", "https://api.secret.example.test:"+itoa(b.up.port)+"/p/"+placeholder+"?q="+placeholder, strings.NewReader(body))
	req.Header.Set("Cookie", "session="+placeholder)
	req.Header.Set("X-Custom", placeholder)
	req.Header.Set("X-Api-Key", placeholder)
	req.Header.Set("Authorization", "Bearer "+placeholder)
	req.Header.Set("Range", "bytes=7-10") // a piece of an echo at a time
	r, err := b.client(b.sandboxCA).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	seen := b.up.requests()
	if len(seen) != 1 {
		t.Fatalf("upstream saw %d requests", len(seen))
	}
	got := seen[0]
	if got.Header.Get("Authorization") != "Bearer "+secretValue {
		t.Errorf("Authorization: %q", got.Header.Get("Authorization"))
	}
	for _, h := range []string{"Cookie", "X-Custom", "X-Api-Key"} {
		if v := got.Header.Get(h); strings.Contains(v, secretValue) || !strings.Contains(v, placeholder) {
			t.Errorf("%s: %q", h, v)
		}
	}
	if got := <-bodies; got != body {
		t.Errorf("body: %q", got)
	}
	if got.Header.Get("Range") != "" {
		t.Errorf("a Range request went to a brokered host: %q", got.Header.Get("Range"))
	}
	if strings.Contains(got.URL.String(), secretValue) || !strings.Contains(got.URL.String(), placeholder) {
		t.Errorf("URL: %s", got.URL)
	}
	if uses := b.rec.find(t, KindSecret, 1); len(uses) != 1 || uses[0].Header != "Authorization" {
		t.Errorf("uses %+v", uses)
	}
	// A secret may not name Cookie.
	p := secretPolicy(b.up.port)
	p.Secrets[0].Headers = []string{"cookie"}
	if err := b.svc.SetPolicy("sb1", p); err == nil {
		t.Errorf("a secret for the Cookie header was accepted")
	}
}

// FuzzReflector: the detector never panics, and a value planted in any
// of the echo transforms (on a line of its own) inside arbitrary text is
// found.
func FuzzReflector(f *testing.F) {
	for _, s := range []string{"", "plain", `\u{41}\x4`, "&#x;&#", "%zz%4", "\\", "\x1f\x8b\x08"} {
		f.Add([]byte(s), uint8(0))
	}
	rf := newReflector([]*csecret{{ID: "gh", Value: secretValue}})
	f.Fuzz(func(t *testing.T, text []byte, pick uint8) {
		rf.find(text)
		form := echoTransforms[int(pick)%len(echoTransforms)]
		if strings.HasPrefix(form.name, "gzip") {
			return // whole bodies only: see TestBrokeredSecretEchoedTransformed
		}
		mid := len(text) / 2
		// (set apart: a stray backslash or '&' just before would change
		// how the escapes that follow read)
		in := append(append(append(append([]byte{}, text[:mid]...), "\n \n"...), form.body("Bearer "+secretValue)...), text[mid:]...)
		if _, _, ok := rf.find(in); !ok {
			t.Fatalf("%s not found in %q", form.name, in)
		}
	})
}

// Text that happens to start like a zlib header is not taken for a
// compressed body (a long one would be refused as too large to check).
func TestCompressedSniff(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	io.WriteString(w, "hello")
	w.Close()
	for in, want := range map[string]bool{gz.String(): true, "x^ not zlib at all": false, "x\x9c": false, "plain": false, "": false} {
		if got := compressed([]byte(in)); got != want {
			t.Errorf("compressed(%q) = %v", in, got)
		}
	}
}
