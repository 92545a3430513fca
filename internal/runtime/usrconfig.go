package runtime

import (
	"os"
	"path"
	"path/filepath"
	"strings"
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
	"lib/node_modules/npm/npmrc",        // npm's builtin config, read by every npm run
	"local/lib/node_modules/npm/npmrc",  //
	"share/nodejs/npm/npmrc",            // Debian's npm builtin config
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
