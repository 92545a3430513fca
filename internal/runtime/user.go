package runtime

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// User is what a sandbox's command user is called: its passwd and group
// name and its home directory. Its uid and gid stay the backend's
// unprivileged ones; only the names change (E2B's sandboxes call theirs
// "user", home /home/user). The zero User is DefaultUser.
type User struct {
	Name string `json:"name,omitempty"`
	// Home is /home/<one component>; "": /home/<Name>.
	Home string `json:"home,omitempty"`
}

// DefaultUser is the command user of a Spec that names none, as the
// templates' /etc/passwd has it.
var DefaultUser = User{Name: "sandbox", Home: "/home/sandbox"}

// IsDefault says whether u (resolved) is DefaultUser: the template's own
// passwd and group then say it as they are.
func (u User) IsDefault() bool { return u == DefaultUser }

// Resolve checks u and fills in what it leaves to the default. A name
// must be a portable user name (a-z, 0-9, '_', '-', starting with a
// letter or '_', at most 32) and never root; a home must be a clean
// /home/<name-like component>, where the backends make the writable,
// user-owned home and which the write scope treats as the home.
func (u User) Resolve() (User, error) {
	if u == (User{}) {
		return DefaultUser, nil
	}
	if !validUserName(u.Name) {
		return User{}, fmt.Errorf("sandbox user name %q: use 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter or '_': %w", u.Name, errdefs.ErrInvalid)
	}
	if u.Name == "root" {
		return User{}, fmt.Errorf("sandbox user name %q: the command user is never root: %w", u.Name, errdefs.ErrInvalid)
	}
	if u.Home == "" {
		u.Home = "/home/" + u.Name
	}
	dir, base := path.Split(u.Home)
	if dir != "/home/" || !validUserName(base) || path.Clean(u.Home) != u.Home {
		return User{}, fmt.Errorf("sandbox user home %q: must be /home/NAME (NAME as a user name): %w", u.Home, errdefs.ErrInvalid)
	}
	return u, nil
}

func validUserName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c == '_' || i > 0 && (c >= '0' && c <= '9' || c == '-')
		if !ok {
			return false
		}
	}
	return true
}

// Env is the command user's part of a sandbox's base environment.
func (u User) Env() []string {
	return []string{"HOME=" + u.Home, "USER=" + u.Name, "LOGNAME=" + u.Name}
}

// PasswdWith returns the passwd file passwd with the command user (uid,
// gid) called u: every line of that uid or of u's name is replaced by
// one line (the uid's shell kept, else /bin/sh); the rest is unchanged.
func PasswdWith(passwd []byte, uid, gid int, u User) []byte {
	shell := "/bin/sh"
	var out bytes.Buffer
	for _, line := range lines(passwd) {
		f := strings.Split(line, ":")
		if len(f) >= 7 && (f[2] == strconv.Itoa(uid) || f[0] == u.Name) {
			if f[2] == strconv.Itoa(uid) && f[6] != "" {
				shell = f[6]
			}
			continue
		}
		out.WriteString(line + "\n")
	}
	fmt.Fprintf(&out, "%s:x:%d:%d:%s:%s:%s\n", u.Name, uid, gid, u.Name, u.Home, shell)
	return out.Bytes()
}

// GroupWith returns the group file group with the group gid called name:
// every line of that gid or that name is replaced by "name:x:gid:".
func GroupWith(group []byte, gid int, name string) []byte {
	var out bytes.Buffer
	for _, line := range lines(group) {
		f := strings.Split(line, ":")
		if len(f) >= 3 && (f[2] == strconv.Itoa(gid) || f[0] == name) {
			continue
		}
		out.WriteString(line + "\n")
	}
	fmt.Fprintf(&out, "%s:x:%d:\n", name, gid)
	return out.Bytes()
}

func lines(b []byte) []string {
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
