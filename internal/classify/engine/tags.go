package engine

import (
	"path"
	"strings"
)

// Tags name facts about a command that a policy rule can match besides
// its class (see policy.Rule.Tag): a force push is Network and
// Destructive like a deleted branch, but only one of them rewrites
// shared history. The tags:
const (
	// TagCatastrophic: irreversible at the scale of the workspace, the
	// home directory or the machine: rm -r of ~, /, .git or the whole
	// workspace; dd to a device; mkfs; recursive chmod or chown of the
	// workspace root; a repository deleted through a forge CLI.
	TagCatastrophic = "catastrophic"
	// TagForcePush: a push that overwrites the remote's history (-f,
	// --force-with-lease, +ref, --mirror).
	TagForcePush = "force-push"
	// TagDeleteBranch: a push that deletes a remote ref (--delete, :ref).
	TagDeleteBranch = "delete-branch"
	// TagHistoryRewrite: rewrites the repository's history wholesale
	// (filter-branch, filter-repo).
	TagHistoryRewrite = "history-rewrite"
)

var taggedTools = SetOf("rm find dd wipefs mke2fs chmod chown chgrp gh git")

// catastrophicRoots are the directories whose recursive removal or
// mode change is catastrophic: /home/user is E2B's home, which code
// written for E2B names outright.
var catastrophicRoots = SetOf(`/ /workspace /home /home/sandbox /home/user /root /usr /etc /bin /sbin /lib /lib64
/var /boot /opt /srv /run /sys /proc /dev`)

func (a *analyzer) catastrophicPath(p string) bool {
	p = strings.TrimSuffix(strings.TrimSuffix(p, "/*"), "/.*")
	if p == "" {
		p = "/"
	}
	return catastrophicRoots.Has(p) || p == a.home || path.Base(p) == ".git"
}

// tagCommand adds the tags of one analysed command.
func (a *analyzer) tagCommand(c *Command) {
	if len(c.Argv) == 0 {
		return
	}
	name, args := path.Base(c.Argv[0]), c.Argv[1:]
	if !taggedTools.Has(name) && !strings.HasPrefix(name, "mkfs") {
		return
	}
	flags, pos := argvOpts(args)
	dir := c.Dir
	if dir == "" {
		dir = a.out.Cwd
	}
	cata := ""
	switch {
	case name == "rm" && HasFlag(flags, "-r", "-R", "--recursive"):
		for _, w := range c.Writes {
			if a.catastrophicPath(w) {
				cata = "rm -r of " + w
			}
		}
	case name == "find" && (containsWord(args, "-delete") || containsWord(args, "rm")) && !findFilters(args):
		for _, p := range args {
			if strings.HasPrefix(p, "-") || p == "(" || p == "!" {
				break // the roots end where the expression starts
			}
			if a.catastrophicPath(resolveIn(dir, a.home, p)) {
				cata = "find " + p + " deleting everything under it"
			}
		}
	case name == "dd":
		for _, s := range args {
			if of, ok := strings.CutPrefix(s, "of=/dev/"); ok && !HarmlessSink("/dev/"+of) {
				cata = "dd to the device /dev/" + of
			}
		}
	case strings.HasPrefix(name, "mkfs") || name == "wipefs" || name == "mke2fs":
		cata = name + " formats a filesystem"
	case (name == "chmod" || name == "chown" || name == "chgrp") && HasFlag(flags, "-R", "--recursive"):
		for _, p := range SkipStr(pos, 1) {
			if a.catastrophicPath(resolveIn(dir, a.home, p)) {
				cata = name + " -R of " + resolveIn(dir, a.home, p)
			}
		}
	case name == "gh" && len(pos) >= 2 && pos[0] == "repo" && pos[1] == "delete":
		cata = "gh repo delete deletes a repository"
	case name == "git":
		a.tagGit(c, args)
	}
	if cata != "" {
		c.Tags = AppendUniq(c.Tags, TagCatastrophic)
		c.Classes = AddClass(c.Classes, Destructive)
		c.Why = JoinWhy(c.Why, "catastrophic: "+cata)
	}
}

func (a *analyzer) tagGit(c *Command, args []string) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if args[i] == "-C" || args[i] == "-c" {
			i++
		}
		i++
	}
	if i >= len(args) {
		return
	}
	sub, rest := args[i], args[i+1:]
	flags, pos := argvOpts(rest)
	switch sub {
	case "push":
		if HasFlag(flags, "-f", "--force", "--force-with-lease", "--force-if-includes", "--mirror") {
			c.Tags = AppendUniq(c.Tags, TagForcePush)
		}
		if HasFlag(flags, "-d", "--delete") {
			c.Tags = AppendUniq(c.Tags, TagDeleteBranch)
		}
		for _, p := range pos {
			if strings.HasPrefix(p, "+") {
				c.Tags = AppendUniq(c.Tags, TagForcePush)
			} else if strings.HasPrefix(p, ":") {
				c.Tags = AppendUniq(c.Tags, TagDeleteBranch)
			}
		}
	case "filter-branch", "filter-repo":
		c.Tags = AppendUniq(c.Tags, TagHistoryRewrite)
	}
}

// argvOpts splits an argv's words into flags and positional words.
func argvOpts(args []string) (flags, pos []string) {
	for i, s := range args {
		switch {
		case s == "--":
			return flags, append(pos, args[i+1:]...)
		case strings.HasPrefix(s, "-") && len(s) > 1:
			flags = append(flags, s)
		default:
			pos = append(pos, s)
		}
	}
	return flags, pos
}

func containsWord(ws []string, s string) bool {
	for _, w := range ws {
		if w == s {
			return true
		}
	}
	return false
}

// SkipStr returns ws without its first n strings (nil if it has fewer).
func SkipStr(ws []string, n int) []string {
	if len(ws) < n {
		return nil
	}
	return ws[n:]
}

// resolveIn makes p absolute against dir (~ and $HOME are home).
func resolveIn(dir, home, p string) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = home + p[1:]
	case p == "$HOME" || strings.HasPrefix(p, "$HOME/"):
		p = home + p[5:]
	case p == "${HOME}" || strings.HasPrefix(p, "${HOME}/"):
		p = home + p[7:]
	}
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(dir, p)
}

// findFilters: find's expression selects files by name, time, size...
// (find . -name '*.pyc' -delete deletes some files, not the tree).
func findFilters(args []string) bool {
	for _, s := range args {
		switch strings.TrimPrefix(s, "-") {
		case "name", "iname", "path", "ipath", "wholename", "iwholename", "regex", "iregex", "newer", "mtime",
			"mmin", "atime", "amin", "ctime", "cmin", "size", "empty", "user", "group", "perm", "links", "inum",
			"samefile", "lname", "ilname", "uid", "gid", "nouser", "nogroup", "used", "newermt":
			return true
		}
	}
	return false
}
