package conformance

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// e2bUser is a command user called otherwise than the default, as the
// E2B door asks for.
var e2bUser = runtime.User{Name: "user", Home: "/home/user"}

// testUser: a Spec's User renames the command user, and only renames
// it: whoami, id, passwd and group say the name, HOME, USER and LOGNAME
// are set, the home is the user's own and writable (by commands and the
// file operations), the uid is the unprivileged one of every sandbox and
// passwd stays beyond the user's reach (so does the default home, which
// a template may still have). The default user is unchanged.
func testUser(t *testing.T, f Factory) {
	sb := create(t, f, func(s *runtime.Spec) { s.User = e2bUser })
	if got := sb.Info().User; got != e2bUser {
		t.Errorf("Info().User = %+v, want %+v", got, e2bUser)
	}
	// (find -printf, not stat or ls: gVisor refuses the host coreutils'
	// statx with EINVAL)
	r := shell(t, sb, `whoami; id -un; id -gn; id -u; echo "$HOME $USER $LOGNAME"; cd && pwd
touch ~/made && find ~ ~/made -maxdepth 0 -printf '%M:%u:%g\n'
touch /home/sandbox/x 2>/dev/null && echo wrote-sandbox-home || echo no-sandbox-home
grep -c '^user:' /etc/passwd; grep '^user:' /etc/passwd | cut -d: -f3,4,6; grep '^user:' /etc/group | cut -d: -f3
grep -c ':1000:' /etc/passwd`)
	want := "user\nuser\nuser\n1000\n/home/user user user\n/home/user\ndrwx------:user:user\n-rw-r--r--:user:user\nno-sandbox-home\n1\n1000:1000:/home/user\n1000\n1\n"
	if r.out != want {
		t.Errorf("the renamed user: got\n%s(stderr %q), want\n%s", r.out, r.err, want)
	}
	if r := shell(t, sb, "echo 'root2::0:0::/root:/bin/sh' >> /etc/passwd && echo wrote; id -u root2 2>/dev/null || echo no-root2"); r.out != "no-root2\n" {
		t.Errorf("/etc/passwd written by the command user: %q", r.out)
	}
	fs := files(t, sb)
	ctx := context.Background()
	if _, err := fs.WriteFile(ctx, "/etc/passwd", strings.NewReader("root2::0:0::/root:/bin/sh\n"), 0o644, false); err == nil {
		t.Error("the file operations wrote /etc/passwd")
	}
	if _, err := fs.WriteFile(ctx, "/home/user/via-files", strings.NewReader("hi"), 0o644, false); err != nil {
		t.Fatalf("write into the home: %v", err)
	}
	if r := shell(t, sb, "cat ~/via-files; find ~/via-files -printf ' %u\\n'"); r.out != "hi user\n" {
		t.Errorf("a file the file operations wrote in the home: %q", r.out)
	}
	if ws, ok := sb.(runtime.WriteScoper); ok {
		if _, err := ws.RestrictWrites(ctx, []string{"/home/user/proj"}); err != nil && !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("a write scope in the renamed home: %v", err)
		}
	}
	def := create(t, f, nil)
	if got := def.Info().User; got != runtime.DefaultUser {
		t.Errorf("Info().User of a default sandbox = %+v, want %+v", got, runtime.DefaultUser)
	}
	if r := shell(t, def, `whoami; echo "$HOME $USER"; grep -c '^user:' /etc/passwd`); r.out != "sandbox\n/home/sandbox sandbox\n0\n" {
		t.Errorf("the default user: %q", r.out)
	}
}

// testUserHome: on every backend, a Spec's User names the home (HOME,
// where the file operations write) and USER and LOGNAME.
func testUserHome(t *testing.T, f Factory) {
	sb := create(t, f, func(s *runtime.Spec) { s.User = e2bUser })
	r := shell(t, sb, `echo "$USER $LOGNAME"; echo "$HOME"; cd && echo in-home > here.txt`)
	if !strings.HasPrefix(r.out, "user user\n") || !strings.HasSuffix(r.out, "/home/user\n") || r.st.Code != 0 {
		t.Errorf("got %q (stderr %q), want USER and LOGNAME user and a HOME of /home/user", r.out, r.err)
	}
	fs := files(t, sb)
	var b bytes.Buffer
	if _, err := fs.ReadFile(context.Background(), "/home/user/here.txt", &b, 0); err != nil || b.String() != "in-home\n" {
		t.Errorf("a file written in HOME, read as /home/user/here.txt: %q %v", b.String(), err)
	}
	if got := sb.Info().User; got != e2bUser {
		t.Errorf("Info().User = %+v, want %+v", got, e2bUser)
	}
}

// testUserRefused: a User that is not a plain unprivileged name with a
// home of /home/NAME is ErrInvalid, whatever the backend: root, a name
// that would add passwd fields or lines, a home elsewhere or climbing out.
func testUserRefused(t *testing.T, f Factory) {
	for _, u := range []runtime.User{
		{Name: "root"}, {Name: "root", Home: "/home/user"}, {Name: "user", Home: "/root"}, {Name: "user", Home: "/home/../etc"},
		{Name: "user", Home: "/home/user/x"}, {Name: "user", Home: "/home/"}, {Name: "user", Home: "/home/user:/bin/sh"},
		{Name: "a:b"}, {Name: "user:x:0:0::/root:/bin/sh"}, {Name: "user\nroot2::0:0::/:/bin/sh"}, {Name: "User"},
		{Name: "-user"}, {Name: strings.Repeat("u", 33)}, {Home: "/home/user"},
	} {
		be, spec := f(t)
		spec.User = u
		sb, err := be.Create(context.Background(), spec)
		if err == nil {
			_ = sb.Destroy(context.Background())
			t.Errorf("user %+v: created", u)
			continue
		}
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("user %+v: %v, want an invalid error", u, err)
		}
	}
}
