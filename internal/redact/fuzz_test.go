package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
)

func FuzzRedact(f *testing.F) {
	secrets := []string{"fuzz-secret-Value1", "pa55w0rd!x"}
	r := New(secrets...)
	for _, s := range []string{
		"",
		"plain text",
		"fuzz-secret-Value1",
		"x" + base64.StdEncoding.EncodeToString([]byte("u:pa55w0rd!x")) + "y",
		"token=abcdefghijfuzz-secret-Value1",
		"sekrit-1" + awsKeyID,
		"fuzz-secret-Value1AKIAIOSFODNN7EXAMPLE",
		"Authorization: Bearer " + jwtToken,
		rsaKey + "\n" + rsaKey[:60],
		"https://u:pa55w0rd!x@host/ postgres://a:b@c",
		"[REDACTED:jwt]pa55w0rd!x[REDACTED:known-secret",
		"password: [REDACTED:known-secret]abc token=x",
		`{"password":"hunter2hunter2","k":[1,"` + ghToken + `"]}`,
		"-----BEGIN PRIVATE KEY-----\n-----BEGIN PRIVATE KEY-----.-----END PRIVATE KEY-----",
		"f u z z - s e c r e t - V a l u e 1",
		"p\x00a\x005\x005\x00w\x000\x00r\x00d\x00!\x00x\x00",
		"0000000   f   u   z   z   -   s   e   c   r   e   t   -   V   a   l   u\n0000020   e   1  \\n\n0000023\n",
		"00000000: 6675 7a7a 2d73 6563 7265 742d 5661 6c75  fuzz-secret-Valu\n00000010: 6531 0a                                  e1.\n",
		"0000000 061560 032465 030167 062162 074041\n0000012\n",
		"1x.ak.ak.ak.ak.ak.ak.a.b.c",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		out, changed := r.Redact(in)
		if !bytes.Equal(in, orig) {
			t.Fatalf("Redact modified its input")
		}
		if changed == bytes.Equal(out, in) && len(in) > 0 {
			t.Fatalf("Redact(%q) reported changed=%v for %q", in, changed, out)
		}
		for _, s := range secrets {
			if bytes.Contains(out, []byte(s)) {
				t.Fatalf("Redact(%q) = %q still holds %q", in, out, s)
			}
		}
		again, changed := r.Redact(out)
		if !bytes.Equal(again, out) || changed {
			t.Fatalf("not idempotent:\n in   %q\n once %q\n twice %q", in, out, again)
		}
		fs := r.Find(in)
		last := 0
		for _, f := range fs {
			if f.Start < last || f.End <= f.Start || f.End > len(in) {
				t.Fatalf("Find(%q) = %v: out of order, overlapping or out of range", in, fs)
			}
			last = f.End
		}
		if doc := r.JSON(in); !json.Valid(doc) {
			t.Fatalf("JSON(%q) = %q, not valid JSON", in, doc)
		}
	})
}
