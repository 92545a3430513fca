package netpolicy

import (
	"math/rand"
	"net/textproto"
	"strings"
	"testing"
)

// canonicalHeader must spell every name as net/http does: the egress
// proxy matches the headers a brokered secret may go in, and the ones it
// may never go in, by that spelling. A name spelled differently here
// would let a secret into a Cookie header, or keep it out of its own.
func TestCanonicalHeaderIsNetHTTPs(t *testing.T) {
	check := func(name string) {
		if got, want := canonicalHeader(name), textproto.CanonicalMIMEHeaderKey(name); got != want {
			t.Errorf("%q: %q, net/http spells it %q", name, got, want)
		}
	}
	for _, name := range []string{"", "cookie", "COOKIE", "cOoKiE", "set-cookie", "SET-COOKIE", "x-api-key",
		"proxy-authorization", "content--length", "-host", "host-", "te", "Cookie ", " cookie", "cook\tie",
		"cookie\x00", "cook:ie", "cookié", "ｃookie", "x_api_key", "x.api.key", "www-authenticate", "a-b-c-d"} {
		check(name)
	}
	for c := 0; c < 256; c++ {
		check(string([]byte{byte(c)}))
		check("x-" + string([]byte{byte(c)}) + "y")
		check(string([]byte{byte(c)}) + "-cookie")
	}
	r := rand.New(rand.NewSource(7))
	alphabet := "aZz-_.: \t\x7f\x80\xffcCoOkKiIeE0"
	for i := 0; i < 50000; i++ {
		var b strings.Builder
		for n := r.Intn(10); n > 0; n-- {
			b.WriteByte(alphabet[r.Intn(len(alphabet))])
		}
		check(b.String())
	}
}

// Attack: a secret's headers spelled to slip past the refusal of the
// headers a secret may never go in.
func TestASecretCannotGoInCookieHoweverSpelled(t *testing.T) {
	for _, h := range []string{"cookie", "COOKIE", "cOOkie", "set-COOKIE", "HOST", "transfer-ENCODING", "proxy-AUTHORIZATION"} {
		if err := checkSecretHeader(h); err == nil {
			t.Errorf("a secret may go in %q", h)
		}
	}
}
