package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
)

const (
	plainSecret = "hunter2-sekrit"
	// Needs escaping in URLs and JSON, and its base64 differs between the two alphabets.
	oddSecret = `p@ss w0rd/?>>"\~`
)

func TestKnownValues(t *testing.T) {
	const slashSecret, mixedSecret = "sk/live/Abc123xyz", "Tok3nMixedCaseValue"
	r := New(plainSecret, oddSecret, slashSecret, mixedSecret)
	const m = "[REDACTED:known-secret]"
	b64 := func(e *base64.Encoding, s string) string { return e.EncodeToString([]byte(s)) }
	tests := []struct {
		name, in, want string
	}{
		{"raw", "echo " + plainSecret + "!", "echo " + m + "!"},
		{"raw twice", plainSecret + plainSecret, m + m},
		{"raw odd", "pw=" + oddSecret + "\n", "pw=" + m + "\n"},
		{"base64 std padded", "x " + b64(base64.StdEncoding, oddSecret) + " y", "x " + m + " y"},
		{"base64 std raw", "x " + b64(base64.RawStdEncoding, oddSecret) + " y", "x " + m + " y"},
		{"base64 url padded", "x " + b64(base64.URLEncoding, oddSecret) + " y", "x " + m + " y"},
		{"base64 url raw", "x " + b64(base64.RawURLEncoding, oddSecret) + " y", "x " + m + " y"},
		{"base64 plain", b64(base64.StdEncoding, plainSecret), m},
		{"query escaped", "https://h/?p=" + url.QueryEscape(oddSecret) + "&a=1", "https://h/?p=" + m + "&a=1"},
		{"path escaped", "https://h/" + url.PathEscape(oddSecret) + "/x", "https://h/" + m + "/x"},
		{"percent lowercase", "/" + strings.ToLower(url.PathEscape(oddSecret)), "/" + m},
		{"hex", "0x" + hex.EncodeToString([]byte(plainSecret)), "0x" + m},
		{"hex upper", strings.ToUpper(hex.EncodeToString([]byte(oddSecret))), m},
		{"json escaped", `{"msg":"` + strings.NewReplacer(`"`, `\"`, `\`, `\\`).Replace(oddSecret) + `"}`, `{"msg":"` + m + `"}`},
		{"lower-cased (a DNS label)", "dig " + strings.ToLower(mixedSecret) + ".attacker.example.test", "dig " + m + ".attacker.example.test"},
		{"json with escaped slashes", `{"k":"` + strings.ReplaceAll(slashSecret, "/", `\/`) + `"}`, `{"k":"` + m + `"}`},
		{"no match", "hunter2-sekri", "hunter2-sekri"},
	}
	if b64(base64.StdEncoding, oddSecret) == b64(base64.URLEncoding, oddSecret) {
		t.Fatal("oddSecret must encode differently in the two base64 alphabets")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.String(tt.in); got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestKnownInLongerBase64 covers a value base64-encoded inside a longer string, as in basic
// auth: each prefix length puts the value at a different alignment. Only the characters
// that carry no bit of the value may be left.
func TestKnownInLongerBase64(t *testing.T) {
	r := New(plainSecret, oddSecret)
	for _, secret := range []string{plainSecret, oddSecret} {
		for _, user := range []string{"admin", "bob", "al", "x", ""} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding} {
				for _, suffix := range []string{"", "@example.com", "+1"} {
					prefix := user + ":"
					full := enc.EncodeToString([]byte(prefix + secret + suffix))
					in := "Authorization: Basic " + full
					got := r.String(in)
					head := full[:8*len(prefix)/6]
					if !strings.HasPrefix(got, "Authorization: Basic "+head+"[REDACTED:known-secret]") {
						t.Errorf("%q+%q+%q: got %q, want prefix %q kept and the rest from the value redacted",
							prefix, secret, suffix, got, head)
					}
					if strings.Contains(got, secret) {
						t.Errorf("%q: secret left in %q", in, got)
					}
				}
			}
		}
	}
}

func TestAdd(t *testing.T) {
	var r Redactor // the zero value
	if got := r.String("pw " + plainSecret); got != "pw "+plainSecret {
		t.Fatalf("zero value redacted an unknown value: %q", got)
	}
	r.Add(plainSecret)
	r.Add(plainSecret) // twice is once
	r.Add("abcde")     // too short: would redact ordinary text
	r.Add("      \n")  // whitespace only: would redact every indent
	if got := r.String("pw " + plainSecret); got != "pw [REDACTED:known-secret]" {
		t.Errorf("after Add: %q", got)
	}
	if got := r.String("abcde abcdef"); got != "abcde abcdef" {
		t.Errorf("short value was learnt: %q", got)
	}
	if got := r.String("a\n      \nb"); got != "a\n      \nb" {
		t.Errorf("whitespace value was learnt: %q", got)
	}
	if n := len(r.known.Load().values); n != 1 {
		t.Errorf("%d values known, want 1", n)
	}
	r.Add("abcdef") // six bytes is enough
	if got := r.String("abcdef"); got != "[REDACTED:known-secret]" {
		t.Errorf("6-byte value: %q", got)
	}
}

func TestFind(t *testing.T) {
	r := New(plainSecret)
	in := "a=" + plainSecret + " key " + awsKeyID + " url https://u:pw123@h"
	got := r.Find([]byte(in))
	p := strings.Index
	want := []Finding{
		{Kind: "known-secret", Start: 2, End: 2 + len(plainSecret)},
		{Kind: "aws-access-key", Start: p(in, "AKIA"), End: p(in, "AKIA") + len(awsKeyID)},
		{Kind: "password-in-url", Start: p(in, "pw123"), End: p(in, "pw123") + 5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Find:\n got %v\nwant %v", got, want)
	}
	if fs := r.Find([]byte("nothing here")); fs != nil {
		t.Errorf("Find on clean text = %v, want nil", fs)
	}
}

func TestOverlaps(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    []Finding
		out     string
	}{
		{
			// The known value wins the kind, and the rest of the JWT still goes.
			name:    "known value inside a jwt",
			secrets: []string{jwtToken[40:60]},
			in:      "t " + jwtToken,
			want:    []Finding{{Kind: "known-secret", Start: 2, End: 2 + len(jwtToken)}},
			out:     "t [REDACTED:known-secret]",
		},
		{
			name:    "known value is a token",
			secrets: []string{ghToken},
			in:      ghToken,
			want:    []Finding{{Kind: "known-secret", Start: 0, End: len(ghToken)}},
			out:     "[REDACTED:known-secret]",
		},
		{
			name:    "two known values overlapping",
			secrets: []string{"abcdef123", "123xyz789"},
			in:      "-abcdef123xyz789-",
			want:    []Finding{{Kind: "known-secret", Start: 1, End: 16}},
			out:     "-[REDACTED:known-secret]-",
		},
		{
			name:    "known value inside a generic value",
			secrets: []string{"SECRET1x"},
			in:      "token=abcdefghijSECRET1x",
			want:    []Finding{{Kind: "known-secret", Start: 6, End: 24}},
			out:     "token=[REDACTED:known-secret]",
		},
		{
			name: "bearer jwt",
			in:   "Bearer " + jwtToken,
			want: []Finding{{Kind: "jwt", Start: 7, End: 7 + len(jwtToken)}},
			out:  "Bearer [REDACTED:jwt]",
		},
		{
			name: "adjacent findings stay apart",
			in:   awsKeyID + "," + awsKeyID,
			want: []Finding{{Kind: "aws-access-key", Start: 0, End: 20}, {Kind: "aws-access-key", Start: 21, End: 41}},
			out:  "[REDACTED:aws-access-key],[REDACTED:aws-access-key]",
		},
		{
			// "1AKIA..." is no access key id, but once the known value before it is a
			// marker, it is one: a second pass finds it, so redacting again changes nothing.
			name:    "revealed by a redaction",
			secrets: []string{"sekrit-1"},
			in:      "sekrit-1" + awsKeyID,
			want:    []Finding{{Kind: "known-secret", Start: 0, End: 8}, {Kind: "aws-access-key", Start: 8, End: 28}},
			out:     "[REDACTED:known-secret][REDACTED:aws-access-key]",
		},
		{
			// A match that cuts into a marker is dropped, even one already in the input:
			// else "]abcdef" would match each new marker's "]" plus the next "abcdef",
			// one pass at a time.
			name:    "known value next to an existing marker",
			secrets: []string{"]abcdef"},
			in:      "[REDACTED:jwt]abcdef x]abcdef",
			want:    []Finding{{Kind: "known-secret", Start: 22, End: 29}},
			out:     "[REDACTED:jwt]abcdef x[REDACTED:known-secret]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(tt.secrets...)
			if got := r.Find([]byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Find:\n got %v\nwant %v", got, tt.want)
			}
			out, changed := r.Redact([]byte(tt.in))
			if string(out) != tt.out || !changed {
				t.Errorf("Redact = %q, %v; want %q, true", out, changed, tt.out)
			}
			if again, changed := r.Redact(out); !bytes.Equal(again, out) || changed {
				t.Errorf("Redact twice = %q, %v; want %q, false", again, changed, out)
			}
		})
	}
}

func TestRedactCopies(t *testing.T) {
	r := New(plainSecret)
	for _, in := range []string{"clean text", "x " + plainSecret} {
		b := []byte(in)
		out, _ := r.Redact(b)
		if string(b) != in {
			t.Errorf("Redact modified its input: %q", b)
		}
		if len(out) > 0 && len(b) > 0 && &out[0] == &b[0] {
			t.Errorf("Redact(%q) returned its input, want a copy", in)
		}
	}
	if out, changed := r.Redact(nil); out != nil || changed {
		t.Errorf("Redact(nil) = %q, %v", out, changed)
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	in := "key " + awsKeyID
	want := "key [REDACTED:aws-access-key]"
	if got := r.String(in); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if out, changed := r.Redact([]byte(in)); string(out) != want || !changed {
		t.Errorf("Redact = %q, %v", out, changed)
	}
	if fs := r.Find([]byte(in)); len(fs) != 1 || fs[0].Kind != "aws-access-key" {
		t.Errorf("Find = %v", fs)
	}
	if got := string(r.JSON([]byte(`{"k":"` + awsKeyID + `"}`))); got != `{"k":"[REDACTED:aws-access-key]"}` {
		t.Errorf("JSON = %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Add on a nil *Redactor did not panic; the secret would be forgotten")
		}
	}()
	r.Add(plainSecret)
}

// TestConcurrent runs Add alongside readers; run it with -race.
func TestConcurrent(t *testing.T) {
	r := New()
	secrets := []string{"first-secret", "second-secret", "third-secret", "fourth-secret"}
	var wg sync.WaitGroup
	for _, s := range secrets {
		wg.Go(func() { r.Add(s) })
	}
	for range 4 {
		wg.Go(func() {
			for range 50 {
				r.String("first-secret second-secret " + awsKeyID)
			}
		})
	}
	wg.Wait()
	got := r.String(strings.Join(secrets, " "))
	if want := strings.TrimSuffix(strings.Repeat("[REDACTED:known-secret] ", 4), " "); got != want {
		t.Errorf("after concurrent Adds: %q, want %q", got, want)
	}
}
