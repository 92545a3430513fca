package egress

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/egress/broker"
	"github.com/airlock-dev/airlock/internal/egress/broker/brokertest"
)

// Threat model, Secrets: an upstream on the granted host that echoes the
// credential in an everyday transform does not hand the value to the
// sandbox: the answer is refused with 502 and the refusal recorded.
func TestBrokeredSecretEchoedTransformed(t *testing.T) {
	for _, form := range brokertest.Echoes {
		t.Run(form.Name, func(t *testing.T) {
			b := newBrokerEnvWith(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Write(form.Body(r.Header.Get("Authorization")))
			})
			resp, body := b.get(t, b.sandboxCA, "https://api.secret.example.test:"+itoa(b.up.port)+"/", "Bearer "+placeholder)
			if sent := form.Body("Bearer " + secretValue); strings.Contains(strings.ToLower(body), strings.ToLower(string(sent))) {
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
		w.Write(bytes.Repeat([]byte("padding "), (3*broker.ScanWhole)/8))
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
	if len(got) < broker.ScanWhole {
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
