package runtime

import (
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
)

// UsrConfigPaths are the places under a host /usr (relative to it) where
// tools keep host configuration, which may hold credentials: a backend
// that binds the host's /usr hides each one that exists when the sandbox
// starts (a directory under an empty read-only tmpfs, a file behind an
// empty read-only file), so that the sandbox sees the host's programs and
// libraries but not how the host configured them. A trailing slash marks
// a directory place; what is masked is whatever exists there.
//
// Why a list and not only the program and library parts of /usr: the
// tools keep these inside their own trees under lib and share, next to
// their code, so no split of /usr into directories separates them.
var UsrConfigPaths = []string{
	"etc/",                              // prefix=/usr builds: Debian's npm (global npmrc), yarn, git...
	"local/etc/",                        // prefix=/usr/local builds, npm's default global config
	"pip.conf",                          // pip's site config (sys.prefix/pip.conf) for /usr's python
	"local/pip.conf",                    // ... and /usr/local's
	"share/maven/conf/",                 // Maven's global settings.xml (servers' passwords)
	"local/share/maven/conf/",           //
	"lib/google-cloud-sdk/properties",   // the Cloud SDK's installation properties
	"share/google-cloud-sdk/properties", //
	"local/google-cloud-sdk/properties", //
	"share/gradle/gradle.properties",    // Gradle's installation properties and init scripts
	"share/gradle/init.d/",              //
	"lib/R/etc/",                        // R's Renviron.site and Rprofile.site (tokens such as GITHUB_PAT)
	"lib/ssl/private/",                  // OpenSSL's private keys, should it be a directory of its own
	"local/lib/ssl/private/",            //
}

// UsrKeep returns what the sandbox still sees of the host file name
// (its base name) from a hidden directory place, or nil for nothing: of
// npm's configuration (npmrc) the settings that say which registry to
// use and how to reach it, so that npm inside uses the host's registry,
// without any credential (tokens, passwords, client keys, a URL's user
// information, every per-registry "//host/:" setting).
func UsrKeep(name string, data []byte) []byte {
	if name != "npmrc" && name != ".npmrc" {
		return nil
	}
	var out []byte
	// Lines as npm's ini parser splits them: at any CR or LF (a lone
	// CR too, which would otherwise hide a line inside a kept value).
	lines := strings.FieldsFunc(string(data), func(r rune) bool { return r == '\r' || r == '\n' })
	for _, line := range lines {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || !npmKeep(k) || strings.Contains(v, "@") {
			continue // a comment, a credential, or user information in a URL
		}
		if strings.ContainsAny(v, "\"'\\") || strings.ContainsFunc(v, unicode.IsControl) {
			continue // quoted (ini JSON-decodes it: \u0040 is an "@"), escaped
		}
		out = append(out, k+"="+v+"\n"...)
	}
	if out == nil {
		out = []byte{}
	}
	return out
}

// UsrKept reads the regular files of dir (a hidden directory place) and
// returns, by name, what UsrKeep keeps of each.
func UsrKept(dir string) map[string][]byte {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	kept := map[string][]byte{}
	for _, e := range ents {
		if !e.Type().IsRegular() || UsrKeep(e.Name(), nil) == nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, e.Name()), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, 64<<10))
		f.Close()
		if err == nil {
			kept[e.Name()] = UsrKeep(e.Name(), data)
		}
	}
	return kept
}

// npmKeep: npm settings that hold no credential.
func npmKeep(k string) bool {
	if strings.HasPrefix(k, "@") && strings.HasSuffix(k, ":registry") && !strings.Contains(k, "/") {
		return true // @scope:registry
	}
	switch k {
	case "registry", "strict-ssl", "cafile", "fetch-retries", "fetch-retry-mintimeout",
		"fetch-retry-maxtimeout", "fetch-timeout", "maxsockets", "prefer-offline", "prefer-online",
		"audit", "fund", "update-notifier", "loglevel", "progress", "engine-strict", "save-exact":
		return true
	}
	return false
}

// UsrMask is one existing place of UsrConfigPaths under a bound host /usr.
type UsrMask struct {
	// Rel is the place resolved inside the bound tree: relative to it,
	// free of symlinks.
	Rel string
	// Dir: a directory (else a regular file).
	Dir bool
}

// UsrMasks returns the places of UsrConfigPaths that exist in usr (the
// host directory bound at /usr), resolved the way the sandbox would
// resolve /usr/<place>. A place whose symlinks lead out of /usr is left
// out: inside the sandbox it names the sandbox's own tree (the
// template's /etc, say), not the host's.
func UsrMasks(usr string) []UsrMask {
	var out []UsrMask
	seen := map[string]bool{}
	for _, p := range UsrConfigPaths {
		rel, ok := resolveUnderUsr(usr, strings.TrimSuffix(p, "/"))
		if !ok || seen[rel] {
			continue
		}
		st, err := os.Lstat(filepath.Join(usr, rel))
		if err != nil || !(st.IsDir() || st.Mode().IsRegular()) {
			continue
		}
		seen[rel] = true
		out = append(out, UsrMask{Rel: rel, Dir: st.IsDir()})
	}
	return out
}

// resolveUnderUsr resolves rel inside usr as the sandbox sees it (usr
// mounted at /usr): absolute link targets under /usr continue inside usr,
// any other leads out (false), as does a missing component.
func resolveUnderUsr(usr, rel string) (string, bool) {
	todo := strings.Split(rel, "/")
	var cur []string
	for links := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", false // up out of /usr
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := append(cur[:len(cur):len(cur)], c)
		p := filepath.Join(usr, filepath.Join(next...))
		st, err := os.Lstat(p)
		if err != nil {
			return "", false
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 {
			return "", false
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", false
		}
		if path.IsAbs(target) {
			t := path.Clean(target)
			if t != "/usr" && !strings.HasPrefix(t, "/usr/") {
				return "", false
			}
			cur, target = cur[:0], strings.TrimPrefix(strings.TrimPrefix(t, "/usr"), "/")
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(cur) == 0 {
		return "", false // /usr itself is never masked
	}
	return strings.Join(cur, "/"), true
}
