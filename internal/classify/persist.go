package classify

import (
	"path"
	"strings"
)

// Persistence is configuration that changes what runs later: a cron
// table, a registry or git URL redirection, a git remote, package
// scripts, user services and autostart entries, directories ahead of
// /usr/bin in PATH, package managers' configuration, shell startup
// files, git hooks and the files of installed packages. The command
// itself may be harmless; the next `npm install` or `git push` is not.

// persistDirs are directories whose files run later or decide what does.
var persistDirs = []string{Home + "/.config/systemd/", Home + "/.config/autostart/", Home + "/.local/bin/",
	Home + "/.config/pip/", Home + "/.pip/", Home + "/.config/git/", Home + "/.cargo/config", Home + "/.config/go/",
	Home + "/.config/yarn/", Home + "/.bun/", "/etc/cron", "/var/spool/cron", "/etc/systemd/", "/etc/xdg/autostart/",
	Home + "/.config/containers/", Home + "/.docker/cli-plugins/"}

// persistNames are files, anywhere, that configure what later commands
// fetch or run.
var persistNames = setOf(`.npmrc .yarnrc .yarnrc.yml .pnpmrc pip.conf pip.ini .pydistutils.cfg
.gitconfig .curlrc .wgetrc .bunfig.toml bunfig.toml .condarc uv.toml`)

// persistParts are path elements under which installed code lives: what
// is written there runs when the package is imported or its tool run.
var persistParts = []string{"/node_modules/", "/.venv/", "/venv/", "/site-packages/", "/dist-packages/", "/.husky/"}

// persistPath reports whether writing the absolute path p changes what
// runs later.
func persistPath(p string) bool {
	if startupFile(p) || gitControlPath(p) {
		return true
	}
	for _, d := range persistDirs {
		if strings.HasPrefix(p, d) || p+"/" == d {
			return true
		}
	}
	if persistNames[path.Base(p)] {
		return true
	}
	if strings.Contains(p+"/", "/node_modules/.cache/") {
		return false // a cache of build tools, regenerated
	}
	for _, part := range persistParts {
		if strings.Contains(p+"/", part) && !strings.HasSuffix(p+"/", part) {
			return true
		}
	}
	return false
}

// persist marks c as changing what runs later.
func (c *call) persist(why string) { c.class(Persist, why) }

// persistKey reports whether git config key redirects where git fetches
// or pushes, or what it runs (besides the command keys gitKey knows).
func persistKey(key string) bool {
	k := strings.ToLower(key)
	sec, _, _ := strings.Cut(k, ".")
	last := k[strings.LastIndexByte(k, '.')+1:]
	switch {
	case sec == "url" && (last == "insteadof" || last == "pushinsteadof"):
		return true
	case sec == "remote" && (last == "url" || last == "pushurl" || last == "proxy"):
		return true
	case sec == "http" && (last == "proxy" || last == "sslverify" || last == "sslcainfo"):
		return true
	}
	return gitKey(key) != gitInert
}
