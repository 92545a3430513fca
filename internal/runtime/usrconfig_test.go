package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Masks follow the links the sandbox would follow inside /usr, and leave
// out those that lead out of it (into the sandbox's own tree).
func TestUsrMasksResolveAsTheSandbox(t *testing.T) {
	usr := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(usr, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(usr, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("share/maven")
	ln("/etc/maven", "share/maven/conf") // Debian's: the sandbox's /etc
	mk("lib/real-etc")
	ln("lib/real-etc", "etc")                                        // relative, inside
	mk("lib/google-cloud-sdk")                                       //
	ln("/usr/lib/gcs.properties", "lib/google-cloud-sdk/properties") // absolute, inside
	if err := os.WriteFile(filepath.Join(usr, "lib/gcs.properties"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk("local")
	ln("../../outside", "local/etc") // up out of /usr
	got := UsrMasks(usr)
	want := []UsrMask{{Rel: "lib/real-etc", Dir: true}, {Rel: "lib/gcs.properties"}}
	if !slices.Equal(got, want) {
		t.Errorf("UsrMasks = %+v, want %+v", got, want)
	}
}

// Of an npmrc the sandbox sees which registry to use, never a credential.
func TestUsrKeepDropsNpmCredentials(t *testing.T) {
	in := "registry=https://registry.example/\n" +
		"//registry.example/:_authToken=TOKEN\n" +
		"_auth=TOKEN\n_password = TOKEN\nusername=me\nemail=me@example.org\n" +
		"@corp:registry = https://npm.corp.example/\n" +
		"@priv:registry=https://me:TOKEN@npm.priv.example/\n" +
		"keyfile=/root/key.pem\ncertfile=/root/cert.pem\n" +
		"; registry=https://commented.example/\n# TOKEN\n" +
		"strict-ssl=true\n"
	want := "registry=https://registry.example/\n@corp:registry=https://npm.corp.example/\nstrict-ssl=true\n"
	if got := string(UsrKeep("npmrc", []byte(in))); got != want {
		t.Errorf("UsrKeep(npmrc) = %q, want %q", got, want)
	}
	if got := UsrKeep("settings.xml", []byte("<password>TOKEN</password>")); got != nil {
		t.Errorf("UsrKeep(settings.xml) = %q, want nothing kept", got)
	}
}

// npm reads an npmrc the way its ini parser does: a lone carriage return
// ends a line too (it splits on /[\r\n]+/), and a quoted value is
// JSON-decoded (so \u0040 is an "@"). Neither may carry a credential
// past the filter inside a kept setting's value.
func TestUsrKeepNpmLineEndingsAndQuotes(t *testing.T) {
	for _, in := range []string{
		"registry=https://registry.example/\r//registry.example/:_authToken=TOKEN\r",
		"registry=https://registry.example/\r\n//registry.example/:_authToken=TOKEN\r\n",
		"strict-ssl=true\r_auth=TOKEN\rregistry=https://registry.example/\r",
		`registry="https://me:TOKEN\u0040registry.example/"` + "\n",
		`@priv:registry='https://me:TOKEN\u0040npm.priv.example/'` + "\n",
	} {
		got := string(UsrKeep("npmrc", []byte(in)))
		if strings.Contains(got, "TOKEN") {
			t.Errorf("UsrKeep(%q) = %q: the token is kept", in, got)
		}
	}
	if got, want := string(UsrKeep("npmrc", []byte("registry=https://registry.example/\rstrict-ssl=true\r"))), "registry=https://registry.example/\nstrict-ssl=true\n"; got != want {
		t.Errorf("UsrKeep with CR line ends = %q, want %q", got, want)
	}
}
