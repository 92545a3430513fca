package engine

import (
	"path"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
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
var persistNames = SetOf(`.npmrc .yarnrc .yarnrc.yml .pnpmrc pip.conf pip.ini .pydistutils.cfg
.gitconfig .curlrc .wgetrc .bunfig.toml bunfig.toml .condarc uv.toml`)

// persistParts are path elements under which installed code lives: what
// is written there runs when the package is imported or its tool run.
var persistParts = []string{"/node_modules/", "/.venv/", "/venv/", "/site-packages/", "/dist-packages/", "/.husky/"}

// persistPath reports whether writing the absolute path p changes what
// runs later.
func persistPath(p, home string) bool {
	p = asDefaultHome(p, home)
	if startupFile(p, "") || gitControlPath(p) {
		return true
	}
	for _, d := range persistDirs {
		if strings.HasPrefix(p, d) || p+"/" == d {
			return true
		}
	}
	if persistNames.Has(path.Base(p)) {
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

// Persist marks c as changing what runs later.
func (c *Call) Persist(why string) { c.Class(Persist, why) }

// Files whose content a later command runs: make's recipes, package
// scripts, CI workflows, container builds, hook and shell scripts. What a
// command line writes into one (echo and printf arguments, a heredoc, a
// sed or perl replacement) is classified with the same analyser, as the
// commands it will be.

// runsLater reports whether the content of the file at p is run later,
// and how to find the commands in it.
func runsLater(p string) (kind string, ok bool) {
	base := path.Base(p)
	switch {
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile" || strings.HasSuffix(base, ".mk"):
		return "make", true
	case base == "package.json" || base == "composer.json" || base == "deno.json":
		return "json", true
	case strings.Contains(p, "/.github/workflows/") || base == ".gitlab-ci.yml" || base == ".pre-commit-config.yaml" ||
		base == "Taskfile.yml" || base == "azure-pipelines.yml" || strings.Contains(p, "/.circleci/") || base == ".travis.yml":
		return "yaml", true
	case strings.HasPrefix(base, "Dockerfile") || strings.HasPrefix(base, "Containerfile") || strings.HasSuffix(base, ".dockerfile"):
		return "docker", true
	case base == "justfile" || base == ".envrc" || strings.Contains(p, "/.husky/") || strings.Contains(p, "/.git/hooks/"):
		// hooks and recipes; a script of the project (x.sh) is not among
		// them: it runs when something the approver sees runs it
		return "shell", true
	}
	return "", false
}

var (
	jsonValueRE = lazyre.New(`"[^"\n]*"\s*:\s*"((?:[^"\\\n]|\\.)*)"`)
	yamlRunRE   = lazyre.New(`^\s*(?:-\s*)?(?:run|script|command|entry)\s*:\s*[|>]?\s*(.*)$`)
	dockerRunRE = lazyre.New(`^\s*(?:RUN|CMD|ENTRYPOINT)\s+(.*)$`)
)

// laterLines are the command lines in content written to a file of kind.
func laterLines(kind, content string) []string {
	var out []string
	for _, l := range strings.Split(content, "\n") {
		switch kind {
		case "json":
			for _, m := range jsonValueRE().FindAllStringSubmatch(l, 16) {
				out = append(out, strings.ReplaceAll(m[1], `\"`, `"`))
			}
		case "make":
			if strings.HasPrefix(l, "\t") {
				out = append(out, strings.TrimLeft(strings.TrimSpace(l), "@-+"))
			}
		case "yaml":
			if m := yamlRunRE().FindStringSubmatch(l); m != nil {
				out = append(out, m[1])
			} else if strings.HasPrefix(l, "        ") { // a block under run: |
				out = append(out, strings.TrimSpace(l))
			}
		case "docker":
			if m := dockerRunRE().FindStringSubmatch(l); m != nil {
				out = append(out, m[1])
			}
		default:
			out = append(out, l)
		}
	}
	return out
}

// maxLaterLines bounds the command lines read in written content (the
// worst case of a 64 KiB line stays in milliseconds).
const maxLaterLines = 256

// laterClasses are the classes of what will run that a human should see
// (an unknown program there is not: scripts are full of them; nor is a
// dependency install, which recipes and Dockerfiles are made of and the
// egress policy decides when it runs).
var laterClasses = []Class{Persist, Network, Destructive, Secret}

// contentRunsLater classifies what command i writes into files that run
// later.
func (a *analyzer) contentRunsLater(i int) {
	c := &a.out.Commands[i]
	for _, w := range c.Writes {
		kind, ok := runsLater(w)
		if !ok {
			continue
		}
		text := a.writtenText(i)
		if text == "" {
			continue
		}
		lines := laterLines(kind, text)
		if len(lines) > maxLaterLines {
			c.Classes = AddClass(AddClass(c.Classes, Unknown), Persist)
			c.Why = JoinWhy(c.Why, "writes "+w+", whose content runs later and is too long to analyse")
			continue
		}
		for _, l := range lines {
			sub := &analyzer{out: &Analysis{home: a.home}, cwd: a.cwd, cat: a.cat, home: a.home}
			if l = strings.TrimSpace(l); l == "" || sub.script(l, nil, 1) != nil {
				continue
			}
			for _, sc := range sub.out.Commands {
				for _, cl := range sc.Classes {
					if slices.Contains(laterClasses, cl) {
						c.Classes = AddClass(AddClass(c.Classes, cl), Persist)
						c.Why = JoinWhy(c.Why, "writes "+w+", whose content runs later: "+l+" ("+cl.Describe()+")")
						c.Hosts = append(c.Hosts, sc.Hosts...)
						c.Secrets = append(c.Secrets, sc.Secrets...)
					}
				}
			}
		}
	}
}

// writtenText is the text command i writes, as far as the line tells.
func (a *analyzer) writtenText(i int) string {
	c := &a.out.Commands[i]
	var parts []string
	for _, b := range a.bodies {
		if b.cmd == i {
			parts = append(parts, b.text)
		}
	}
	if len(c.Argv) > 1 {
		switch path.Base(c.Argv[0]) {
		case "echo", "printf":
			parts = append(parts, strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(strings.Join(c.Argv[1:], " ")))
		case "sed", "perl":
			parts = append(parts, strings.Join(c.Argv[1:], " "))
		}
	}
	return strings.Join(parts, "\n")
}

// gitControlPath reports whether writing p changes what later git
// commands run: a repository's hooks and configuration (a worktree's and
// a submodule's too), the user's git configuration, a .git pointer file
// or directory. Such a write is unknown: a git commit after it runs
// whatever it names.
func gitControlPath(p string) bool {
	p = "/" + strings.TrimSuffix(p, "/")
	switch path.Base(p) {
	case ".git", ".gitconfig":
		return true
	}
	if strings.HasSuffix(p, "/.config/git") || strings.HasSuffix(p, "/.config/git/config") {
		return true
	}
	i := strings.LastIndex(p, "/.git/")
	if i < 0 {
		return false
	}
	parts := strings.Split(p[i+len("/.git/"):], "/")
	switch parts[len(parts)-1] {
	case "config", "config.worktree", "commondir", "gitdir":
		return true
	}
	return slices.Contains(parts, "hooks")
}
