package runtime

import (
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

var e2b = User{Name: "user", Home: "/home/user"}

func TestResolveUser(t *testing.T) {
	for _, c := range []struct {
		in, want User
	}{
		{User{}, DefaultUser},
		{User{Name: "user"}, e2b},
		{e2b, e2b},
		{User{Name: "dev_1", Home: "/home/work"}, User{Name: "dev_1", Home: "/home/work"}},
	} {
		got, err := c.in.Resolve()
		if err != nil || got != c.want {
			t.Errorf("Resolve(%+v) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, u := range []User{{Name: "root"}, {Home: "/home/x"}, {Name: "a b"}, {Name: "user", Home: "/home/user/"}, {Name: "user", Home: "home/user"},
		{Name: "user", Home: "/home/.."}, {Name: "user", Home: "/tmp/user"}, {Name: "9lives"}} {
		if _, err := u.Resolve(); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Resolve(%+v): %v, want invalid", u, err)
		}
	}
}

func TestPasswdWith(t *testing.T) {
	in := "root:x:0:0:root:/root:/bin/bash\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/bash\n" +
		"user:x:1001:1001::/home/user:/bin/sh\n# a comment\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"
	got := string(PasswdWith([]byte(in), 1000, 1000, e2b))
	want := "root:x:0:0:root:/root:/bin/bash\n# a comment\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" +
		"user:x:1000:1000:user:/home/user:/bin/bash\n"
	if got != want {
		t.Errorf("passwd:\n%s\nwant\n%s", got, want)
	}
	if got := string(PasswdWith(nil, 1000, 1000, e2b)); got != "user:x:1000:1000:user:/home/user:/bin/sh\n" {
		t.Errorf("from no passwd: %q", got)
	}
	g := string(GroupWith([]byte("root:x:0:\nsandbox:x:1000:\nuser:x:1001:a,b\nnogroup:x:65534:\n"), 1000, "user"))
	if g != "root:x:0:\nnogroup:x:65534:\nuser:x:1000:\n" {
		t.Errorf("group: %q", g)
	}
}
