package classify

import "strings"

func gitTool(c *call) {
	gitGlobal(c)
	sub, rest, _ := subcommand(c.args, "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--list-cmds", "--attr-source")
	flags, pos := opts(rest)
	force := hasFlag(flags, "-f", "--force")
	why := "git " + sub
	switch sub {
	case "clean", "check-ignore", "ls-files":
		c.NamesOnly()
	}
	switch sub {
	case "", "status", "diff", "log", "show", "blame", "rev-parse", "ls-files", "ls-tree", "cat-file",
		"describe", "shortlog", "grep", "whatchanged", "show-ref", "for-each-ref", "name-rev", "merge-base",
		"rev-list", "count-objects", "var", "check-ignore", "check-attr", "version", "help", "range-diff",
		"annotate", "diff-tree", "diff-index", "diff-files", "cherry", "show-branch", "verify-commit",
		"verify-tag", "fsck", "check-ref-format", "--version", "--help", "-h":
		c.class(Read, why+" only reads")
		if sub == "grep" {
			gitGrepPager(c, rest)
		}
		if f := flagValue(rest, "--output"); f != nil {
			c.class(Write, why+" writes "+f.s)
			c.write(*f)
		}
	case "branch":
		switch {
		case hasFlag(flags, "-D") || hasFlag(flags, "--delete") && force:
			c.class(Destructive, "git branch -D deletes a branch")
		case hasFlag(flags, "-d", "--delete", "-m", "-M", "-c", "-C", "--move", "--copy", "-u", "--set-upstream-to", "--unset-upstream", "--edit-description"):
			c.class(Write, "git branch changes branches")
		case len(pos) > 0 && !hasFlag(flags, "--list", "-l", "--contains", "--merged", "--no-merged", "--points-at"):
			c.class(Write, "git branch creates a branch")
		default:
			c.class(Read, "git branch lists branches")
		}
	case "tag":
		switch {
		case hasFlag(flags, "-d", "--delete"):
			c.class(Destructive, "git tag -d deletes a tag")
		case len(pos) > 0 && !hasFlag(flags, "-l", "--list", "--contains", "--points-at", "-n", "--merged"):
			c.class(Write, "git tag creates a tag")
		default:
			c.class(Read, "git tag lists tags")
		}
	case "remote":
		switch firstPos(rest) {
		case "", "show", "get-url":
			c.class(Read, "git remote lists remotes")
		case "update", "prune":
			c.class(Network, "git remote "+firstPos(rest)+" fetches")
		case "add", "set-url", "rename":
			c.persist("git remote " + firstPos(rest) + " changes where git fetches from and pushes to")
		default:
			c.class(Write, "git remote changes remotes")
		}
	case "config":
		gitConfig(c, rest)
	case "add", "commit", "mv", "apply", "am", "cherry-pick", "merge", "rebase", "revert", "notes",
		"init", "bisect", "update-index", "sparse-checkout", "gc", "repack", "pack-refs", "replace",
		"commit-tree", "hash-object", "write-tree", "read-tree", "mktag", "rerere", "format-patch", "maintenance":
		c.class(Write, why+" changes the repository")
		if sub == "bisect" && firstPos(rest) == "run" {
			_, cmd := leadingCommand(skipN(rest, 1))
			c.exec(cmd)
			c.Keep()
		}
		if x := flagValue(rest, "-x", "--exec"); x != nil && sub == "rebase" {
			c.shell(*x)
			c.Keep()
		}
		if sub == "apply" || sub == "am" {
			if d := flagValue(rest, "--directory"); d != nil {
				c.write(*d)
			}
		}
		if sub == "init" {
			gitNewRepo(c, rest, false)
		}
		if sub == "format-patch" {
			if f := flagValue(rest, "-o", "--output-directory"); f != nil {
				c.write(*f)
			}
		}
	case "rm":
		if hasFlag(flags, "--cached") {
			c.class(Write, "git rm --cached unstages")
			return
		}
		c.class(Destructive, "git rm deletes files")
		c.write(pos...)
	case "switch":
		if force || hasFlag(flags, "--discard-changes") {
			c.class(Destructive, "git switch --force discards changes")
			return
		}
		c.class(Write, "git switch changes branch")
	case "checkout":
		dashdash := false
		for _, w := range rest {
			if w.s == "--" {
				dashdash = true
			}
		}
		switch {
		case force:
			c.class(Destructive, "git checkout --force discards changes")
		case hasFlag(flags, "-b", "-B", "--orphan"):
			c.class(Write, "git checkout -b creates a branch")
		case dashdash || (len(pos) > 0 && (pos[len(pos)-1].s == "." || strings.ContainsAny(pos[len(pos)-1].s, "/*") || len(pos) > 1)):
			c.class(Destructive, "git checkout of paths discards uncommitted changes")
			c.write(pos...)
		default:
			c.class(Write, "git checkout changes branch")
		}
	case "restore":
		if (hasFlag(flags, "--staged", "-S") && !hasFlag(flags, "--worktree", "-W")) || len(pos) == 0 {
			c.class(Write, "git restore --staged unstages")
			return
		}
		c.class(Destructive, "git restore discards uncommitted changes")
		c.write(pos...)
	case "reset":
		if hasFlag(flags, "--hard", "--merge", "--keep") {
			c.class(Destructive, "git reset --hard discards work")
			return
		}
		c.class(Write, "git reset moves HEAD or unstages")
	case "clean":
		if hasFlag(flags, "-n", "--dry-run") {
			c.class(Read, "git clean -n only lists")
			return
		}
		c.class(Destructive, "git clean deletes untracked files")
	case "stash":
		switch firstPos(rest) {
		case "drop", "clear":
			c.class(Destructive, "git stash "+firstPos(rest)+" deletes stashed work")
		case "list", "show":
			c.class(Read, "git stash "+firstPos(rest)+" only reads")
		default:
			c.class(Write, "git stash saves or applies work")
		}
	case "worktree":
		verb := firstPos(rest)
		_, wpos := opts(skipN(rest, 1), "-b", "-B", "--reason")
		switch verb {
		case "list":
			c.class(Read, "git worktree list")
		case "remove", "prune":
			c.class(Destructive, "git worktree "+verb+" deletes a worktree")
			if verb == "remove" {
				c.write(wpos...)
			}
		default:
			c.class(Write, "git worktree changes worktrees")
			switch {
			case verb == "add" && len(wpos) > 0:
				c.write(wpos[0])
			case verb == "move" && len(wpos) > 1:
				c.write(wpos[1])
			}
		}
	case "reflog":
		switch firstPos(rest) {
		case "expire", "delete":
			c.class(Destructive, "git reflog "+firstPos(rest)+" drops history")
		default:
			c.class(Read, "git reflog only reads")
		}
	case "filter-branch", "filter-repo", "prune":
		c.class(Destructive, why+" rewrites or drops history")
	case "update-ref":
		if hasFlag(flags, "-d") {
			c.class(Destructive, "git update-ref -d deletes a ref")
			return
		}
		c.class(Write, "git update-ref moves a ref")
	case "push":
		c.class(Network, "git push sends to a remote")
		if force || hasFlag(flags, "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "-d", "--prune") {
			c.class(Destructive, "git push --force overwrites the remote's history")
		}
		for _, w := range pos {
			if strings.HasPrefix(w.s, "+") || strings.HasPrefix(w.s, ":") {
				c.class(Destructive, "git push of "+w.s+" overwrites or deletes a remote ref")
			}
		}
	case "clone", "fetch", "pull", "ls-remote", "send-email", "request-pull", "archive":
		if sub == "clone" {
			gitNewRepo(c, rest, true)
		}
		if sub == "archive" && flagValue(rest, "--remote") == nil {
			c.class(Write, "git archive writes an archive")
			return
		}
		c.class(Network, why+" talks to a remote")
	case "submodule":
		switch firstPos(rest) {
		case "foreach":
			_, cmd := leadingCommand(skipN(rest, 1))
			c.shell(joinWords(cmd))
		case "", "status", "summary":
			c.class(Read, "git submodule lists")
		case "init", "deinit", "set-url", "set-branch", "absorbgitdirs":
			c.class(Write, "git submodule changes configuration")
		default:
			c.class(Network, "git submodule "+firstPos(rest)+" fetches")
		}
	case "lfs":
		switch firstPos(rest) {
		case "pull", "fetch", "push", "clone":
			c.class(Network, "git lfs transfers objects")
		case "ls-files", "status", "env", "version":
			c.class(Read, "git lfs lists")
		default:
			c.class(Write, "git lfs changes configuration")
		}
	case "credential", "credential-store", "credential-cache":
		c.class(Secret, "git credential reads stored credentials")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "git credentials")
	default:
		c.class(Unknown, "git "+sub+" is not a command the analyser knows (an alias?)")
	}
}

func gitConfig(c *call, rest []word) {
	flags, pos := opts(rest, "-f", "--file", "--blob", "--type", "--default", "--comment", "--value")
	verb := ""
	if len(pos) > 0 {
		switch pos[0].s {
		case "set", "get", "list", "unset", "rename-section", "remove-section", "edit":
			verb, pos = pos[0].s, pos[1:] // git 2.46's subcommands
		}
	}
	key := ""
	if len(pos) > 0 {
		key = strings.ToLower(pos[0].s)
	}
	setting := verb == "set" || verb == "" && len(pos) >= 2 && !hasFlag(flags, "--get", "--get-all", "--get-regexp", "--unset", "--unset-all",
		"--list", "-l", "--get-urlmatch", "--rename-section", "--remove-section", "--show-origin", "--get-color", "--get-colorbool")
	if setting && len(pos) >= 2 {
		if persistKey(pos[0].s) {
			c.persist("git config " + pos[0].s + " changes what later git commands reach or run")
		}
		gitSetting(c, pos[0].s, pos[1])
		if f := flagValue(rest, "-f", "--file"); f != nil {
			c.write(*f)
		}
	}
	switch verb {
	case "set", "unset", "rename-section", "remove-section", "edit":
		c.class(Write, "git config "+verb+" changes configuration")
	case "get", "list":
		c.class(Read, "git config reads configuration")
	}
	if strings.Contains(key, "credential") || strings.Contains(key, "token") || strings.Contains(key, "password") || strings.HasSuffix(key, ".extraheader") {
		c.class(Secret, "git config "+key+" touches credentials")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "git config "+key)
	}
	switch {
	case hasFlag(flags, "--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit"):
		c.class(Write, "git config changes configuration")
	case hasFlag(flags, "--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--get-urlmatch"):
		c.class(Read, "git config reads configuration")
	case len(pos) >= 2:
		c.class(Write, "git config sets "+pos[0].s)
	default:
		c.class(Read, "git config reads configuration")
	}
}
