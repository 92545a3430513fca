package redact

import (
	"fmt"
	"strings"
	"testing"
)

// goTestOutput returns about n bytes of ordinary `go test -v` output: test names, file:line
// messages, hashes, URLs, durations. It holds no secret.
func goTestOutput(n int) []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "=== RUN   TestTokenRefresh/case_%d\n", i)
		fmt.Fprintf(&sb, "    token_test.go:%d: got status 200, want 200 (request id 123e4567-e89b-12d3-a456-%012d)\n", 40+i%90, i)
		fmt.Fprintf(&sb, "    fetch https://goproxy.example.test/github.com/airlock-dev/airlock/@v/v0.%d.0.info\n", i%50)
		fmt.Fprintf(&sb, "--- PASS: TestTokenRefresh/case_%d (0.%02ds)\n", i, i%100)
		if i%16 == 0 {
			fmt.Fprintf(&sb, "commit 9fceb02d0ae598e95dc970b74767f19372d6%04x password: <none>\n", i%65536)
			fmt.Fprintf(&sb, "ok  \tgithub.com/airlock-dev/airlock/internal/secret\t%d.%03ds\tcoverage: 81.2%% of statements\n", i%3, i%1000)
		}
	}
	return []byte(sb.String()[:n])
}

func BenchmarkRedact1MiB(b *testing.B) {
	in := goTestOutput(1 << 20)
	for _, bc := range []struct {
		name string
		r    *Redactor
	}{
		{"shapes", New()},
		{"known20", New(manySecrets(20)...)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if _, changed := bc.r.Redact(in); changed {
				b.Fatal("ordinary text was redacted")
			}
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				bc.r.Redact(in)
			}
		})
	}
}

// BenchmarkRedactSecrets1MiB measures text where a secret turns up every ~4 KiB, which
// costs a second pass.
func BenchmarkRedactSecrets1MiB(b *testing.B) {
	secrets := manySecrets(20)
	r := New(secrets...)
	out := goTestOutput(1 << 20)
	for i := 0; i+4096 < len(out); i += 4096 {
		copy(out[i:], " "+secrets[i%20]+" ")
	}
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		r.Redact(out)
	}
}

func manySecrets(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("s3cr3t-%02d-%x", i, i*7919+104729)
	}
	return s
}

// BenchmarkRedactHostile1MiB measures input built to make a detector slow: each case is one
// pattern repeated over 1 MiB. None may be quadratic.
func BenchmarkRedactHostile1MiB(b *testing.B) {
	r := New(manySecrets(20)...)
	for _, p := range []string{
		"token=",
		"secret_access_key=",
		"password=os.Getenv(",
		"eyJaaaaaaaaaaaaa.",
		"-----BEGIN PRIVATE KEY-----.",
		"ghp_",
		"Bearer aaaaaaaaaaaaaaaaaaaaaaaa ",
		"https://u:p@h ",
		"[REDACTED:known-secret]AKIAIOSFODNN7EXAMPLE",
	} {
		in := []byte(strings.Repeat(p, (1<<20)/len(p)))
		b.Run(strings.NewReplacer("/", "_", " ", "_").Replace(p), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				r.Redact(in)
			}
		})
	}
}
